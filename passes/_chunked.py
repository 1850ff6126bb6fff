"""Chunked collectives: the collective-matmul pass's second form (`form="chunkedK"`).

Where a ring replaces the collective by n sequential permute + matmul steps, this form keeps
the collective (on NVSwitch machines the plain all-gather and reduce-scatter are fast) and
cuts it, with the matmul, into k pieces, so that XLA's asynchronous collectives can run one
piece's transfer while another piece multiplies:

    y = dot_general(all_gather(x), w)
      -> y_c = dot_general(all_gather(x_c), w) for the k chunks x_c of x, then y from the y_c

    y = reduce_scatter(dot_general(a, w))
      -> y_c = reduce_scatter(dot_general(a_c, w)) (or w_c) for k chunks, then y from the y_c

XLA's GPU compiler may undo the cut: its dot merger joins independent dots that share an
operand (here w, or the activation on the reduce-scatter side) into one dot over the
concatenated pieces, below `xla_gpu_dot_merger_threshold_mb` (32 MB by default). On 4 H200s
that merged both chunked2 pieces of the communication-heavy MLP back into one cuBLAS call and
left 7% of the collective time hidden; with `PUREJIT_XLA_OPTIONS=
xla_gpu_dot_merger_threshold_mb=0` the pieces stay apart and the form ran 0.878 ms against
0.984, still slower than the plain program's 0.784 (docs/benchmarks/multigpu_s12.md,
session 20), so the option is not set by the form.

Every element of the result is computed by the same dot product over the same contraction
as before (on a sub-block of rows or columns) and the same collective, so the values equal
the plain program's, per element (up to a matmul kernel that sums its contraction in an order
that depends on the block's size).

Which dimension is cut, and why the pieces land where the plain program put them (`split`):

all_gather -> dot, gathered along dim g of x (n devices, x.shape[g] = R rows per device):
    - another free dimension d of x (neither contracting nor batch in the dot), if k divides
      it: the all-gather acts on every index of d alike, and the dot maps d to one result
      dimension e alike, so y = concatenate(y_c, along e). No rows move.
    - else g itself, if k divides R (m = R / k): chunk c is x[c*m : (c+1)*m] along g. Its
      all-gather holds, at index dev*m + i, row c*m + i of device dev, which is row
      dev*R + c*m + i of all_gather(x): the result's dimension e (from g) of y_c, split into
      (n, m), is the slice [:, c*m : (c+1)*m] of y's dimension e split into (n, R). So
      y = reshape(concatenate(reshape(y_c, (n, m)), along the m axis), n*R): one elementwise
      copy, which XLA fuses into an elementwise consumer (the MLP's activation).

dot -> reduce_scatter, scattered along result dim s (z.shape[s] = n*R):
    - another result dimension e that comes from a free dimension of either operand, if k
      divides it: that operand is sliced along its dimension, the reduce-scatter acts on
      every index of e alike, so y = concatenate(y_c, along e). No rows move.
    - else s, if k divides R (m = R / k): the operand dimension that s comes from (n*R long)
      split into (n, k, m), index c of the k axis, back to n*m: the rows dev*R + c*m + i.
      Their product, reduce-scattered, gives device p the sum of rows p*R + c*m + i, which
      is rows c*m + i of its result: y = concatenate(y_c, along s), in order.

Chained (default) or free: XLA's GPU compiler combines independent all-gathers (and
reduce-scatters) into one up to a size threshold (`xla_gpu_*_combine_threshold_bytes`, 30 MiB
by default), and merges independent matmuls that share an operand up to another
(`DotMerger`): that would put the chunks back together. So `chunkedK` chains the collectives:
chunk c's collective takes its operand through an `optimization_barrier` with chunk c-1's
collective result (the barrier is the identity, so no value changes), which makes them
dependent, in order, one at a time, while chunk c-1's matmul (all-gather side) or chunk c's
matmul (reduce-scatter side) runs beside the transfer. `chunkedK_free` leaves the chunks
independent, for XLA's scheduler and combiners to arrange.

Refused, with the reason: k < 2, and a candidate where k divides no dimension the rules allow
(`split` returns the sentence); the pass then leaves the candidate as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from purejit.ir import Op, Value
from purejit.passes._dot_dims import dot_dims, free_dims, output_dim, source_dim
from purejit.passes._rings import Emitter


@dataclass(frozen=True)
class Split:
    """How a candidate is cut into chunks.

    Args:
        side: the dot operand that is sliced (0 lhs, 1 rhs).
        dim: that operand's dimension (for all_gather -> dot: a dimension of x, the
            all-gather's operand, which has the gathered operand's dimensions).
        out_dim: the dimension of the candidate's result the chunks are put together along.
        interleaved: the cut dimension is the gathered / scattered one (its rows are
            device-major: the second rule of each kind above).
        k: the number of chunks.
        chained: each chunk's collective waits for the previous chunk's (a barrier).
    """

    side: int
    dim: int
    out_dim: int
    interleaved: bool
    k: int
    chained: bool = True


def chunks_of(form: str) -> int | None:
    """k of a form name: "chunked4", "chunked4_free", "pipelined4" -> 4; "ring" -> None.
    Other names raise ValueError."""
    if form == "ring":
        return None
    for kind in ("chunked", "pipelined"):
        digits = form.removeprefix(kind).removesuffix("_free")
        if form.startswith(kind) and digits.isdigit():
            return int(digits)
    raise ValueError(
        "collective_matmul: form must be 'ring', 'chunkedK', 'pipelinedK' or either with "
        f"'_free' (K >= 2), not {form!r}"
    )


def pipelined(form: str) -> bool:
    """Whether `form` carries the pieces through whole layers (`passes/_chunked_layer.py`);
    its candidates outside a proved layer take the chunked form of the same K."""
    return form.startswith("pipelined")


def single(form: str) -> str:
    """The form a lone candidate takes for `form`: "pipelinedK" -> "chunkedK"."""
    return "chunked" + form.removeprefix("pipelined") if pipelined(form) else form


def chained(form: str) -> bool:
    """Whether the chunks' collectives of `form` are chained one after the other."""
    return not form.endswith("_free")


def split(c, k: int, chain: bool = True) -> Split | str:
    """How candidate `c` (a `collective_matmul.Candidate`) is cut into `k` chunks (`chain`:
    their collectives chained), or why it cannot be (a sentence)."""
    if k < 2:
        return f"chunked{k}: needs at least 2 chunks"
    if c.kind.startswith("all_gather"):
        x = c.collective.operands[0].type
        lb, rb, lc, rc = dot_dims(c.dot)
        free = free_dims(x.rank, *((lb, lc) if c.side == 0 else (rb, rc)))
        for d in [d for d in free if d != c.dim] + [c.dim]:
            if x.shape[d] % k == 0:
                return Split(c.side, d, output_dim(c.dot, c.side, d), d == c.dim, k, chain)
        others = ", ".join(f"dim {d} is {x.shape[d]}" for d in free if d != c.dim)
        return (
            f"chunked{k}: the {x.shape[c.dim]} rows per device of the gathered dim {c.dim} of "
            f"{x} do not divide into {k} chunks, nor does another free dimension of it"
            + (f" ({others})" if others else "")
        )
    z = c.dot.results[0].type
    s = c.out_dim
    for e in [e for e in range(z.rank) if e != s]:
        src = source_dim(c.dot, e)
        if src is not None and z.shape[e] % k == 0:
            return Split(src[0], src[1], e, False, k, chain)
    rows = z.shape[s] // c.n
    if rows % k == 0:
        return Split(c.side, c.dim, s, True, k, chain)
    return (
        f"chunked{k}: the {rows} rows per device of the scattered dim {s} of {z} do not "
        f"divide into {k} chunks, nor does another free dimension of the product"
    )


def slice_along(e: Emitter, x: Value, dim: int, start: int, stop: int) -> Value:
    """`x[start:stop]` along dimension `dim`."""
    shape = x.type.shape
    return e.op1(
        "slice",
        [x],
        start_indices=tuple(start if i == dim else 0 for i in range(len(shape))),
        limit_indices=tuple(stop if i == dim else s for i, s in enumerate(shape)),
        strides=(1,) * len(shape),
    )


def _split_dim(e: Emitter, x: Value, dim: int, parts: tuple[int, ...]) -> Value:
    """`x` with dimension `dim` split into `parts` (row-major)."""
    shape = x.type.shape
    return e.op1("reshape", [x], shape=shape[:dim] + parts + shape[dim + 1 :])


def _after(e: Emitter, value: Value, previous: Value) -> tuple[Value, Value]:
    """`value` and `previous` through one identity barrier: what is computed from the first
    waits for the second."""
    v, p = e.op("optimization_barrier", [value, previous])
    return v, p


def all_gather_dot(c, get, sp: Split) -> tuple[list[Op], Value]:
    """y = dot(all_gather(x), w) as k chunks: y_c = dot(all_gather(x_c), w)."""
    e = Emitter(c.dot.loc)
    x, other = get(c.collective.operands[0]), get(c.dot.operands[1 - c.side])
    m = x.type.shape[sp.dim] // sp.k
    pieces, gathered = [], []
    for i in range(sp.k):
        xc = slice_along(e, x, sp.dim, i * m, (i + 1) * m)
        if sp.chained and gathered:
            # chunk i's all-gather starts once chunk i-1's has arrived; chunk i-1's dot
            # runs beside it
            xc, gathered[-1] = _after(e, xc, gathered[-1])
        gathered.append(e.op1("all_gather", [xc], **dict(c.collective.attrs)))
    for gc in gathered:
        pieces.append(e.dot(c.dot, c.side, gc, other))
    if not sp.interleaved:
        # the all-gather and the dot act on every index of the cut dimension alike
        return e.ops, e.op1("concatenate", pieces, dimension=sp.out_dim)
    # y_c's rows (dev, i) are y's rows dev*R + c*m + i: y = (n, k*m) from the (n, m) blocks
    od, n = sp.out_dim, c.n
    blocks = [_split_dim(e, y, od, (n, m)) for y in pieces]
    joined = e.op1("concatenate", blocks, dimension=od + 1)
    return e.ops, e.op1("reshape", [joined], shape=c.dot.results[0].type.shape)


def dot_reduce_scatter(c, get, sp: Split) -> tuple[list[Op], Value]:
    """reduce_scatter(dot(a, w)) as k chunks: y_c = reduce_scatter(dot(a_c, w))."""
    e = Emitter(c.collective.loc)
    sliced, other = get(c.dot.operands[sp.side]), get(c.dot.operands[1 - sp.side])
    shape = sliced.type.shape
    size = shape[sp.dim]
    if sp.interleaved:
        m = size // (c.n * sp.k)
        parts = _split_dim(e, sliced, sp.dim, (c.n, sp.k, m))
    pieces = []
    for i in range(sp.k):
        if sp.interleaved:
            # rows dev*R + i*m + j of the n*R: index i of the k axis of (n, k, m)
            one = slice_along(e, parts, sp.dim + 1, i, i + 1)
            piece = e.op1(
                "reshape", [one], shape=shape[: sp.dim] + (c.n * m,) + shape[sp.dim + 1 :]
            )
        else:
            m = size // sp.k
            piece = slice_along(e, sliced, sp.dim, i * m, (i + 1) * m)
        zc = e.dot(c.dot, sp.side, piece, other)
        if sp.chained and pieces:
            # chunk i's reduce-scatter starts once chunk i-1's has finished; chunk i's dot
            # ran beside that one
            zc, pieces[-1] = _after(e, zc, pieces[-1])
        pieces.append(e.op1("reduce_scatter", [zc], **dict(c.collective.attrs)))
    # device p's rows of chunk c are its result's rows c*m + j (interleaved), or the chunks
    # are the cut dimension's consecutive blocks: in order either way
    return e.ops, e.op1("concatenate", pieces, dimension=sp.out_dim)
