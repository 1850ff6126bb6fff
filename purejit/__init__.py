"""purejit: a JAX-style functional compiler with its own tracing, IR and passes.

import purejit, purejit.numpy as jnp

@purejit.jit
def f(x, w):
    return purejit.nn.relu(x @ w).sum()
"""

from purejit import core as _core
from purejit.config import config
from purejit.eager import eval_trace as _eval_trace

_core._stack.append(_eval_trace)

from purejit import tree_util  # noqa: E402
from purejit.api import Compiled, Lowered, disable_jit, jit  # noqa: E402
from purejit.array import Array  # noqa: E402
from purejit.errors import (  # noqa: E402
    ConcretizationTypeError,
    PurejitTypeError,
    TracerArrayConversionError,
    UnexpectedTracerError,
)
from purejit import numpy, lax, nn  # noqa: E402
from purejit import sharding  # noqa: E402
from purejit.sharding import device_put  # noqa: E402
from purejit.shard_map import shard_map  # noqa: E402
from purejit.backend.pjrt import devices  # noqa: E402
from purejit.recompile import cache_stats  # noqa: E402
from purejit.export import Exported, deserialize, export  # noqa: E402
from purejit.explain import explain  # noqa: E402  (shadows the module name, as export)

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
    "shard_map",
    "sharding",
    "tree_util",
]
