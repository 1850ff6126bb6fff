"""The jit driver: call signatures, `lower()` (trace -> passes -> plans -> emit), `Lowered`
and `Compiled`, compiler options, the persistent cache, cache statistics, donation and
shape buckets. It sits above tracing, the runtime, the passes and the backend, and below
the user API (`purejit.jit`)."""

from purejit.compiler.compiled import Compiled
from purejit.compiler.lower import JitConfig, Lowered, lower
from purejit.compiler.signature import ArgSpec, CallSignature
from purejit.compiler.stats import CacheStats, RecompilationError, RecompilationWarning
from purejit.compiler.cache import compile_eager as _compile_eager
from purejit.runtime import eval_trace as _eval_trace

# eager primitives compile through the persistent cache too (written only when slow)
_eval_trace.compile_program = _compile_eager

__all__ = [
    "ArgSpec",
    "CacheStats",
    "CallSignature",
    "Compiled",
    "JitConfig",
    "Lowered",
    "RecompilationError",
    "RecompilationWarning",
    "lower",
]
