"""jax.lax's collectives that purejit composes from `parallel.py`'s (for shard_map bodies):

    pshuffle(x, axis_name, perm)       ppermute with perm[i] the source of index i
    pswapaxes(x, axis_name, axis)      all_to_all(x, axis_name, axis, axis)
    pbroadcast(x, axis_name, source)   psum of x masked to the source (JAX's own definition)
    psend / precv                      a ppermute split in a sending and a receiving half
    ragged_all_to_all(...)             all_to_all of ragged slices, by dense blocks
    create_token, after_all            the tokens psend returns and precv reads

JAX runs pbroadcast, psend/precv and ragged_all_to_all only on GPU or TPU; these run wherever
shard_map does. A `Token` carries what a psend sent, so the precv reading it (after
`after_all` merged tokens, or an `optimization_barrier` passed one along) receives exactly
ppermute's result: the value of the device pairing it in `perm`, zeros elsewhere.
"""

from __future__ import annotations

import numpy as np

from purejit import errors
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.lax.elementwise import add, eq, lt
from purejit.lax.ops import broadcast_in_dim, broadcasted_iota, concatenate, full, reshape, select
from purejit.lax.ops import slice as _slice
from purejit.lax.parallel import all_to_all, axis_index, axis_size, ppermute, psum
from purejit.lax.slicing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather,
    scatter,
)
from purejit.tree_util import register_pytree_node, tree_flatten, tree_map


def _where() -> str:
    return errors.at(errors.user_location())


def pshuffle(x, axis_name, perm):
    """ppermute with `perm` listing, for each axis index i, the index its value comes from
    (as `jax.lax.pshuffle`)."""
    perm = [int(p) for p in perm]
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def pswapaxes(x, axis_name, axis: int, *, axis_index_groups=None):
    """Swap the mapped axis `axis_name` with the unmapped `axis` of x (whose size is the
    axis size), as `jax.lax.pswapaxes`: all_to_all(x, axis_name, axis, axis)."""
    if axis_index_groups is not None:
        raise NotImplementedError(
            "lax.pswapaxes: axis_index_groups (all_to_all over subgroups) is not supported; "
            "split the mesh axis instead"
        )
    return all_to_all(x, axis_name, axis, axis)


def pbroadcast(x, axis_name, source: int):
    """Every device along `axis_name` gets the value of the device at index `source`, as
    `jax.lax.pbroadcast` (psum of x masked to the source: exact, as only one term is
    nonzero)."""
    n = axis_size(axis_name)
    if not 0 <= int(source) < n:
        raise ValueError(f"pbroadcast: source {source} out of range for axis size {n}")
    me = eq(axis_index(axis_name), np.int32(source))

    def one(leaf):
        v = _lift(leaf)
        wide = convert(v, np.int32) if v.dtype == np.bool_ else v
        out = psum(select(me, wide, full(wide.shape, np.zeros((), wide.dtype))), axis_name)
        return convert(out, np.bool_) if v.dtype == np.bool_ else out

    return tree_map(one, x)


# ---- tokens, psend / precv ----------------------------------------------------------------------


class Token:
    """An ordering token (as `jax.lax.create_token` gives): a pytree whose leaves are the
    values psends sent through it, for the precv that reads it."""

    def __init__(self, sent: tuple = ()):
        self.sent = tuple(sent)  # ((axis_name, perm, value), ...)

    def __repr__(self):
        return f"Token(carrying {len(self.sent)} send{'s' if len(self.sent) != 1 else ''})"


register_pytree_node(
    Token,
    lambda t: ([v for _, _, v in t.sent], tuple((a, p) for a, p, _ in t.sent)),
    lambda aux, values: Token(tuple((a, p, v) for (a, p), v in zip(aux, values))),
)


def create_token(_=None) -> Token:
    """A token with no preconditions, as `jax.lax.create_token` (the argument is ignored)."""
    return Token()


def after_all(*operands) -> Token:
    """One token after all of `operands` (tokens), as `jax.lax.after_all`."""
    sent = []
    for t in operands:
        if not isinstance(t, Token):
            raise TypeError(f"after_all takes tokens, got {type(t).__name__}{_where()}")
        sent.extend(t.sent)
    return Token(tuple(sent))


def _perm(perm) -> tuple:
    return tuple((int(s), int(t)) for s, t in perm)


def psend(x, axis_name, perm) -> Token:
    """Send each device's `x` to the device `perm` pairs it with along `axis_name`, as
    `jax.lax.psend`; returns the token the matching `precv` reads."""
    axis = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else axis_name
    leaves, _ = tree_flatten(x)
    sent = tuple((axis, _perm(perm), ppermute(_lift(v), axis_name, perm)) for v in leaves)
    return Token(sent)


def precv(token: Token, out_shape, axis_name, perm):
    """Receive, of `out_shape` (anything with shape and dtype), what the `psend` behind
    `token` sent with the same `axis_name` and `perm`, as `jax.lax.precv`: devices that no
    pair targets receive zeros."""
    if not isinstance(token, Token):
        raise TypeError(f"precv: the first argument must be a token, got {type(token).__name__}")
    axis = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else axis_name
    shape, dtype = tuple(out_shape.shape), np.dtype(out_shape.dtype)
    for a, p, v in token.sent:
        if a == axis and p == _perm(perm) and tuple(v.shape) == shape and v.dtype == dtype:
            return v
    raise ValueError(
        f"precv: the token carries no psend over {axis_name!r} with perm {list(perm)} of "
        f"{dtype.name}{list(shape)}{_where()}; pass the token that psend returned"
    )


# ---- ragged_all_to_all ---------------------------------------------------------------------------


def _rows(operand, start, size, m: int):
    """operand[start + k] for k < m, zeroed where k >= size (start, size: int32 scalars)."""
    k = broadcasted_iota(np.int32, (m,), 0)
    idx = reshape(add(k, start), (m, 1))
    rest = tuple(operand.shape[1:])
    dn = GatherDimensionNumbers(
        offset_dims=tuple(range(1, operand.ndim)), collapsed_slice_dims=(0,), start_index_map=(0,)
    )
    rows = gather(operand, idx, dn, (1, *rest), mode=GatherScatterMode.CLIP)
    keep = broadcast_in_dim(lt(k, size), (m, *rest), (0,))
    return select(keep, rows, full((m, *rest), np.zeros((), operand.dtype)))


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
                      *, axis_name, axis_index_groups=None):  # fmt: skip
    """The all_to_all of ragged slices (as `jax.lax.ragged_all_to_all`): slice i of this
    device's `operand` (rows input_offsets[i] .. + send_sizes[i]) goes to axis index
    i // (N / axis size), landing at rows output_offsets[i] there; the result is `output`
    with the received slices written (recv_sizes[i] rows of the i-th one)."""
    if axis_index_groups is not None:
        raise NotImplementedError("lax.ragged_all_to_all: axis_index_groups is not supported")
    x, out = _lift(operand), _lift(output)
    offs = [_lift(v) for v in (input_offsets, send_sizes, output_offsets, recv_sizes)]
    if x.dtype != out.dtype or x.shape[1:] != out.shape[1:]:
        raise errors.PurejitTypeError(
            f"ragged_all_to_all: operand {x.aval} and output {out.aval} must share a dtype and "
            f"their trailing dims{_where()}"
        )
    if len({o.shape for o in offs}) != 1 or offs[0].ndim != 1:
        raise errors.PurejitTypeError(
            f"ragged_all_to_all: offsets and sizes must be 1-D of one length, got "
            f"{[o.aval.str_short() for o in offs]}{_where()}"
        )
    n_slices, n = offs[0].shape[0], axis_size(axis_name)
    if n_slices % n:
        raise ValueError(
            f"ragged_all_to_all: {n_slices} slices is not a multiple of the axis size {n}"
        )
    in_off, send, out_off, recv = (convert(o, np.int32) for o in offs)
    m, rest = x.shape[0], tuple(x.shape[1:])

    def at(v, i):
        return reshape(_slice1(v, i), ())

    # one dense block of m rows per slice, then blocks of N / n slices to each device
    blocks = [reshape(_rows(x, at(in_off, i), at(send, i), m), (1, m, *rest))
              for i in range(n_slices)]  # fmt: skip
    got = all_to_all(concatenate(blocks, 0), axis_name, 0, 0, tiled=True)
    where = all_to_all(out_off, axis_name, 0, 0, tiled=True)
    result = out
    r = out.shape[0]
    dn = ScatterDimensionNumbers(
        update_window_dims=tuple(range(1, x.ndim)),
        inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,),
    )
    k = broadcasted_iota(np.int32, (m,), 0)
    for i in range(n_slices):
        # rows past the slice's size aim out of bounds, which the scatter drops
        pos = select(lt(k, at(recv, i)), add(k, at(where, i)), full((m,), np.int32(r)))
        chunk = reshape(_slice1(got, i), (m, *rest))
        result = scatter(result, reshape(pos, (m, 1)), chunk, dn,
                         mode=GatherScatterMode.FILL_OR_DROP)  # fmt: skip
    return result


def _slice1(v, i: int):
    return _slice(v, (i,) + (0,) * (v.ndim - 1), (i + 1, *v.shape[1:]))
