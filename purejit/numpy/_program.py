"""Run a NumPy-level function as one compiled program outside jit.

Eager mode runs op by op; jax.numpy runs some functions (linspace among them) as one jitted
program, whose fused arithmetic XLA may round differently (contracting a*b + c into one fused
multiply-add). Functions that must match jax.numpy bit for bit run through `as_program`:
outside jit the function is traced once per signature into an IR function and compiled whole;
under a trace it is simply called.
"""

from __future__ import annotations

from typing import Callable

from purejit.backend import pjrt, stablehlo
from purejit.runtime.array import Array, as_array
from purejit.runtime.eager import EvalTrace
from purejit.tracing import current_trace, trace_to_function

_CACHE: dict = {}


def as_program(name: str, fn: Callable, args, static: tuple = ()) -> list:
    """`fn(*args)` (a flat list of arrays), compiled as one program when run eagerly.

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
    key = (name, static, tuple(a.aval for a in arrays))
    entry = _CACHE.get(key)
    if entry is None:
        traced = trace_to_function(lambda *t: list(fn(*t)), [a.aval for a in arrays], name=name)
        f = traced.fn
        exe = pjrt.compile(stablehlo.emit(f), f.param_types, f.result_types)
        entry = _CACHE[key] = (exe, traced.out_avals)
    exe, out_avals = entry
    outs = exe.execute_unchecked([a.buffer for a in arrays])
    return [Array.from_buffer(o, av) for o, av in zip(outs, out_avals)]
