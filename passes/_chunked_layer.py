"""Pipelined layers: the chunked form carried through a whole tensor-parallel layer
(`form="pipelinedK"` of the collective-matmul pass).

    x --all_gather(g)--> dot(., w1) -> elementwise ops -> dot(., w2) --reduce_scatter(s)--> y

x is cut into K pieces along the gathered dimension g (R rows per device, m = R / K); piece c
goes through the whole layer on its own: its all-gather, the first matmul, the elementwise
ops, the second matmul and its reduce-scatter. Piece c's collectives wait for piece c-1's
(identity barriers, as `chunkedK`), so while piece c multiplies, piece c+1 is gathered and
piece c-1 is reduce-scattered. Where `chunkedK` must put the gathered rows back in order
after the first matmul, here no row moves at all:

    piece c's gathered rows (dev, j) are x_dev's rows c*m + j: rows dev*R + c*m + j of
    all_gather(x). The first matmul keeps them as rows (along its result dimension e from
    g); every op between is elementwise on values of that shape, whose other operands are
    broadcasts that do not vary along e (equal on every row), so each keeps row (dev, j) at
    row (dev, j); the second matmul maps dimension e of that operand to dimension s of its
    product. Reduce-scattered along s, device p gets the sum over devices of rows (p, j):
    rows p*R + c*m + j of the plain product's sum, which are rows c*m + j of its own result.
    So y = concatenate(piece results along s), in order.

What is proved before a layer is rewritten (`find_layers`), else it is left to the other
forms: the all-gather -> dot and dot -> reduce-scatter candidates share replica groups; the
ops between are elementwise and pure, without regions, of the first product's shape (or
shard_map's typing mark `pvary`, an identity); their other operands are broadcasts constant
along e (behind typing marks); no value between is used outside the layer;
the second matmul reads the last of them at the dimension that the reduce-scatter scatters,
and its other operand does not depend on them; K divides R.
"""

from __future__ import annotations

from dataclasses import dataclass

from purejit.ir import Function, Op, Value
from purejit.passes._chunked import slice_along
from purejit.passes._rings import Emitter


@dataclass(frozen=True)
class Layer:
    """An all-gather -> dot -> elementwise ops -> dot -> reduce-scatter chain, proved.

    Args:
        gather: the all_gather -> dot candidate (`collective_matmul.Candidate`).
        scatter: the dot -> reduce_scatter candidate.
        region: the elementwise ops between the two matmuls, in program order.
        broadcasts: what feeds the region from outside, each a broadcast constant along the
            rows and the typing marks over it (re-emitted once at a piece's shape).
        k: the number of pieces.
        chained: each piece's collectives wait for the previous piece's.
    """

    gather: object
    scatter: object
    region: tuple[Op, ...]
    broadcasts: tuple[tuple[Op, ...], ...]
    k: int
    chained: bool = True


def _mark(op: Op) -> bool:
    """Whether `op` is shard_map's typing mark (`pvary`): an identity, nothing runs."""
    return op.name == "pvary"


def _row_free(v: Value, e: int, shape, producer: dict) -> tuple[Op, ...] | None:
    """The ops that make `v` from a broadcast of `shape` constant along dim `e` (the
    broadcast, then typing marks), or None when `v` is not one."""
    chain = []
    op = producer.get(v)
    while op is not None and _mark(op):
        chain.append(op)
        op = producer.get(op.operands[0])
    if op is None or op.name != "broadcast_in_dim" or op.results[0].type.shape != shape:
        return None
    src = op.operands[0].type.shape
    if any(src[i] != 1 for i, d in enumerate(op.attrs["broadcast_dimensions"]) if d == e):
        return None
    return (op, *reversed(chain))


def _prove(fn: Function, a, b, k: int, producer: dict, uses: dict):
    """(region, broadcasts) between candidates `a` (all_gather -> dot) and `b` (dot ->
    reduce_scatter) when the layer is proved (see the module docstring), else None."""

    def groups(op):
        return tuple(tuple(int(i) for i in g) for g in op.attrs["replica_groups"])

    if groups(a.collective) != groups(b.collective):
        return None
    x = a.collective.operands[0].type
    if x.shape[a.dim] % k:
        return None
    y = a.dot.results[0]
    e = a.out_dim
    inside, region, broadcasts, seen = {y}, [], {}, False
    for op in fn.ops:
        if op is a.dot:
            seen = True
        elif op is b.dot:
            break
        elif seen and any(v in inside for v in op.operands):
            region.append(op)
            inside.update(op.results)
    else:
        return None
    if not seen:
        return None
    for op in region:
        elementwise = (op.is_elementwise or _mark(op)) and op.has_trait("pure") and not op.regions
        if not elementwise or op.has_trait("per_device") or op.has_trait("side_effect"):
            return None
        if any(r.type.shape != y.type.shape for r in op.results):
            return None
        for v in op.operands:
            if v in inside:
                continue
            chain = _row_free(v, e, y.type.shape, producer)
            if chain is None:
                return None
            broadcasts[v] = chain
    last = b.dot.operands[b.side]
    if last not in inside or b.dim != e or b.dot.operands[1 - b.side] in inside:
        return None
    users = set(map(id, region)) | {id(b.dot)}
    for v in inside:
        if any(id(u) not in users for u in uses.get(v, ())) or v in fn.results:
            return None
    return tuple(region), tuple(broadcasts.values())


def find_layers(fn: Function, candidates: list, k: int, chained: bool = True) -> list[Layer]:
    """Every proved layer of `fn`'s body among `candidates` (each candidate in one at most)."""
    producer: dict[Value, Op] = {}
    uses: dict[Value, list[Op]] = {}
    for op in fn.ops:
        for r in op.results:
            producer[r] = op
        for v in op.operands:
            uses.setdefault(v, []).append(op)
    gathers = [c for c in candidates if c.kind.startswith("all_gather")]
    scatters = [c for c in candidates if not c.kind.startswith("all_gather")]
    out, taken = [], set()
    for a in gathers:
        for b in scatters:
            if id(b) in taken:
                continue
            proved = _prove(fn, a, b, k, producer, uses)
            if proved is not None:
                out.append(Layer(a, b, *proved, k, chained))
                taken.add(id(b))
                break
    return out


def emit(layer: Layer, get) -> tuple[list[Op], Value]:
    """The layer as K pieces, each through all of it; returns the ops and the result."""
    a, b, k = layer.gather, layer.scatter, layer.k
    e = Emitter(b.collective.loc)
    x = get(a.collective.operands[0])
    w1, w2 = get(a.dot.operands[1 - a.side]), get(b.dot.operands[1 - b.side])
    m = x.type.shape[a.dim] // k
    row = a.out_dim
    shape = list(a.dot.results[0].type.shape)
    shape[row] = shape[row] // k
    # each row-free operand once at a piece's shape: equal on every row, so on every piece
    small = {}
    for first, *marks in layer.broadcasts:
        attrs = dict(first.attrs, shape=tuple(shape))
        v = e.op1("broadcast_in_dim", [get(first.operands[0])], **attrs)
        for mark in marks:
            v = e.op1(mark.name, [v], **dict(mark.attrs))
        small[(marks[-1] if marks else first).results[0]] = v
    gathered = []
    for c in range(k):
        xc = slice_along(e, x, a.dim, c * m, (c + 1) * m)
        if layer.chained and gathered:
            # piece c's all-gather starts once piece c-1's has arrived (an identity barrier)
            xc, gathered[-1] = e.op("optimization_barrier", [xc, gathered[-1]])
        gathered.append(e.op1("all_gather", [xc], **dict(a.collective.attrs)))
    results = []
    for g in gathered:
        local = {a.dot.results[0]: e.dot(a.dot, a.side, g, w1)}
        for op in layer.region:
            operands = [local[v] if v in local else small[v] for v in op.operands]
            outs = e.op(op.name, operands, **dict(op.attrs))
            local.update(zip(op.results, outs))
        z = e.dot(b.dot, b.side, local[b.dot.operands[b.side]], w2)
        if layer.chained and results:
            # piece c's reduce-scatter starts once piece c-1's has finished
            z, results[-1] = e.op("optimization_barrier", [z, results[-1]])
        results.append(e.op1("reduce_scatter", [z], **dict(b.collective.attrs)))
    # piece c holds rows c*m + j of every device's result
    return e.ops, e.op1("concatenate", results, dimension=b.out_dim)
