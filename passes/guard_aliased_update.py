"""Keep XLA's CPU compiler from writing a `dynamic_update_slice` over the values its
update still has to read.

XLA updates a fused `dynamic_update_slice` in place: it writes the update's elements into
the operand's buffer while it computes them. That is only sound when the update reads
the operand at no other position, and XLA's check misses one case (jaxlib 0.10.2, CPU,
found by `tests/fuzz`; `jax.jit` returns the same wrong numbers): when a reshape,
transpose or broadcast that only inserts, drops or moves size-1 dimensions becomes a
bitcast next to the update, an update that reads the operand through a static `slice`
(or a `reverse` of one) reads elements the loop has already overwritten. For x = [0, 1, 2,
3, 4] as a [5, 1] array, `dynamic_update_slice(x, x[:3], 2)` transposed gives
[0, 1, 0, 1, 0] instead of [0, 1, 0, 1, 2]. Updates that read the operand only through
`dynamic_slice` (`b.at[i].set(b[i - 1])`, the usual loop) come out right and are left alone.

What this pass does: a `dynamic_update_slice` whose update reads the operand's storage
(the operand, or a value it is a reshape/transpose/broadcast of, is in the update's cone,
read by an op other than `dynamic_slice`) in a region that holds such a bitcast-like op
becomes a form with no in-place write to alias:

    c_k     = clamp(0, start_k, D_k - n_k)                  (the clamp the op does itself)
    shifted = dynamic_slice(pad(update, D - n on each side), D - n - c)   (update at c)
    result  = select(c <= iota < c + n on every dimension, shifted, operand)

It is the same function of the same values: every element of the result is the update's
element or the operand's, chosen by the clamped window, as the op defines it. Every other
op, and every update not matching the rule, is left exactly as it was.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from purejit.ir import Function, Op, Value, get_op

from purejit.passes.base import PassResult

_VIEWS = ("reshape", "transpose", "broadcast_in_dim")


def _new(name: str, operands, attrs: dict, loc, ops: list) -> Value:
    op = Op.inferred(name, operands, attrs, loc=loc)
    ops.append(op)
    return op.results[0]


def _bitcast_like(op: Op) -> bool:
    """Whether `op` is a reshape/transpose/broadcast that only inserts, drops or moves
    size-1 dimensions (XLA makes it a bitcast)."""
    if op.name not in _VIEWS:
        return False
    a, b = op.operands[0].type, op.results[0].type
    if a.size != b.size:
        return False
    if op.name == "transpose":  # the dimensions larger than 1 keep their order
        moved = [p for p in op.attrs["permutation"] if a.shape[p] != 1]
        return moved == sorted(moved)
    return [d for d in a.shape if d != 1] == [d for d in b.shape if d != 1]


def _reads_operand_storage(dus: Op, producer: dict) -> bool:
    """Whether the update's cone reads the operand's storage other than by `dynamic_slice`."""

    def root(v: Value) -> Value:
        while v in producer and producer[v].name in _VIEWS:
            v = producer[v].operands[0]
        return v

    target = root(dus.operands[0])
    seen, stack = set(), [dus.operands[1]]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        op = producer.get(v)
        if op is None:
            continue
        for w in op.operands:
            if root(w) is target and op.name != "dynamic_slice" and op.name not in _VIEWS:
                return True
            stack.append(w)
    return root(dus.operands[1]) is target


def _rewritten(dus: Op) -> list[Op]:
    """The ops computing `dus`'s result without an in-place write (module docstring)."""
    x, u, starts = dus.operands[0], dus.operands[1], dus.operands[2:]
    loc, ops = dus.loc, []
    shape, sizes = x.type.shape, u.type.shape
    idx = np.int64  # every start type converts to it without loss (uint64 after a clamp)

    def const(value, dtype=idx):
        return _new("constant", [], {"value": np.asarray(value, dtype)}, loc, ops)

    zero = const(0, x.type.dtype)
    lo = [d - n for d, n in zip(shape, sizes)]
    padded = _new(
        "pad",
        [u, zero],
        {"edge_padding_low": tuple(lo), "edge_padding_high": tuple(lo),
         "interior_padding": (0,) * len(shape)},
        loc, ops,
    )  # fmt: skip
    offsets, mask = [], None
    for k, (d, n, s) in enumerate(zip(shape, sizes, starts)):
        if n == d:  # the start clamps to 0: the whole dimension is the update's
            offsets.append(const(0))
            continue
        if s.type.dtype == np.uint64:
            s = _new("minimum", [s, const(d - n, np.uint64)], {}, loc, ops)
        if s.type.dtype != idx:
            s = _new("convert", [s], {"dtype": idx}, loc, ops)
        c = _new("clamp", [const(0), s, const(d - n)], {}, loc, ops)
        offsets.append(_new("subtract", [const(d - n), c], {}, loc, ops))
        iota = _new("iota", [], {"shape": shape, "dtype": idx, "dimension": k}, loc, ops)
        cb = _new("broadcast_in_dim", [c], {"shape": shape, "broadcast_dimensions": ()}, loc, ops)
        end = _new("add", [c, const(n)], {}, loc, ops)
        eb = _new("broadcast_in_dim", [end], {"shape": shape, "broadcast_dimensions": ()}, loc, ops)
        inside = _new(
            "and",
            [
                _new("compare", [iota, cb], {"comparison_direction": "GE"}, loc, ops),
                _new("compare", [iota, eb], {"comparison_direction": "LT"}, loc, ops),
            ],
            {}, loc, ops,
        )  # fmt: skip
        mask = inside if mask is None else _new("and", [mask, inside], {}, loc, ops)
    shifted = _new("dynamic_slice", [padded, *offsets], {"slice_sizes": shape}, loc, ops)
    get_op("select").infer([mask.type, shifted.type, x.type], {}, [])
    ops.append(Op("select", [mask, shifted, x], {}, list(dus.results), (), loc))
    return ops


@dataclass(frozen=True)
class GuardAliasedUpdate:
    """Rewrite the `dynamic_update_slice`s XLA would update in place over values their
    update still reads (see the module docstring)."""

    name: str = "guard_aliased_update"

    def __call__(self, fn: Function) -> PassResult:
        count = [0]
        new = self._region(fn, count)
        return PassResult(new, new is not fn, {"rewritten": count[0]} if count[0] else {})

    def _region(self, fn: Function, count: list) -> Function:
        ops, changed = [], False
        for op in fn.ops:
            if op.regions:
                new = op.rebuilt(op.operands, [self._region(r, count) for r in op.regions])
                changed |= new is not op
                op = new
            ops.append(op)
        if not any(_bitcast_like(op) for op in ops):
            return Function(fn.name, fn.params, ops, fn.results) if changed else fn
        producer = {r: op for op in ops for r in op.results}
        out = []
        for op in ops:
            if (
                op.name == "dynamic_update_slice"
                and op.operands[1].type.shape != op.operands[0].type.shape
                and _reads_operand_storage(op, producer)
            ):
                out += _rewritten(op)
                count[0] += 1
                changed = True
            else:
                out.append(op)
        return Function(fn.name, fn.params, out, fn.results) if changed else fn
