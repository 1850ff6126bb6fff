"""The rings that `collective_matmul` emits, as loops (default) or unrolled.

A ring step multiplies the block held now while the next transfer (collective_permute to the
next device of the replica group) is in flight. As a `while` loop, one step's buffers are
live at a time and the program does not grow with the number of devices; unrolled, XLA's
scheduler sees every step at once (more freedom, more live buffers).

Index arithmetic is in s32: `p` is the device's position in its replica group (looked up from
`partition_id` in a constant table), `k` the step.
"""

from __future__ import annotations

import numpy as np

from purejit.ir import Function, Op, TensorType, Value, get_op

S32 = np.dtype(np.int32)


class Emitter:
    """Appends ops (types inferred by the registry) to a list; shares repeated constants."""

    def __init__(self, loc):
        self.ops: list[Op] = []
        self.loc = loc
        self._consts: dict = {}

    def op(self, name, operands=(), regions=(), **attrs) -> list[Value]:
        types = get_op(name).infer([v.type for v in operands], attrs, list(regions))
        res = [Value(t) for t in types]
        self.ops.append(Op(name, list(operands), attrs, res, list(regions), self.loc))
        return res

    def op1(self, name, operands=(), **attrs) -> Value:
        (res,) = self.op(name, operands, **attrs)
        return res

    def const(self, value) -> Value:
        value = np.asarray(value)
        key = (value.dtype.str, value.dtype.name, value.shape, value.tobytes())
        if key not in self._consts:
            self._consts[key] = self.op1("constant", value=value)
        return self._consts[key]

    def s32(self, x) -> Value:
        return self.const(np.int32(x))

    def zeros(self, t: TensorType) -> Value:
        z = self.const(np.zeros((), t.dtype))
        return self.op1("broadcast_in_dim", [z], shape=t.shape, broadcast_dimensions=())

    def position(self, groups) -> Value:
        """This device's position in its replica group, an s32 scalar."""
        table = np.zeros(max(i for g in groups for i in g) + 1, np.int32)
        for g in groups:
            for k, i in enumerate(g):
                table[i] = k
        pid = self.op1("convert", [self.op1("partition_id")], dtype=S32)
        row = self.op1("dynamic_slice", [self.const(table), pid], slice_sizes=(1,))
        return self.op1("reshape", [row], shape=())

    def block_start(self, p: Value, k, base: int, n: int, block: int) -> Value:
        """((p + base - k) mod n) * block; `k` is an int or an s32 value."""
        if isinstance(k, Value):
            shift = self.op1("subtract", [self.s32(base), k])
        else:
            shift = self.s32((base - k) % n)
        t = self.op1("remainder", [self.op1("add", [p, shift]), self.s32(n)])
        return self.op1("multiply", [t, self.s32(block)])

    def starts(self, rank: int, dim: int, start: Value) -> list[Value]:
        return [start if i == dim else self.s32(0) for i in range(rank)]

    def dot(self, like: Op, side: int, mine: Value, other: Value) -> Value:
        lhs, rhs = (mine, other) if side == 0 else (other, mine)
        return self.op1("dot_general", [lhs, rhs], **dict(like.attrs))

    def place(self, out: Value, part: Value, dim: int, start: Value) -> Value:
        return self.op1(
            "dynamic_update_slice", [out, part, *self.starts(out.type.rank, dim, start)]
        )

    def piece(self, x: Value, dim: int, block: int, start: Value) -> Value:
        sizes = tuple(block if i == dim else s for i, s in enumerate(x.type.shape))
        return self.op1(
            "dynamic_slice", [x, *self.starts(x.type.rank, dim, start)], slice_sizes=sizes
        )


def ring_pairs(groups) -> tuple[tuple[int, int], ...]:
    """Each device sends to the next one of its replica group."""
    return tuple((g[k], g[(k + 1) % len(g)]) for g in groups for k in range(len(g)))


def _loop(e: Emitter, name: str, carry: list[Value], invariants: list[Value], limit: int, step):
    """`while k < limit: carry = step(region_emitter, carry, invariants)`; k is carry[-1]."""
    types = [v.type for v in carry + invariants]
    cond_e, body_e = Emitter(e.loc), Emitter(e.loc)
    cp = [Value(t) for t in types]
    lt = cond_e.op1("compare", [cp[len(carry) - 1], cond_e.s32(limit)], comparison_direction="LT")
    cond = Function(f"{name}_cond", cp, cond_e.ops, [lt])
    bp = [Value(t) for t in types]
    new = step(body_e, bp[: len(carry)], bp[len(carry) :])
    body = Function(f"{name}_body", bp, body_e.ops, new)
    return e.op("while", carry + invariants, regions=[cond, body])


def all_gather_dot(c, get, unroll: bool) -> tuple[list[Op], Value]:
    """y = dot(all_gather(x), w) as a ring: multiply the held shard, pass it on."""
    groups, n = c.collective.attrs["replica_groups"], c.n
    pairs = ring_pairs(groups)
    e = Emitter(c.dot.loc)
    shard, other = get(c.collective.operands[0]), get(c.dot.operands[1 - c.side])
    block = shard.type.shape[c.dim]
    p = e.position(groups)
    out = e.zeros(c.dot.results[0].type)
    # after k steps this device holds the shard of position (p - k) mod n
    if unroll:
        cur = shard
        for k in range(n - 1):
            nxt = e.op1("collective_permute", [cur], source_target_pairs=pairs)
            out = e.place(
                out, e.dot(c.dot, c.side, cur, other), c.out_dim, e.block_start(p, k, n, n, block)
            )
            cur = nxt
    else:

        def step(b, carry, inv):
            cur, acc, k = carry
            w, pos = inv
            nxt = b.op1("collective_permute", [cur], source_target_pairs=pairs)
            acc = b.place(
                acc, b.dot(c.dot, c.side, cur, w), c.out_dim, b.block_start(pos, k, n, n, block)
            )
            return [nxt, acc, b.op1("add", [k, b.s32(1)])]

        cur, out, _ = _loop(e, "all_gather_ring", [shard, out, e.s32(0)], [other, p], n - 1, step)
    out = e.place(
        out, e.dot(c.dot, c.side, cur, other), c.out_dim, e.block_start(p, n - 1, n, n, block)
    )
    return e.ops, out


def dot_reduce_scatter(c, get, unroll: bool) -> tuple[list[Op], Value]:
    """reduce_scatter(dot(x, w)) as a ring: add this device's term, pass the sum on."""
    groups, n = c.collective.attrs["replica_groups"], c.n
    pairs = ring_pairs(groups)
    e = Emitter(c.collective.loc)
    sliced, other = get(c.dot.operands[c.side]), get(c.dot.operands[1 - c.side])
    block = sliced.type.shape[c.dim] // n
    p = e.position(groups)
    # the partial sum arriving at step k targets block (p - k - 1) mod n
    first = e.piece(sliced, c.dim, block, e.block_start(p, 0, 2 * n - 1, n, block))
    acc = e.dot(c.dot, c.side, first, other)
    if unroll:
        for k in range(1, n):
            moved = e.op1("collective_permute", [acc], source_target_pairs=pairs)
            piece = e.piece(sliced, c.dim, block, e.block_start(p, k, 2 * n - 1, n, block))
            acc = e.op1("add", [moved, e.dot(c.dot, c.side, piece, other)])
        return e.ops, acc

    def step(b, carry, inv):
        acc, k = carry
        x, w, pos = inv
        moved = b.op1("collective_permute", [acc], source_target_pairs=pairs)
        piece = b.piece(x, c.dim, block, b.block_start(pos, k, 2 * n - 1, n, block))
        acc = b.op1("add", [moved, b.dot(c.dot, c.side, piece, w)])
        return [acc, b.op1("add", [k, b.s32(1)])]

    acc, _ = _loop(e, "reduce_scatter_ring", [acc, e.s32(1)], [sliced, other, p], n, step)
    return e.ops, acc
