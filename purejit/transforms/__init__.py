"""Program transformations (autodiff, vmap) as interpreters of purejit's IR.

A transformation traces the user's function into an IR function at the current level (a
nested `JitTrace`), then walks that function op by op, applying a rule per op and binding
the ops the rule produces into whatever trace is current: the eager trace, a jit trace, or
another transformation's trace. So `jit(grad(f))` is one IR function that the passes see
whole, and nested transformations never confuse their levels: each works on a program the
level below already made concrete.

Rules live one file per op family, mirroring `ir/ops/<family>.py`; a completeness test lists
every registered op without one.
"""

from purejit.transforms._ir_eval import ClosedFunction, eval_function, trace_closed

__all__ = ["ClosedFunction", "eval_function", "trace_closed"]
