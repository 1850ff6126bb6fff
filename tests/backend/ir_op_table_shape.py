"""Cases for the data-movement, reduction, contraction and indexing ops, each with the result
NumPy gives for it (independent of the IR's reference rules)."""

from __future__ import annotations

import numpy as np
from ir_op_cases import BF16, C64, F16, F32, F64, PRED, RTOL, S8, S32, S64, U8, Case, rng_for
from lowering_harness import scalar_region
from tolerance import dot_tol
from purejit.ir import Builder, TensorType

DTYPES = (F32, BF16, F16, S32, U8, PRED, C64)


def rand(shape, dt, key=""):
    dt = np.dtype(dt)
    rng = rng_for("rand", shape, dt, key)
    if dt == PRED:
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -50), min(info.max, 100), shape).astype(dt)
    if dt.kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dt)
    return rng.normal(size=shape).astype(dt)


def _same(fn):
    return lambda *xs: [np.asarray(fn(*xs))]


def shape_cases() -> list[Case]:
    cases = []
    for dt in DTYPES:
        x = rand((2, 3, 4), dt)
        cases += [
            Case(
                "broadcast_in_dim",
                [rand((3, 1), dt)],
                _same(lambda v: np.broadcast_to(v, (2, 3, 5))),
                {"shape": (2, 3, 5), "broadcast_dimensions": (1, 2)},
                label=f"expand,{dt}",
            ),
            Case(
                "broadcast_in_dim",
                [rand((3, 4), dt)],
                _same(lambda v: np.broadcast_to(v.T[:, None, :], (4, 2, 3))),
                {"shape": (4, 2, 3), "broadcast_dimensions": (2, 0)},
                label=f"permuted,{dt}",
            ),
            Case(
                "broadcast_in_dim",
                [rand((), dt)],
                _same(lambda v: np.broadcast_to(v, (4, 2))),
                {"shape": (4, 2), "broadcast_dimensions": ()},
                label=f"scalar,{dt}",
            ),
            Case("reshape", [x], _same(lambda v: v.reshape(4, 6)), {"shape": (4, 6)}),
            Case(
                "reshape", [x], _same(lambda v: v.reshape(24)), {"shape": (24,)}, label=f"flat,{dt}"
            ),
            Case(
                "transpose", [x], _same(lambda v: v.transpose(2, 0, 1)), {"permutation": (2, 0, 1)}
            ),
            Case(
                "slice",
                [x],
                _same(lambda v: v[1:2, 0:3:2, 1:4:3]),
                {"start_indices": (1, 0, 1), "limit_indices": (2, 3, 4), "strides": (1, 2, 3)},
            ),
            Case(
                "concatenate",
                [x, rand((2, 1, 4), dt, "b"), rand((2, 2, 4), dt, "c")],
                _same(lambda *v: np.concatenate(v, axis=1)),
                {"dimension": 1},
            ),
            Case("reverse", [x], _same(lambda v: v[::-1, :, ::-1]), {"dimensions": (0, 2)}),
            Case(
                "constant",
                [],
                lambda dt=dt: [rand((2, 3), dt, "k")],
                {"value": rand((2, 3), dt, "k")},
            ),
            Case(
                "constant",
                [],
                lambda dt=dt: [rand((40,), dt, "big")],
                {"value": rand((40,), dt, "big")},
                label=f"large,{dt}",
            ),
        ]
        cases += _pad_cases(x, dt)
        if dt != PRED:  # StableHLO's iota has no pred form (IR rejects it too)
            cases.append(
                Case(
                    "iota",
                    [],
                    lambda dt=dt: [np.broadcast_to(np.arange(4), (3, 4)).astype(dt)],
                    {"shape": (3, 4), "dtype": dt, "dimension": 1},
                    label=str(dt),
                )
            )
    return cases


def _pad_cases(x, dt):
    v = rand((), dt, "pad")

    def interior_then_edges(x, v):
        # interior 1 on dim 0, 2 on dim 2; then edges (1,0), (0,2), (-1,-2): negative crops
        y = np.full((3, 3, 10), v, dt)
        y[::2, :, ::3] = x
        y = np.pad(y, [(1, 0), (0, 2), (0, 0)], constant_values=v)
        return [y[:, :, 1:-2]]

    attrs = {"edge_padding_low": (1, 0, -1), "edge_padding_high": (0, 2, -2),
             "interior_padding": (1, 0, 2)}  # fmt: skip
    return [Case("pad", [x, v], interior_then_edges, attrs, label=str(dt))]


# ---- reduce ------------------------------------------------------------------------------

_REDUCE = {
    "add": (lambda x, ax: np.sum(x, axis=ax), 0),
    "multiply": (lambda x, ax: np.prod(x, axis=ax), 1),
    "maximum": (lambda x, ax: np.max(x, axis=ax), "min"),
    "minimum": (lambda x, ax: np.min(x, axis=ax), "max"),
    "and": (lambda x, ax: np.bitwise_and.reduce(x, axis=ax), -1),
    "or": (lambda x, ax: np.bitwise_or.reduce(x, axis=ax), 0),
    "xor": (lambda x, ax: np.bitwise_xor.reduce(x, axis=ax), 0),
}


def _identity(kind, dt):
    v = _REDUCE[kind][1]
    dt = np.dtype(dt)
    if v in ("min", "max"):
        if dt == PRED:
            return np.array(v == "max")
        if dt.kind in "iu":
            return np.array(getattr(np.iinfo(dt), v), dt)
        return np.array(-np.inf if v == "min" else np.inf).astype(dt)
    if dt == PRED:
        return np.array(bool(v))
    return np.array(v).astype(dt) if v != -1 or dt.kind == "i" else np.array(np.iinfo(dt).max, dt)


def reduce_cases() -> list[Case]:
    cases = []
    for dt in (F32, BF16, F16, S32, U8, PRED, F64, S64):
        x = rand((3, 4, 5), dt, "red")
        if np.dtype(dt).kind == "f" or dt == BF16:
            x.reshape(-1)[:4] = [0.0, -0.0, np.nan, np.inf]
        for kind, (fn, _) in _REDUCE.items():
            if kind in ("and", "or", "xor") and np.dtype(dt).kind not in "iub":
                continue
            if kind in ("add", "multiply") and dt == PRED:
                continue
            init = _identity(kind, dt)

            def exp(x, init, fn=fn, dt=dt):
                wide = x.astype(np.float64) if x.dtype.kind == "f" or x.dtype == BF16 else x
                return [np.asarray(fn(wide, (0, 2))).astype(dt)]

            rtol = RTOL.get(np.dtype(dt), 0.0) * (4 if kind in ("add", "multiply") else 1)
            cases.append(
                Case(
                    "reduce",
                    [x, init],
                    exp,
                    {"dimensions": (0, 2)},
                    (scalar_region(kind, dt),),
                    rtol=rtol,
                    atol=rtol,
                    signed_zeros=kind not in ("add", "multiply"),
                    label=f"{kind},{dt}",
                )
            )
    cases.append(_argmax_case())
    cases.append(_complex_sum_case())
    cases += _complex_minmax_cases()
    return cases


def _argmax_region() -> object:
    """(value, index) pairs: the larger value wins, ties go to the smaller index."""
    b = Builder("argmax")
    f, i = TensorType((), F32), TensorType((), S32)
    av, ai, bv, bi = b.param(f), b.param(i), b.param(f), b.param(i)
    (gt,) = b.op("compare", [av, bv], {"comparison_direction": "GT"})
    (eq,) = b.op("compare", [av, bv], {"comparison_direction": "EQ"})
    (lt,) = b.op("compare", [ai, bi], {"comparison_direction": "LT"})
    (tie,) = b.op("and", [eq, lt])
    (pick,) = b.op("or", [gt, tie])
    (v,) = b.op("select", [pick, av, bv])
    (ix,) = b.op("select", [pick, ai, bi])
    return b.finish([v, ix])


def _argmax_case() -> Case:
    x = rand((4, 7), F32, "argmax")
    x[1, 2] = x[1, 5] = 9.0  # a tie: the first index wins
    idx = np.broadcast_to(np.arange(7, dtype=np.int32), (4, 7)).copy()
    args = [x, idx, np.array(-np.inf, F32), np.array(0, S32)]
    exp = lambda x, i, *_: [x.max(1), x.argmax(1).astype(S32)]  # noqa: E731
    return Case("reduce", args, exp, {"dimensions": (1,)}, (_argmax_region(),), label="argmax")


def _complex_sum_case() -> Case:
    x = rand((3, 8), C64, "csum")
    exp = lambda x, i: [x.astype(np.complex128).sum(1).astype(C64)]  # noqa: E731
    return Case(
        "reduce",
        [x, np.array(0, C64)],
        exp,
        {"dimensions": (1,)},
        (scalar_region("add", C64),),
        rtol=1e-5,
        atol=1e-5,
        label="add,c64",
    )


def _complex_minmax_cases() -> list[Case]:
    """Complex max/min order (real, imag) lexicographically, as JAX does."""
    x = np.array([[1 + 2j, 1 + 3j, 0.5 + 9j], [2 - 1j, 2 - 2j, -1 + 0j]], C64)
    out = []
    for kind, want in (("maximum", [1 + 3j, 2 - 1j]), ("minimum", [0.5 + 9j, -1 + 0j])):
        init = np.array(-np.inf if kind == "maximum" else np.inf, C64)
        exp = (lambda w: lambda x, i: [np.array(w, C64)])(want)
        out.append(Case("reduce", [x, init], exp, {"dimensions": (1,)},
                        (scalar_region(kind, C64),), label=f"{kind},c64"))  # fmt: skip
    return out


# ---- dot_general -------------------------------------------------------------------------


def dot_cases() -> list[Case]:
    cases = []
    batched = {"lhs_batching_dimensions": (0,), "rhs_batching_dimensions": (0,),
               "lhs_contracting_dimensions": (2,), "rhs_contracting_dimensions": (1,)}  # fmt: skip
    outer = {k: () for k in batched}
    for dt in (F32, BF16, F16, S32, S8, C64, F64):
        a, b = rand((2, 3, 4), dt, "l"), rand((2, 4, 5), dt, "r")
        rtol = RTOL.get(np.dtype(dt), 0.0) * 8
        if dt in (F32, C64):  # TF32 products on GPU (cuBLAS runs complex64 matmuls so too)
            rtol = dot_tol(rtol)["rtol"]
        w = (
            (lambda v: v.astype(np.complex128 if v.dtype.kind == "c" else np.float64))
            if rtol
            else None
        )

        def exp(a, b, dt=dt, w=w):
            return [np.einsum("bij,bjk->bik", *((w(a), w(b)) if w else (a, b))).astype(dt)]

        cases.append(Case("dot_general", [a, b], exp, batched, rtol=rtol, atol=rtol, label=str(dt)))
        u, v = rand((3, 2), dt, "u"), rand((4,), dt, "v")
        cases.append(
            Case(
                "dot_general",
                [u, v],
                lambda u, v: [np.multiply.outer(u, v)],
                outer,
                rtol=rtol,
                atol=rtol,
                label=f"outer,{dt}",
            )
        )
    a, b = rand((2, 3, 4), PRED, "l"), rand((2, 4, 5), PRED, "r")
    as_int = lambda a, b: [np.einsum("bij,bjk->bik", a.astype(int), b.astype(int)) > 0]  # noqa: E731
    cases.append(Case("dot_general", [a, b], as_int, batched, label="pred: or of ands"))
    return cases


# ---- dynamic_slice / dynamic_update_slice -------------------------------------------------


def _clamped(starts, shape, sizes):
    return [min(max(int(s), 0), d - n) for s, d, n in zip(starts, shape, sizes)]


def indexing_cases() -> list[Case]:
    cases = []
    for dt in (F32, BF16, S32, U8, PRED, C64):
        x = rand((4, 5, 6), dt, "dyn")
        upd = rand((2, 3, 2), dt, "upd")
        for st, idt in (((0, 0, 0), S32), ((1, 2, 3), S32), ((-1, 9, 4), S32), ((3, 200, 1), U8),
                        ((2, -(2**40), 5), S64), ((1, 1, 100), S8)):  # fmt: skip
            if dt != F32 and st not in ((1, 2, 3), (-1, 9, 4)):
                continue  # every kind of start on f32; in range and clamped on the others
            starts = [np.array(s, idt) for s in st]

            def ds(x, *s):
                a, b, c = _clamped(s, x.shape, (2, 3, 2))
                return [x[a : a + 2, b : b + 3, c : c + 2].copy()]

            def dus(x, u, *s):
                a, b, c = _clamped(s, x.shape, u.shape)
                y = x.copy()
                y[a : a + 2, b : b + 3, c : c + 2] = u
                return [y]

            lab = f"{st},{dt}"
            cases.append(
                Case("dynamic_slice", [x, *starts], ds, {"slice_sizes": (2, 3, 2)}, label=lab)
            )
            cases.append(Case("dynamic_update_slice", [x, upd, *starts], dus, label=lab))
    return cases


def all_shape_cases() -> list[Case]:
    return (
        shape_cases()
        + reduce_cases()
        + dot_cases()
        + indexing_cases()
        + conv_cases()
        + random_cases()
    )


def random_cases() -> list[Case]:
    """threefry2x32 on the known-answer vectors of Random123 (Threefry-2x32, 20 rounds):
    (key words, counter words) -> hashed words."""
    kat = [
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 2, (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ]
    u32 = np.dtype(np.uint32)
    k1, k2, x1, x2, y1, y2 = (np.array(col, u32) for col in zip(*(a + b + c for a, b, c in kat)))
    return [Case("threefry2x32", [k1, k2, x1, x2], lambda *_: [y1, y2], {}, label="kat")]


# ---- convolution ----------------------------------------------------------------------------


def _naive_conv(x, w, stride, pads, lhs_dil, rhs_dil, groups):
    """NCHW x OIHW -> NCHW by explicit loops over output positions, in float64."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, *sp = x.shape
    o, ci, *ks = w.shape
    dil = np.zeros((n, c, *[(d - 1) * ld + 1 for d, ld in zip(sp, lhs_dil)]))
    dil[(slice(None), slice(None), *[slice(None, None, ld) for ld in lhs_dil])] = x
    for ax, (lo, hi) in enumerate(pads, start=2):
        widths = [(0, 0)] * dil.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        dil = np.pad(dil, widths)
        index = [slice(None)] * dil.ndim
        index[ax] = slice(max(-lo, 0), dil.shape[ax] - max(-hi, 0))
        dil = dil[tuple(index)]
    ext = [(k - 1) * r + 1 for k, r in zip(ks, rhs_dil)]
    out_sp = [(d - e) // s + 1 for d, e, s in zip(dil.shape[2:], ext, stride)]
    out = np.zeros((n, o, *out_sp))
    per = o // groups
    for b in range(n):
        for f in range(o):
            g = f // per
            for pos in np.ndindex(*out_sp):
                acc = 0.0
                for tap in np.ndindex(*ks):
                    at = [p * s + t * r for p, s, t, r in zip(pos, stride, tap, rhs_dil)]
                    acc += dil[(b, slice(g * ci, (g + 1) * ci), *at)] @ w[(f, slice(None), *tap)]
                out[(b, f, *pos)] = acc
    return out


def conv_cases() -> list[Case]:
    cases = []
    nchw = {"input_batch_dimension": 0, "input_feature_dimension": 1,
            "input_spatial_dimensions": (2, 3), "kernel_output_feature_dimension": 0,
            "kernel_input_feature_dimension": 1, "kernel_spatial_dimensions": (2, 3),
            "output_batch_dimension": 0, "output_feature_dimension": 1,
            "output_spatial_dimensions": (2, 3), "batch_group_count": 1}  # fmt: skip
    for dt, label, stride, pads, ld, rd, groups in (
        (F32, "plain", (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1),
        (F32, "strided,padded,dilated", (2, 1), ((1, 2), (0, -1)), (2, 1), (1, 2), 1),
        (F32, "feature groups", (1, 2), ((1, 1), (1, 1)), (1, 1), (1, 1), 2),
        (F64, "f64", (1, 1), ((1, 0), (0, 1)), (1, 1), (1, 1), 1),
        (BF16, "bf16", (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1),
    ):
        x, w = rand((2, 4, 5, 6), dt, "cx"), rand((6, 4 // groups, 3, 2), dt, "cw")
        attrs = dict(nchw, window_strides=stride, padding=pads, lhs_dilation=ld,
                     rhs_dilation=rd, feature_group_count=groups)  # fmt: skip

        def exp(x, w, a=attrs, dt=dt):
            out = _naive_conv(x, w, a["window_strides"], a["padding"], a["lhs_dilation"],
                              a["rhs_dilation"], a["feature_group_count"])  # fmt: skip
            return [out.astype(dt)]

        tol = 2e-2 if dt == BF16 else 1e-5
        cases.append(Case("convolution", [x, w], exp, attrs, rtol=tol, atol=tol, label=label))
    return cases
