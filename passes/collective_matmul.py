"""Collective matmul: overlap an all-gather or a reduce-scatter with the matmul it feeds.

Two rewrites (the "collective matmul" decomposition of Wang et al., ASPLOS 2023), on every
function body, shard_map bodies (`manual_computation` regions) included:

    y = dot_general(all_gather(x), w)      # x gathered along a free dimension d
      -> a ring of n steps: multiply the shard held now, send it to the next device
         (collective_permute), write the partial product into block (p - s) mod n of y

    y = reduce_scatter(dot_general(x, w))  # scattered along an output dimension that comes
                                           # from a free dimension of x (or w), with "add"
      -> a ring of n steps: acc = collective_permute(acc) + dot(block (p - s - 1) mod n of x, w)

`p` is the device's position in its replica group, read from `partition_id`; ring neighbours
are the next device of each replica group. The ring never materialises the gathered operand
or the unscattered product, so `temp_size_in_bytes` falls, and each step's transfer can run
while the previous step multiplies.

Which candidates are rewritten is decided by a cost model of bytes and flops (`mode="auto"`):
the ring pays a fixed latency per step but overlaps transfer and compute, so it wins when both
are large next to `n * step_latency_s`. `mode="on"` rewrites every candidate, `"off"` none.

Guarantees: results are unchanged up to the order of floating-point sums (the ring adds the
reduce-scatter's terms in ring order). Never touches: collectives whose result has other
uses, gathers along contracting or batch dimensions, reductions other than "add", ops in
regions of control flow (only top-level bodies and manual computation bodies are visited).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from purejit.ir import Function, Op, TensorType, Value, get_op
from purejit.passes.pipeline import PassResult

_DOT = ("lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
        "rhs_contracting_dimensions")


def _dot_dims(op: Op):
    lb, rb, lc, rc = (tuple(op.attrs[k]) for k in _DOT)
    return lb, rb, lc, rc


def _free(rank: int, batch, contract) -> list[int]:
    return [i for i in range(rank) if i not in batch and i not in contract]


def output_dim(op: Op, side: int, d: int) -> int | None:
    """The result dimension of dot_general `op` that free dimension `d` of operand `side`
    (0 = lhs, 1 = rhs) becomes; None when `d` is a batch or contracting dimension."""
    lb, rb, lc, rc = _dot_dims(op)
    lhs, rhs = (v.type.rank for v in op.operands)
    lfree, rfree = _free(lhs, lb, lc), _free(rhs, rb, rc)
    if side == 0:
        return len(lb) + lfree.index(d) if d in lfree else None
    return len(lb) + len(lfree) + rfree.index(d) if d in rfree else None


def source_dim(op: Op, od: int) -> tuple[int, int] | None:
    """(side, dimension) of the operand free dimension that result dimension `od` comes from."""
    for side in (0, 1):
        for d in range(op.operands[side].type.rank):
            if output_dim(op, side, d) == od:
                return side, d
    return None


def dot_flops(op: Op) -> int:
    lb, rb, lc, rc = _dot_dims(op)
    k = int(np.prod([op.operands[0].type.shape[d] for d in lc], dtype=np.int64))
    return 2 * op.results[0].type.size * k


@dataclass(frozen=True)
class Candidate:
    kind: str  # "all_gather->dot" or "dot->reduce_scatter"
    collective: Op
    dot: Op
    side: int  # which dot operand is gathered / sliced
    dim: int  # that operand's dimension
    out_dim: int  # the result dimension that is gathered / scattered
    n: int  # devices per replica group


class _Emitter:
    def __init__(self, loc):
        self.ops: list[Op] = []
        self.loc = loc
        self._consts: dict = {}

    def op(self, name, operands=(), **attrs) -> Value:
        types = get_op(name).infer([v.type for v in operands], attrs, [])
        (res,) = [Value(t) for t in types]
        self.ops.append(Op(name, list(operands), attrs, [res], [], self.loc))
        return res

    def const(self, value) -> Value:
        value = np.asarray(value)
        key = (value.dtype.str, value.shape, value.tobytes())
        if key not in self._consts:
            self._consts[key] = self.op("constant", value=value)
        return self._consts[key]

    def zeros(self, t: TensorType) -> Value:
        z = self.const(np.zeros((), t.dtype))
        return self.op("broadcast_in_dim", [z], shape=t.shape, broadcast_dimensions=())

    def u32(self, x) -> Value:
        return self.const(np.uint32(x))

    def position(self, groups) -> Value:
        """This device's position in its replica group (u32 scalar), via partition_id."""
        table = np.zeros(max(i for g in groups for i in g) + 1, np.uint32)
        for g in groups:
            for k, i in enumerate(g):
                table[i] = k
        pid = self.op("convert", [self.op("partition_id")], dtype=np.dtype(np.int32))
        row = self.op("dynamic_slice", [self.const(table), pid], slice_sizes=(1,))
        return self.op("reshape", [row], shape=())

    def block_start(self, p: Value, offset: int, n: int, block: int) -> Value:
        """((p + offset) mod n) * block as an s32 start index."""
        t = self.op("remainder", [self.op("add", [p, self.u32(offset % n)]), self.u32(n)])
        return self.op("convert", [self.op("multiply", [t, self.u32(block)])],
                       dtype=np.dtype(np.int32))

    def starts(self, rank: int, dim: int, start: Value) -> list[Value]:
        zero = self.const(np.int32(0))
        return [start if i == dim else zero for i in range(rank)]


def _ring(groups) -> tuple[tuple[int, int], ...]:
    return tuple((g[k], g[(k + 1) % len(g)]) for g in groups for k in range(len(g)))


def _dot(e: _Emitter, dot: Op, lhs: Value, rhs: Value) -> Value:
    return e.op("dot_general", [lhs, rhs], **{k: dot.attrs[k] for k in dot.attrs})


def rewrite_all_gather_dot(c: Candidate, get=lambda v: v) -> tuple[list[Op], Value]:
    """The ring for `dot(all_gather(x), w)`; returns its ops and the value replacing y.
    `get` maps a value of the original body to the one to use now."""
    groups = c.collective.attrs["replica_groups"]
    e = _Emitter(c.dot.loc)
    shard = get(c.collective.operands[0])
    other = get(c.dot.operands[1 - c.side])
    out_t = c.dot.results[0].type
    block = shard.type.shape[c.dim]
    p = e.position(groups)
    out = e.zeros(out_t)
    cur = shard
    for s in range(c.n):
        nxt = e.op("collective_permute", [cur], source_target_pairs=_ring(groups)) \
            if s < c.n - 1 else None
        part = _dot(e, c.dot, *((cur, other) if c.side == 0 else (other, cur)))
        # after s steps this device holds the shard of position (p - s) mod n
        start = e.block_start(p, c.n - s, c.n, block)
        out = e.op("dynamic_update_slice", [out, part, *e.starts(out_t.rank, c.out_dim, start)])
        cur = nxt
    return e.ops, out


def rewrite_dot_reduce_scatter(c: Candidate, get=lambda v: v) -> tuple[list[Op], Value]:
    """The ring for `reduce_scatter(dot(x, w))`; returns its ops and the value replacing it."""
    groups = c.collective.attrs["replica_groups"]
    e = _Emitter(c.collective.loc)
    sliced = get(c.dot.operands[c.side])
    other = get(c.dot.operands[1 - c.side])
    block = sliced.type.shape[c.dim] // c.n
    sizes = tuple(block if i == c.dim else n for i, n in enumerate(sliced.type.shape))
    p = e.position(groups)
    acc = None
    for s in range(c.n):
        # the partial sum arriving now targets block (p - s - 1) mod n
        start = e.block_start(p, 2 * c.n - s - 1, c.n, block)
        piece = e.op("dynamic_slice", [sliced, *e.starts(sliced.type.rank, c.dim, start)],
                     slice_sizes=sizes)
        part = _dot(e, c.dot, *((piece, other) if c.side == 0 else (other, piece)))
        if acc is None:
            acc = part
        else:
            moved = e.op("collective_permute", [acc], source_target_pairs=_ring(groups))
            acc = e.op("add", [moved, part])
    return e.ops, acc


@dataclass(frozen=True)
class CollectiveMatmul:
    """The pass. Options are its fields.

    Args:
        mode: "auto" (cost model), "on" (every candidate) or "off".
        link_bytes_per_s: bandwidth of one device's link to its ring neighbour.
        flops_per_s: one device's matmul rate.
        step_latency_s: fixed cost of one ring step (a transfer and a kernel launch).
    """

    name: str = "collective_matmul"
    mode: str = "auto"
    link_bytes_per_s: float = 150e9
    flops_per_s: float = 200e12
    step_latency_s: float = 8e-6

    def estimate(self, c: Candidate) -> dict:
        """Estimated seconds with and without the ring (the cost model)."""
        full = c.collective.results[0].type if c.kind.startswith("all_gather") \
            else c.dot.results[0].type
        moved = full.nbytes * (c.n - 1) / c.n
        t_comm = moved / self.link_bytes_per_s
        t_comp = dot_flops(c.dot) / self.flops_per_s
        lat = self.step_latency_s
        plain = t_comm + t_comp + 2 * lat
        step = max(t_comm / (c.n - 1), t_comp / c.n) + lat
        ring = t_comp / c.n + (c.n - 1) * step + lat
        return {"kind": c.kind, "devices": c.n, "bytes": int(moved), "flops": dot_flops(c.dot),
                "plain_s": plain, "ring_s": ring}

    def chosen(self, c: Candidate) -> bool:
        if self.mode not in ("auto", "on", "off"):
            raise ValueError(f"collective_matmul: mode must be auto, on or off, not {self.mode!r}")
        if self.mode != "auto":
            return self.mode == "on"
        est = self.estimate(c)
        return est["ring_s"] < est["plain_s"]

    def __call__(self, fn: Function) -> PassResult:
        report = {"candidates": [], "rewritten": 0}
        new = self._function(fn, report)
        return PassResult(new, report["rewritten"] > 0, report)

    def _function(self, fn: Function, report) -> Function:
        ops = []
        for op in fn.ops:
            if op.name == "manual_computation":
                body = self._function(op.regions[0], report)
                op = Op(op.name, op.operands, op.attrs, op.results, [body], op.loc)
            ops.append(op)
        body = Function(fn.name, fn.params, ops, fn.results)
        chosen = []
        for c in find_candidates(body):
            est = self.estimate(c)
            est["rewritten"] = self.chosen(c)
            report["candidates"].append(est)
            if est["rewritten"]:
                chosen.append(c)
        if not chosen:
            return body
        report["rewritten"] += len(chosen)
        return apply(body, chosen)


def find_candidates(fn: Function) -> list[Candidate]:
    """Every rewritable all_gather->dot and dot->reduce_scatter pair of `fn`'s own body."""
    uses: dict[Value, int] = {}
    producer: dict[Value, Op] = {}
    for op in fn.ops:
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
        for r in op.results:
            producer[r] = op
    for v in fn.results:
        uses[v] = uses.get(v, 0) + 1
    out, taken = [], set()
    for op in fn.ops:
        if op.name == "dot_general":
            for side in (0, 1):
                g = producer.get(op.operands[side])
                if g is None or g.name != "all_gather" or uses[g.results[0]] != 1 or id(g) in taken:
                    continue
                if op.operands[0] is op.operands[1]:
                    continue
                d = int(g.attrs["all_gather_dim"])
                od = output_dim(op, side, d)
                n = len(g.attrs["replica_groups"][0])
                if od is not None and n > 1:
                    out.append(Candidate("all_gather->dot", g, op, side, d, od, n))
                    taken.add(id(g))
                    break
        elif op.name == "reduce_scatter" and op.attrs["computation"] == "add":
            dot = producer.get(op.operands[0])
            if dot is None or dot.name != "dot_general" or uses[dot.results[0]] != 1:
                continue
            if any(c.dot is dot for c in out):
                continue
            src = source_dim(dot, int(op.attrs["scatter_dimension"]))
            n = len(op.attrs["replica_groups"][0])
            if src is not None and n > 1:
                out.append(Candidate("dot->reduce_scatter", op, dot, src[0], src[1],
                                     int(op.attrs["scatter_dimension"]), n))
    return out


def apply(fn: Function, chosen: list[Candidate]) -> Function:
    """Rewrite the chosen candidates of `fn`'s body; returns a new function."""
    removed = {id(c.collective if c.kind.startswith("all_gather") else c.dot) for c in chosen}
    at = {id(c.dot if c.kind.startswith("all_gather") else c.collective): c for c in chosen}
    subst: dict[Value, Value] = {}
    ops: list[Op] = []
    for op in fn.ops:
        if id(op) in removed:
            continue
        c = at.get(id(op))
        if c is None:
            operands = [subst.get(v, v) for v in op.operands]
            ops.append(Op(op.name, operands, op.attrs, op.results, op.regions, op.loc))
            continue
        rewrite = rewrite_all_gather_dot if c.kind.startswith("all_gather") else \
            rewrite_dot_reduce_scatter
        new_ops, value = rewrite(c, lambda v: subst.get(v, v))
        ops.extend(new_ops)
        subst[op.results[0]] = value
    return Function(fn.name, fn.params, ops, [subst.get(v, v) for v in fn.results])
