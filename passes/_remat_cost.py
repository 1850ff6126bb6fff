"""The cost model of the remat plan (`remat.py`): which ops the automatic plan may recompute
(`recomputable`), how the backward pass reads each residual (`backward_uses`), and the memory
traffic recomputing a value adds to it (`recompute_traffic`, priced by `TRAFFIC_WEIGHT`).

Apart from `remat.py`, which holds the cut, the plan and the rewrite, because these only price
values and never change a program. `remat.py` re-exports every name here. Diagnostics that
patch a constant (`TRAFFIC_WEIGHT`) or `recomputable` for a run set it in both modules: the cut
in `remat.py` reads them there, the prices here.
"""

from __future__ import annotations

from typing import Sequence

from purejit.ir import Function, Op, Value
from purejit.passes.base import has_effect


def recomputable(op: Op) -> bool:
    """Ops the automatic plan recomputes: elementwise arithmetic, data movement, constants."""
    if op.regions or has_effect(op):
        return False
    t = op.opdef.traits
    return bool(t & {"elementwise", "shape_only", "view", "constant"})


# ---- the cost of recomputing a value ------------------------------------------------------
#
# On an accelerator a recomputed elementwise chain costs memory traffic, not arithmetic: a
# recomputation that fuses into the backward kernel reading it only swaps which arrays that
# kernel reads (its inputs instead of the value), but one that must exist in memory (read
# by a dot, or an expensive op such as exp or tanh read by several kernels, which XLA makes
# once rather than recompute in each) is a kernel of its own in the backward pass: it reads
# its inputs and writes the value. `TRAFFIC_WEIGHT` prices one byte of that traffic against
# one byte held from the forward pass to the backward pass: at 0.25 a value is recomputed
# when that saves at least a quarter of the traffic it adds, so a transformer's attention
# probabilities, which only the pre-softmax scores they are rebuilt from could replace, stay
# recomputed (saving both would hold twice the bytes), while a transposed copy that a
# backward dot reads is saved instead of the array it was transposed from.
TRAFFIC_WEIGHT = 0.25

# ops that recompute for free wherever they are read: no arithmetic, XLA fuses or elides them
_FREE_OPS = frozenset({"broadcast_in_dim", "iota", "reshape"})


def _fusible_reader(op: Op) -> bool:
    """Whether a kernel of `op` can compute its operands in place (XLA loop or input fusion)
    instead of reading them from memory."""
    t = op.opdef.traits
    if op.regions and "reduction" not in t:
        return False
    return bool(t & {"elementwise", "shape_only", "view", "reduction"}) and "contraction" not in t


def backward_uses(lin: Function, num_tangents: int, residuals: Sequence[Value]) -> dict:
    """How the linear program `lin` (tangents, then one parameter per entry of `residuals`)
    reads each residual: `{value: (number of ops reading it, some reader cannot fuse it)}`.
    The transposed program reads residuals through the same kinds of op (a dot's transpose
    is a dot, an elementwise op's an elementwise op), so this describes the backward pass."""
    readers: dict[Value, list[Op]] = {}
    for op in lin.ops:
        for u in dict.fromkeys(op.operands):
            readers.setdefault(u, []).append(op)
    out: dict[Value, tuple[int, bool]] = {}
    params = lin.params[num_tangents : num_tangents + len(residuals)]
    for r, p in zip(residuals, params):
        ops = readers.get(p, [])
        n, hard = out.get(r, (0, False))
        out[r] = (n + len(ops), hard or any(not _fusible_reader(op) for op in ops))
    return out


def recompute_traffic(
    fwd: Function, uses: dict | None = None, keeps_barriers: bool = True, num_out: int = 0
) -> dict:
    """`{value: bytes}`: the memory traffic recomputing each value of `fwd` adds to the
    backward pass (0 when it fuses into the kernels that read it), for values made by
    `recomputable` ops. `uses` is `backward_uses` of the residuals (None: every residual is
    assumed to be read once, by a kernel that can fuse it).

    Without barriers (`keeps_barriers=False`: XLA's CPU compiler drops them before its last
    CSE) a recomputed expensive value (exp, divide: XLA makes those once) that the forward
    pass computes anyway (the first `num_out` results read it) merges with the forward
    pass's and lives until the backward pass reads it: recomputing it holds its bytes as
    saving it would, so its price is those bytes, never less. One only the derivative reads
    is made in the backward pass alone.

    A value made in memory from sources that live anyway and are wider than it (the bf16
    copy of f32 attention probabilities that a backward dot reads) is priced above its
    bytes, barriers or not: it is saved, as JAX saves it (`_made_from_wider`)."""
    uses = dict(uses or {})
    producer = {r: op for op in fwd.ops for r in op.results}
    # a view (reshape) hands its reader the operand's bytes as they lie: a backward reader
    # that cannot fuse the reshaped value (a dot, the attention op) needs the operand in memory
    for v, (n, hard) in list(uses.items()):
        while hard and v in producer and producer[v].has_trait("view"):
            v = producer[v].operands[0]
            uses[v] = (max(n, uses.get(v, (0, False))[0]), True)
    primal: set = set()
    stack = [] if keeps_barriers else list(fwd.results[:num_out])
    while stack:  # what the outputs need: the forward pass makes it whatever is saved
        v = stack.pop()
        if v in primal:
            continue
        primal.add(v)
        if v in producer:
            stack.extend(producer[v].operands)
    readers: dict[Value, list[Op]] = {}
    for op in fwd.ops:
        for u in dict.fromkeys(op.operands):
            readers.setdefault(u, []).append(op)
    out: dict[Value, int] = {}
    sources = _sources(fwd)
    for op in fwd.ops:
        if not recomputable(op):
            continue
        t = op.opdef.traits
        for v in op.results:
            if op.name in _FREE_OPS or t & {"constant", "view"}:
                out[v] = 0
                continue
            n_bwd, hard = uses.get(v, (0, False))
            # forward readers that are never recomputed read v in the forward pass only;
            # recomputed ones rebuild it in their own chain (see `chains`)
            hard = hard or any(
                not _fusible_reader(r) for r in readers.get(v, []) if recomputable(r)
            )
            expensive = "elementwise" in t and "cheap" not in t
            if expensive and v in primal:
                out[v] = int(v.type.nbytes / TRAFFIC_WEIGHT) + 1  # priced as held bytes
                continue
            # an expensive elementwise residual read by several backward kernels is made
            # once, in memory (XLA does not compute an exp or a divide twice)
            made = hard or (expensive and n_bwd > 1)
            if not made:
                out[v] = 0
                continue
            if "elementwise" in t and _made_from_wider(v, producer, sources):
                # made in memory from held sources wider than itself (a narrowing convert
                # of f32 probabilities, a product of full-size arrays): the rebuilt copy
                # holds in the backward pass what saving would, next to its sources, and
                # its kernel moves more than twice the bytes it frees: saved instead
                out[v] = int((v.type.nbytes + 1) / TRAFFIC_WEIGHT) + 1
                continue
            if "elementwise" in t:  # reads its full-size operands (broadcasts read little)
                reads = sum(
                    u.type.nbytes
                    for u in dict.fromkeys(op.operands)
                    if not (u in producer and producer[u].name in _FREE_OPS | {"constant"})
                )
            else:  # data movement reads what it writes
                reads = v.type.nbytes
            out[v] = reads + v.type.nbytes
    return out


def _sources(fwd: Function) -> dict:
    """`{value: frozenset}`: the values a recomputation of each value of `fwd` reads at the
    least, walking back through recomputable ops to inputs and results of ops never
    recomputed, and stopping at any value smaller than what it is made from (the cut can
    save it instead); broadcasts and constants read little and count nothing."""
    memo: dict[Value, frozenset] = {}
    for op in fwd.ops:  # in program order: every operand is known before its reader
        for u in op.results:
            if not recomputable(op):
                memo[u] = frozenset([u])
            elif op.has_trait("constant") or (op.name in _FREE_OPS and not op.has_trait("view")):
                memo[u] = frozenset()
            else:
                got = frozenset().union(*(memo.get(w, frozenset([w])) for w in op.operands))
                memo[u] = got if _nbytes(got) <= u.type.nbytes else frozenset([u])
    return memo


def _made_from_wider(v: Value, producer: dict, sources: dict) -> bool:
    """Whether recomputing `v` reads more bytes than it writes, from `_sources` that live
    until the backward pass whatever the plan (inputs and results of ops never recomputed)."""
    got = frozenset().union(*(sources.get(w, frozenset([w])) for w in producer[v].operands))
    held = all(u not in producer or not recomputable(producer[u]) for u in got)
    return held and _nbytes(got) > v.type.nbytes


def _nbytes(values) -> int:
    return sum(u.type.nbytes for u in values)
