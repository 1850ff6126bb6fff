"""`purejit.stages` (JAX's `jax.stages`): the ahead-of-time stages of a jitted function.

traced = purejit.jit(f).trace(x)      # Traced: the program's IR
lowered = traced.lower()              # Lowered: optimised IR and StableHLO
compiled = lowered.compile()          # Compiled: the XLA executable
"""

from purejit.api import Jitted as Wrapped
from purejit.compiler import Compiled, Lowered
from purejit.compiler.lower import ArgInfo
from purejit.compiler.options import CompilerOptions
from purejit.compiler.stages import Traced

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
