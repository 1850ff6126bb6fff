"""The reference interpreter: runs any IR function with NumPy, op by op.

It is the oracle for pass and lowering tests: a pass keeps meaning iff the interpreter gives
the same numbers before and after it. Its arithmetic is IEEE (subnormals are kept, where
XLA's CPU backend flushes them to zero); each op's reference follows XLA's semantics.
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
            try:
                ins = [env[v] for v in op.operands]
            except KeyError:
                raise InterpretError(f"@{fn.name}: {op.name} uses an undefined value") from None
            outs = get_op(op.name).reference(ins, op.attrs, op.regions, interpret)
            if len(outs) != len(op.results):
                raise InterpretError(f"{op.name}: reference gave {len(outs)} results")
            for r, o in zip(op.results, outs):
                o = np.asarray(o)
                if o.shape != r.type.shape:
                    raise InterpretError(f"{op.name}: reference shape {o.shape} for {r.type}")
                env[r] = o.astype(r.type.dtype, copy=False)
    return [env[v] for v in fn.results]


def _vectorisable(fn: Function) -> bool:
    for op in fn.ops:
        if op.regions:
            return False
        opdef = get_op(op.name)
        scalar_constant = "constant" in opdef.traits and all(r.type.rank == 0 for r in op.results)
        if "elementwise" not in opdef.traits and not scalar_constant:
            return False
    return True


def run_batched(fn: Function, *arrays) -> list[np.ndarray]:
    """Run a region whose parameters are scalars on arrays of one batch shape.

    Equivalent to calling `interpret(fn, ...)` at every batch position and stacking the
    results. Regions made of elementwise ops (and scalar constants) run vectorised, in one
    NumPy call per op; any other region runs position by position.

    Args:
        fn: a region whose parameters and results all have shape ().
        *arrays: one array per parameter, all with the same (batch) shape and the
            parameter's dtype.
    Returns:
        One array of the batch shape per region result.
    """
    if len(arrays) != len(fn.params):
        raise InterpretError(f"@{fn.name} takes {len(fn.params)} arguments, got {len(arrays)}")
    arrays = [np.asarray(a) for a in arrays]
    batch = arrays[0].shape if arrays else ()
    for p, a in zip(fn.params, arrays):
        if p.type.shape != () or a.shape != batch or a.dtype != p.type.dtype:
            got = f"{a.dtype}{list(a.shape)}"
            raise InterpretError(f"@{fn.name}: batched argument {got} for {p.type}")
    if _vectorisable(fn):
        env = dict(zip(fn.params, arrays))
        with np.errstate(all="ignore"):
            for op in fn.ops:
                ins = [env[v] for v in op.operands]
                outs = get_op(op.name).reference(ins, op.attrs, [], interpret)
                for r, o in zip(op.results, outs):
                    env[r] = np.asarray(o).astype(r.type.dtype, copy=False)
        return [np.broadcast_to(env[v], batch).copy() for v in fn.results]
    outs = [np.empty(batch, v.type.dtype) for v in fn.results]
    for pos in np.ndindex(*batch):
        for o, r in zip(outs, interpret(fn, *[a[pos] for a in arrays])):
            o[pos] = r
    return outs
