"""Split a projection whose output is only cut apart for fused attention into one product per
part, so the fused op reads q, k and v as written by their own matmuls.

    qkv = x @ w; q, k, v = qkv[..., 0, :, :], ...  ->  q = x @ w[:, 0:D]; k = x @ w[:, D:2D]; ...

Why: a fused attention kernel takes q, k and v as dense arrays, so slices of one projection's
output are copies (each layer reads and writes the activations once more in the forward, and
the backward concatenates dq, dk and dv before the weight's products). A slice along the
weight's output columns equals the product with those columns: every element is the same sum
over the same contraction, so the program's meaning is unchanged (the matmul may accumulate in
another order, as XLA's kernels may for any shape).

Each product reads x and its columns through an `optimization_barrier` of its own (the
identity, free at run time): XLA's dot merger would otherwise concatenate the columns back into
one product and slice its output again (measured on an H200).

Proved for each split, else the program is left as it was:
- the product is a `dot_general(x, w)` with no batch dimensions and w of rank 2 contracting
  one dimension, so w's other dimension is the output's last;
- the product's only user is a reshape that keeps the leading dimensions and splits the last
  into (G, M...), or there is no reshape (G is the last dimension, M = 1);
- every user of that value is a slice with stride 1 that is whole on every dimension but the
  G axis, so the product dies once its slices are replaced;
- some slice reaches a q, k or v operand of a `dot_product_attention` op (through reshapes and
  transposes): elsewhere one wide product and its slices are the better program;
- each part's product does at least `MIN_PART_FLOPS` (measured: below it the smaller
  matmuls cost more than the copies they save).
Runs where fused attention runs (`FuseAttention` calls it on every function it visits).
"""

from __future__ import annotations

import numpy as np

from purejit.ir import Function, Op, Value

_MOVES = ("reshape", "transpose")


# The smallest product a part may be (2·M·N·K flops). On an H200 (bench.tools.step_profile,
# bench.train's transformer) the split made the step 2.4% faster with 17.2 GFLOP parts
# (M = 8192 rows, 1024 x 1024 columns) and 12% slower with 4.3 GFLOP parts (M = 2048): the
# small products ran at 55% of the merged product's rate and outweighed the copies saved.
MIN_PART_FLOPS = 2.0**34


def split_projections(fn: Function, min_flops: float = MIN_PART_FLOPS) -> tuple[Function, list]:
    """`fn` with each proved projection split, and one report entry per split; a product
    is split only where each part does at least `min_flops`."""
    defs: dict[Value, Op] = {}
    users: dict[Value, list] = {}
    for op in fn.ops:
        for r in op.results:
            defs[r] = op
        for v in op.operands:
            users.setdefault(v, []).append(op)
    for v in fn.results:
        users.setdefault(v, []).append(None)
    feeding = [
        s
        for op in fn.ops
        if op.name == "dot_product_attention"
        for s in [_slice_behind(defs, v) for v in op.operands[:3]]
        if s is not None
    ]
    plans: dict[int, tuple] = {}  # id(slice op) -> (dot op, split axis, M)
    report = []
    for s in feeding:
        if id(s) in plans:
            continue
        found = _proved(defs, users, s.operands[0])
        if found is None:
            continue
        dot, cut, axis, m = found
        if _part_flops(dot, users[cut], axis, m) < min_flops:
            continue
        for u in users[cut]:
            plans[id(u)] = (dot, axis, m)
        report.append({
            "split": f"{_shape(dot.results[0])} product into {len(users[cut])} products",
            "loc": dot.loc or "",
        })  # fmt: skip
    if not plans:
        return fn, []
    ops: list[Op] = []
    subst: dict[Value, Value] = {}
    for op in fn.ops:
        plan = plans.get(id(op))
        if plan is None:
            ops.append(op)
            continue
        new, value = _product_of_slice(op, *plan)
        ops += new
        subst[op.results[0]] = value
    ops = [_substituted(op, subst) for op in ops]
    results = [subst.get(r, r) for r in fn.results]
    # the split products and their reshapes are dead now; the caller's DCE removes them
    return Function(fn.name, fn.params, ops, results), report


def _shape(v: Value) -> str:
    return "x".join(map(str, v.type.shape))


def _slice_behind(defs: dict, v: Value) -> Op | None:
    """The slice `v` is moved from by reshapes and transposes, or None."""
    op = defs.get(v)
    while op is not None and op.name in _MOVES:
        op = defs.get(op.operands[0])
    return op if op is not None and op.name == "slice" else None


def _proved(defs: dict, users: dict, cut: Value):
    """(dot, the value the slices cut, its G axis, M) when the split is proved, else None."""
    op = defs.get(cut)
    reshape = None
    if op is not None and op.name == "reshape":
        reshape, op = op, defs.get(op.operands[0])
    if op is None or op.name != "dot_general" or not _plain_product(op):
        return None
    out = op.results[0].type.shape
    if reshape is None:
        axis, m = len(out) - 1, 1
    else:
        if users.get(op.results[0]) != [reshape]:
            return None
        shape = tuple(reshape.attrs["shape"])
        lead = tuple(out[:-1])
        if shape[: len(lead)] != lead or len(shape) <= len(lead):
            return None
        if int(np.prod(shape[len(lead) :], dtype=np.int64)) != out[-1]:
            return None
        axis, m = len(lead), int(np.prod(shape[len(lead) + 1 :], dtype=np.int64))
    slices = users.get(cut, [])
    if not slices or not all(u is not None and _cuts_only(u, axis) for u in slices):
        return None
    return op, cut, axis, m


def _part_flops(dot: Op, slices: list, axis: int, m: int) -> float:
    """The flops of the smallest part's product (2 · rows · contraction · its columns)."""
    x, w = dot.operands
    k = w.type.shape[dot.attrs["rhs_contracting_dimensions"][0]]
    rows = np.prod(dot.results[0].type.shape[:-1], dtype=np.float64)
    cols = min((s.attrs["limit_indices"][axis] - s.attrs["start_indices"][axis]) * m
               for s in slices)  # fmt: skip
    return float(2.0 * rows * k * cols)


def _plain_product(dot: Op) -> bool:
    a = dot.attrs
    if a.get("lhs_batching_dimensions") or a.get("rhs_batching_dimensions"):
        return False
    w = dot.operands[1]
    return w.type.rank == 2 and len(a.get("rhs_contracting_dimensions", ())) == 1


def _cuts_only(op: Op, axis: int) -> bool:
    """Whether `op` is a stride-1 slice, whole on every dimension but `axis`."""
    if op.name != "slice":
        return False
    shape = op.operands[0].type.shape
    a = op.attrs
    for d, (lo, hi, st) in enumerate(zip(a["start_indices"], a["limit_indices"], a["strides"])):
        if st != 1 or (d != axis and (lo != 0 or hi != shape[d])):
            return False
    return True


def _product_of_slice(s: Op, dot: Op, axis: int, m: int) -> tuple[list, Value]:
    """The ops computing slice `s` as x times w's matching columns, and its value."""
    x, w = dot.operands
    free = 1 - dot.attrs["rhs_contracting_dimensions"][0]
    lo, hi = s.attrs["start_indices"][axis] * m, s.attrs["limit_indices"][axis] * m
    start, limit = [0, 0], list(w.type.shape)
    start[free], limit[free] = lo, hi
    loc = s.loc or dot.loc
    cols = Op.inferred("slice", [w], {"start_indices": tuple(start), "limit_indices": tuple(limit),
                               "strides": (1, 1)}, loc=loc)  # fmt: skip
    # each product reads x and its columns through a barrier of its own: XLA's dot merger
    # would otherwise concatenate the column slices back and cut the one product again
    bar = Op.inferred("optimization_barrier", [x, cols.results[0]], {}, loc=loc)
    prod = Op.inferred("dot_general", list(bar.results), dict(dot.attrs), loc=loc)
    out = [cols, bar, prod]
    value = prod.results[0]
    if tuple(value.type.shape) != tuple(s.results[0].type.shape):
        rs = Op.inferred("reshape", [value], {"shape": tuple(s.results[0].type.shape)}, loc=loc)
        out.append(rs)
        value = rs.results[0]
    return out, value


def _substituted(op: Op, subst: dict) -> Op:
    if not subst:
        return op
    operands = [subst.get(v, v) for v in op.operands]
    return op.rebuilt(operands, op.regions)
