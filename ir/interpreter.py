"""The reference interpreter: runs any IR function with NumPy, op by op.

It is the oracle for pass and lowering tests: a pass keeps meaning iff the interpreter gives
the same numbers before and after it.
"""

from __future__ import annotations

import numpy as np

from purejit.ir.core import Function
from purejit.ir.registry import get_op


class InterpretError(RuntimeError):
    pass


def interpret(fn: Function, *args) -> list[np.ndarray]:
    """Run `fn` on NumPy arrays; returns the list of results.

    Args:
        fn: a verified function.
        *args: one array per parameter, with the parameter's shape and dtype.
    Returns:
        The results as NumPy arrays with exactly the declared shapes and dtypes.
    """
    if len(args) != len(fn.params):
        raise InterpretError(f"@{fn.name} takes {len(fn.params)} arguments, got {len(args)}")
    env = {}
    for p, a in zip(fn.params, args):
        a = np.asarray(a)
        if a.shape != p.type.shape or a.dtype != p.type.dtype:
            raise InterpretError(f"@{fn.name}: argument {a.dtype}{list(a.shape)} for {p.type}")
        env[p] = a
    with np.errstate(all="ignore"):
        for op in fn.ops:
            ins = [env[v] for v in op.operands]
            outs = get_op(op.name).reference(ins, op.attrs, op.regions, interpret)
            if len(outs) != len(op.results):
                raise InterpretError(f"{op.name}: reference gave {len(outs)} results")
            for r, o in zip(op.results, outs):
                o = np.asarray(o)
                if o.shape != r.type.shape:
                    raise InterpretError(f"{op.name}: reference shape {o.shape} for {r.type}")
                env[r] = o.astype(r.type.dtype, copy=False)
    return [env[v] for v in fn.results]
