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

__version__ = "0.1.0"

__all__ = [
    "Array",
    "Compiled",
    "ConcretizationTypeError",
    "Lowered",
    "PurejitTypeError",
    "TracerArrayConversionError",
    "UnexpectedTracerError",
    "config",
    "disable_jit",
    "jit",
    "lax",
    "nn",
    "numpy",
    "tree_util",
]
