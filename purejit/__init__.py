"""purejit: a JAX-style functional compiler with its own tracing, IR and passes.

import purejit, purejit.numpy as jnp

@purejit.jit
def f(x, w):
    return purejit.nn.relu(x @ w).sum()
"""

from purejit.config import config
from purejit import tree_util
from purejit.api import Compiled, Lowered, disable_jit, jit
from purejit.runtime import Array
from purejit.errors import (
    ConcretizationTypeError,
    PurejitTypeError,
    TracerArrayConversionError,
    UnexpectedTracerError,
)
from purejit import numpy, lax, nn
from purejit import random
from purejit import sharding
from purejit.sharding import device_put
from purejit.shard_map import shard_map
from purejit.backend.pjrt import devices
from purejit.compiler.stats import cache_stats
from purejit.export import Exported, deserialize, export
from purejit.api import explain

__version__ = "0.1.0"

__all__ = [
    "Array",
    "Compiled",
    "ConcretizationTypeError",
    "Lowered",
    "PurejitTypeError",
    "TracerArrayConversionError",
    "UnexpectedTracerError",
    "cache_stats",
    "config",
    "deserialize",
    "export",
    "Exported",
    "explain",
    "device_put",
    "devices",
    "disable_jit",
    "jit",
    "lax",
    "nn",
    "numpy",
    "random",
    "shard_map",
    "sharding",
    "tree_util",
]
