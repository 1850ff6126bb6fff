"""Constant folding with the registry's NumPy reference rules.

Guarantees: a pure op whose operands are all `constant` ops, none of them and none of its
results larger than `max_elements`, is replaced by `constant` ops holding what its reference
rule computes (the same numbers the interpreter gives). A result whose elements are all equal
becomes `broadcast_in_dim(scalar constant)` instead of a full array, so folding never bloats
the program. Works inside regions.
Never touches: ops with effects or without `pure`, ops without operands (`iota`, `constant`),
`approximate` ops (exp, log, erf, ...: XLA's polynomials, not NumPy's bits, must compute them
so a program's numbers do not depend on which inputs are constants), floating-point
`accumulates` ops (dots, convolutions, reductions, scatter, fft, the linear-algebra ops:
a jitted sum of 1000 float32 constants and a 16x16 matmul of constants both differed from
JAX's bits when NumPy folded them), ops with such an op in a region,
a data-movement op of a scalar (`broadcast_in_dim(c)` is already the folded form), ops whose
reference rule raises (they stay for XLA).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from purejit.ir import Function, Op, TensorType, Value, interpret
from purejit.passes.cse import mergeable
from purejit.passes.base import PassResult


def constant_value(op: Op | None) -> np.ndarray | None:
    """The array a `constant`-trait op produces, else None."""
    if op is not None and op.has_trait("constant"):
        return np.asarray(op.attrs["value"])
    return None


def splat_scalar(a: np.ndarray) -> np.ndarray | None:
    """The 0-d array every element of `a` equals (bitwise for floats), or None."""
    if a.size == 0:
        return None
    if a.size == 1:  # (most constants are scalars) its one element
        return a.reshape(()).copy()
    flat = np.ascontiguousarray(a).reshape(-1)
    raw = flat.view(np.uint8).reshape(a.size, -1)
    same = bool((raw == raw[:1]).all())
    return flat[:1].reshape(()).copy() if same else None


def splat_ops(value: np.ndarray, type: TensorType, results: list[Value], loc) -> list[Op]:
    """`broadcast_in_dim(constant scalar)` defining `results[0]` of `type`."""
    scalar = Value(TensorType((), type.dtype))
    return [
        Op("constant", [], {"value": np.array(value, type.dtype)}, [scalar], (), loc),
        Op(
            "broadcast_in_dim",
            [scalar],
            {"shape": tuple(type.shape), "broadcast_dimensions": ()},
            results,
            (),
            loc,
        ),
    ]


def _inexact(op: Op) -> bool:
    return any(np.issubdtype(v.type.dtype, np.inexact) for v in (*op.operands, *op.results))


def _order_dependent(op: Op) -> bool:
    """Whether NumPy may round `op` (or an op of its regions) otherwise than XLA."""
    if op.has_trait("approximate"):
        return True  # XLA's exp/log/erf... differ from NumPy's in the last bits
    if op.has_trait("accumulates") and _inexact(op):
        return True  # NumPy's pairwise sums, BLAS and LAPACK round otherwise than XLA
    return any(_order_dependent(inner) for r in op.regions for inner in r.ops)


def _foldable(op: Op, consts: dict, limit: int) -> bool:
    # the cheapest test first: most ops read a value that is not a constant
    if not op.operands or any(v not in consts for v in op.operands):
        return False
    if not mergeable(op) or op.has_trait("constant"):
        return False
    if _order_dependent(op):
        return False
    if op.has_trait("shape_only") and len(op.operands) == 1 and op.operands[0].type.rank == 0:
        return False  # broadcast of a scalar constant: already canonical
    sizes = [v.type.size for v in op.operands] + [r.type.size for r in op.results]
    return max(sizes) <= limit


def _fold(fn: Function, limit: int) -> tuple[Function, int]:
    consts: dict[Value, np.ndarray] = {}
    ops: list[Op] = []
    folded = 0
    for op in fn.ops:
        if op.regions:
            regions = []
            for r in op.regions:
                new_r, n = _fold(r, limit)
                folded += n
                regions.append(new_r if n else r)
            op = op.rebuilt(op.operands, regions)
        value = constant_value(op)
        if value is not None:
            consts[op.results[0]] = value
        elif _foldable(op, consts, limit):
            try:
                outs = op.opdef.reference(
                    [consts[v] for v in op.operands], op.attrs, op.regions, interpret
                )
                outs = [np.asarray(o).astype(r.type.dtype) for o, r in zip(outs, op.results)]
            except Exception:
                # no reference for these inputs, or a pure callback that raises (it may sit in
                # a branch that never runs, as Equinox's error_if): leave the op to run time
                outs = None
            if outs is not None and all(o.shape == r.type.shape for o, r in zip(outs, op.results)):
                folded += 1
                for o, r in zip(outs, op.results):
                    s = splat_scalar(o) if o.size > 1 else None
                    if s is not None:
                        ops += splat_ops(s, r.type, [r], op.loc)
                    else:
                        ops.append(Op("constant", [], {"value": o}, [r], (), op.loc))
                        consts[r] = o
                continue
        ops.append(op)
    return Function(fn.name, fn.params, ops, fn.results), folded


@dataclass(frozen=True)
class ConstantFold:
    """Evaluate ops on small constants at compile time (see the module docstring).

    Attributes:
        max_elements: the largest operand or result (in elements) that is folded.
    """

    name: str = "fold"
    max_elements: int = 1024

    def __call__(self, fn: Function) -> PassResult:
        new, folded = _fold(fn, self.max_elements)
        return PassResult(new, folded > 0, {"folded_ops": folded})
