"""The parts of the linalg lowerings (`linalg.py`) written with IR ops on a `Builder` rather
than as library calls: the row-swap loop that turns LU pivots into a permutation, the empty
SVD, complex conjugation, the unpacking of cuSOLVER's packed conjugate-pair eigenvectors, and
the iota masks of the Hessenberg form.

Apart from `linalg.py`, which keeps the `@lowering` rules (they must live in the family's own
module) and each one's choice of kernel per platform; these builders emit no custom calls.
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._lapack_ffi import _cmp, _const, _splat
from purejit.ir import Builder, TensorType


# ---- lu: pivots to a permutation ---------------------------------------------------------------


def _permutation_loop(b: Builder, pivots, size: int):
    """The permutation the row swaps `pivots` make, as a `while` loop over the swaps."""
    pt = pivots.type
    batch, k = pt.shape[:-1], pt.shape[-1]
    nb = len(batch)
    perm_t = TensorType(batch + (size,), np.int32)
    s32 = TensorType((), np.int32)
    iota = b.op("iota", [], {"shape": perm_t.shape, "dtype": np.dtype(np.int32), "dimension": nb})
    if k == 0 or size == 0:
        return iota[0]

    cond = Builder("swaps_left")
    i, _, _ = (cond.param(t) for t in (s32, perm_t, pt))
    cond_out = cond.finish([_cmp(cond, i, _const(cond, k, np.int32), "LT")])

    body = Builder("swap")
    i, perm, piv = (body.param(t) for t in (s32, perm_t, pt))
    if nb == 0:
        body_out = _swap_one(body, i, perm, piv)
        start = _const(b, 0, np.int32)
        _, out = b.op("while", [start, iota[0], pivots], {}, [cond_out, body_out])
        return out
    zero = _const(body, 0, np.int32)
    starts = [zero] * nb + [i]
    col = {"slice_sizes": batch + (1,)}
    widen = {"shape": perm_t.shape, "broadcast_dimensions": tuple(range(nb + 1))}
    p = body.op("broadcast_in_dim", body.op("dynamic_slice", [piv, *starts], col), widen)[0]
    at_p = _cmp(
        body,
        body.op("iota", [], {"shape": perm_t.shape, "dtype": np.dtype(np.int32), "dimension": nb})[
            0
        ],
        p,
        "EQ",
    )
    ib = body.op("broadcast_in_dim", [i], {"shape": perm_t.shape, "broadcast_dimensions": ()})[0]
    at_i = _cmp(
        body,
        body.op("iota", [], {"shape": perm_t.shape, "dtype": np.dtype(np.int32), "dimension": nb})[
            0
        ],
        ib,
        "EQ",
    )
    perm_i = body.op("broadcast_in_dim", body.op("dynamic_slice", [perm, *starts], col), widen)[0]
    # perm[p] as a masked sum along the row (p differs per batch element)
    add = Builder("add")
    x, y = add.param(s32), add.param(s32)
    add_fn = add.finish(add.op("add", [x, y]))
    masked = body.op("select", [at_p, perm, _splat(body, 0, perm_t)])[0]
    perm_p = body.op("reduce", [masked, zero], {"dimensions": (nb,)}, [add_fn])[0]
    perm_p = body.op(
        "broadcast_in_dim",
        [perm_p],
        {"shape": perm_t.shape, "broadcast_dimensions": tuple(range(nb))},
    )[0]
    # swap: perm[i] <- perm[p], perm[p] <- perm[i]
    swapped = body.op("select", [at_p, perm_i, perm])[0]
    swapped = body.op("select", [at_i, perm_p, swapped])[0]
    one = _const(body, 1, np.int32)
    body_out = body.finish([body.op("add", [i, one])[0], swapped])

    start = _const(b, 0, np.int32)
    _, out = b.op("while", [start, iota[0], pivots], {}, [cond_out, body_out])
    return out


def _swap_one(body: Builder, i, perm, piv):
    """One step for a single permutation: swap perm[i] and perm[piv[i]] (scalar slices)."""
    one = {"slice_sizes": (1,)}
    scalar = {"shape": ()}
    p = body.op("reshape", body.op("dynamic_slice", [piv, i], one), scalar)[0]
    perm_i = body.op("dynamic_slice", [perm, i], one)[0]
    perm_p = body.op("dynamic_slice", [perm, p], one)[0]
    perm = body.op("dynamic_update_slice", [perm, perm_p, i])[0]
    perm = body.op("dynamic_update_slice", [perm, perm_i, p])[0]
    return body.finish([body.op("add", [i, _const(body, 1, np.int32)])[0], perm])


# ---- svd ---------------------------------------------------------------------------------------


def _svd_empty(b: Builder, result_types):
    outs = [_splat(b, 0, result_types[0])]
    for r in result_types[1:]:
        n = r.rank
        rows = b.op("iota", [], {"shape": r.shape, "dtype": np.dtype(np.int32), "dimension": n - 2})
        cols = b.op("iota", [], {"shape": r.shape, "dtype": np.dtype(np.int32), "dimension": n - 1})
        outs.append(b.op("convert", [_cmp(b, rows[0], cols[0], "EQ")], {"dtype": r.dtype})[0])
    return outs


def _conj(b: Builder, x):
    """Complex conjugate with the IR's ops: real(x) - i imag(x)."""
    re = b.op("convert", b.op("real", [x]), {"dtype": x.type.dtype})[0]
    im = b.op("convert", b.op("imag", [x]), {"dtype": x.type.dtype})[0]
    (prod,) = b.op("multiply", [im, _splat(b, 1j, x.type)])
    (out,) = b.op("subtract", [re, prod])
    return out


# ---- eig ---------------------------------------------------------------------------------------


def _unpack_conjugate_pairs(b: Builder, w, vr):
    """cuSOLVER's real geev packs a conjugate pair's eigenvectors as (re, im) in adjacent
    columns; spell them out as complex columns (what JAX's lowering does)."""
    t = vr.type
    cdt = w.type.dtype
    nb = t.rank - 2
    n = t.shape[-1]
    zero_r = _splat(b, 0, TensorType(w.type.shape, t.dtype))
    is_real = _cmp(b, b.op("imag", [w])[0], zero_r, "EQ")
    # the parity of the complex eigenvalues seen so far marks where each pair starts
    ones = b.op("convert", [b.op("not", [is_real])[0]], {"dtype": np.dtype(np.int32)})[0]
    tri = b.op("constant", [], {"value": np.triu(np.ones((n, n), np.int32))})[0]
    count = b.op(
        "dot_general",
        [ones, tri],
        {
            "lhs_batching_dimensions": (),
            "rhs_batching_dimensions": (),
            "lhs_contracting_dimensions": (nb,),
            "rhs_contracting_dimensions": (0,),
            "preferred_element_type": None,
        },
    )[0]
    odd = b.op("and", [count, _splat(b, 1, count.type)])[0]
    start = _cmp(b, odd, _splat(b, 1, odd.type), "EQ")
    wide = {"shape": t.shape, "broadcast_dimensions": tuple(range(nb)) + (nb + 1,)}
    is_real_b = b.op("broadcast_in_dim", [is_real], wide)[0]
    start_b = b.op("broadcast_in_dim", [start], wide)[0]
    zero = _const(b, 0, t.dtype)
    no_pad = (0,) * (t.rank - 1)
    left = b.op(
        "pad",
        [vr, zero],
        {
            "edge_padding_low": no_pad + (-1,),
            "edge_padding_high": no_pad + (1,),
            "interior_padding": (0,) * t.rank,
        },
    )[0]
    right = b.op(
        "pad",
        [vr, zero],
        {
            "edge_padding_low": no_pad + (1,),
            "edge_padding_high": no_pad + (-1,),
            "interior_padding": (0,) * t.rank,
        },
    )[0]
    re = b.op("select", [b.op("or", [is_real_b, start_b])[0], vr, right])[0]
    im = b.op("select", [start_b, left, b.op("negate", [vr])[0]])[0]
    im = b.op("select", [is_real_b, _splat(b, 0, t), im])[0]
    re_c = b.op("convert", [re], {"dtype": cdt})[0]
    im_c = b.op("convert", [im], {"dtype": cdt})[0]
    im_c = b.op("multiply", [im_c, _splat(b, 1j, TensorType(t.shape, cdt))])[0]
    return [b.op("add", [re_c, im_c])[0]]


# ---- hessenberg --------------------------------------------------------------------------------


def _iotas(b: Builder, shape):
    n = len(shape)
    s32 = np.dtype(np.int32)
    rows = b.op("iota", [], {"shape": shape, "dtype": s32, "dimension": n - 2})[0]
    cols = b.op("iota", [], {"shape": shape, "dtype": s32, "dimension": n - 1})[0]
    return rows, cols


def _upper_hessenberg(b: Builder, x):
    """x with the entries below its first subdiagonal zeroed."""
    rows, cols = _iotas(b, x.type.shape)
    below = b.op("add", [cols, _splat(b, 1, cols.type)])[0]
    keep = _cmp(b, rows, below, "LE")
    return b.op("select", [keep, x, _splat(b, 0, x.type)])[0]


def _identity_like(b: Builder, t: TensorType):
    rows, cols = _iotas(b, t.shape)
    return b.op("convert", [_cmp(b, rows, cols, "EQ")], {"dtype": t.dtype})[0]
