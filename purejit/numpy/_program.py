"""Run a NumPy-level function as one compiled program outside jit.

Eager mode runs op by op; jax.numpy runs some functions (linspace among them) as one jitted
program, whose fused arithmetic XLA may round differently (contracting a*b + c into one fused
multiply-add). Functions that must match jax.numpy bit for bit run through `as_program`:
outside jit the function is traced once per signature into an IR function and compiled whole;
under a trace it is simply called.
"""

from __future__ import annotations

from typing import Callable

from purejit.runtime.array import as_array
from purejit.runtime.eager import EvalTrace
from purejit.runtime.eager_fn import program
from purejit.tracing import current_trace


def as_program(name: str, fn: Callable, args, static: tuple = ()) -> list:
    """`fn(*args)` (a flat list of arrays), compiled as one program when run eagerly.

    The program is an eager program like those of `purejit.numpy`'s functions outside jit
    (`purejit.runtime.eager_fn`): one least-recently-used table, the eager compile path.

    Args:
        name: the program's name (and part of the cache key).
        fn: a function of the arrays in `args` returning a list of arrays; it may close over
            the hashable `static` values only.
        args: array-likes (Python scalars keep their weak type).
        static: everything else `fn` depends on, for the cache key.
    Returns:
        the list of results.
    """
    if not isinstance(current_trace(), EvalTrace):
        return list(fn(*args))
    arrays = [as_array(a) for a in args]
    avals = tuple([a.aval for a in arrays])
    prog = program(("as_program", name, static, avals), lambda *t: list(fn(*t)), avals, name)
    if prog is None:  # it closed over a traced value: run it op by op
        return list(fn(*arrays))
    return prog.run(arrays)
