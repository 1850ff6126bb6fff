"""StableHLO lowering of the linalg family (`ir/ops/linalg.py`), chosen by platform.

The platform is the emission context's `platform` when set (tests emit GPU modules on a
CPU host that way), else the default device's. Each op lowers as JAX 0.10-0.11 lowers it,
so XLA runs the same library kernels:

- cholesky: CPU `lapack_?potrf_ffi`; CUDA/ROCm `cusolver_potrf_ffi`; elsewhere
  `stablehlo.cholesky`.
- triangular_solve: CPU `lapack_?trsm_ffi`; elsewhere `stablehlo.triangular_solve` (cuBLAS
  trsm on GPU).
- lu: CPU `lapack_?getrf_ffi` and the permutation loop below; GPU `cusolver_getrf_ffi` and
  `cu_lu_pivots_to_permutation`.
- lu_pivots_to_permutation: GPU `cu_lu_pivots_to_permutation`; elsewhere a `while` loop of
  row swaps built from IR ops.
- qr: CPU `lapack_?geqrf_ffi` + `lapack_?orgqr_ffi` (`ungqr` for complex); GPU
  `cusolver_geqrf_ffi` + `cusolver_orgqr_ffi`.
- eigh: CPU `lapack_?syevd_ffi` (`heevd` for complex); GPU `cusolver_syevd_ffi`.
- svd: CPU `lapack_?gesdd_ffi`; GPU `cusolver_gesvdj_ffi` up to 1024 x 1024, else
  `cusolver_gesvd_ffi`.
- eig: CPU `lapack_?geev_ffi`; CUDA `cusolver_geev_ffi` for right eigenvectors only, else
  `cuhybrid_eig_real`/`cuhybrid_eig_comp` (host LAPACK, or MAGMA, from the GPU plugin).
- hessenberg: CPU `lapack_?gehrd_ffi` (ilo = 1, ihi = n), then Q = diag(1, orgqr(reflectors
  [1:, :-1], taus)) (what `jax.scipy.linalg.hessenberg(calc_q=True)` builds).
- schur: CPU `lapack_?gees_ffi` with Schur vectors, unsorted. JAX lowers neither on GPU.

The `*_ffi` targets are XLA typed-FFI handlers that jaxlib registers when jax is imported
(which the PJRT runtime does); they take batches of column-major matrices (the layouts say
so, and XLA transposes around the call) and report failures in an `info` output, which
becomes NaN in that batch element's results, as in JAX. LAPACK's function table is filled
once, on the first CPU lowering (`jaxlib.lapack.prepare_lapack_call`). The FFI helpers live
in `_lapack_ffi.py`, the pieces built from IR ops (no library call) in `_linalg_ir.py`.
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._util import lowering
from purejit.backend.lowering._lapack_ffi import (  # noqa: F401  (shared with attention)
    _cmp,
    _const,
    _gpu,
    _hybrid_ready,
    _info_ok,
    _lapack,
    _nan_unless,
    _no_rule,
    _slice_last2,
    _splat,
    _triangle,
    char,
    ffi_call,
    _cpu_only,
    gehrd_call,
    geqrf_call,
    orgqr_call,
    inline_ir,
    platform,
)
from purejit.ir import TensorType, dtypes
from purejit.ir.ops.linalg import complex_dtype
from purejit.backend.lowering._linalg_ir import (
    _conj,
    _identity_like,
    _iotas,
    _permutation_loop,
    _svd_empty,
    _unpack_conjugate_pairs,
    _upper_hessenberg,
)

# ---- cholesky ---------------------------------------------------------------------------------


@lowering("cholesky")
def _cholesky(ctx, op, args):
    t = op.operands[0].type
    info_t = TensorType(t.shape[:-2], np.int32)
    where = platform(ctx)
    if where == "cpu":
        outs = ffi_call(
            ctx,
            _lapack("potrf_ffi", t.dtype),
            args,
            [t],
            [t, info_t],
            {"uplo": char("L")},
            aliases={0: 0},
        )
    elif _gpu(ctx):
        outs = ffi_call(
            ctx,
            f"{_gpu(ctx)}solver_potrf_ffi",
            args,
            [t],
            [t, info_t],
            {"lower": "true"},
            aliases={0: 0},
        )
    else:
        (low,) = ctx.op("stablehlo.cholesky", args, [t], [t], "lower = true")
        return inline_ir(ctx, lambda b, x: [_triangle(b, x, lower=True)], [t], [low])

    def post(b, low, info):
        return [_triangle(b, _nan_unless(b, _info_ok(b, info), low), lower=True)]

    return inline_ir(ctx, post, [t, info_t], outs)


# ---- triangular_solve -------------------------------------------------------------------------


@lowering("triangular_solve")
def _triangular_solve(ctx, op, args):
    a_t, b_t = (v.type for v in op.operands)
    at = op.attrs
    a, rhs = args
    conjugate = at["conjugate_a"]
    if conjugate and not at["transpose_a"]:
        (a,) = ctx.op("chlo.conj", [a], [a_t], [a_t])
        conjugate = False
    if platform(ctx) == "cpu":
        trans = ("C" if conjugate else "T") if at["transpose_a"] else "N"
        config = {
            "side": char("L" if at["left_side"] else "R"),
            "uplo": char("L" if at["lower"] else "U"),
            "trans_x": char(trans),
            "diag": char("U" if at["unit_diagonal"] else "N"),
        }
        target = _lapack("trsm_ffi", a_t.dtype)
        return ffi_call(ctx, target, [a, rhs], [a_t, b_t], [b_t], config, aliases={0: 1})
    transpose = ("ADJOINT" if conjugate else "TRANSPOSE") if at["transpose_a"] else "NO_TRANSPOSE"
    attrs = (
        f"left_side = {str(at['left_side']).lower()}, lower = {str(at['lower']).lower()}, "
        f"transpose_a = #stablehlo<transpose {transpose}>, "
        f"unit_diagonal = {str(at['unit_diagonal']).lower()}"
    )
    return ctx.op("stablehlo.triangular_solve", [a, rhs], [a_t, b_t], [b_t], attrs)


# ---- lu ----------------------------------------------------------------------------------------


def _pivots_to_permutation(ctx, pivots: str, piv_t: TensorType, size: int) -> str:
    out_t = TensorType(piv_t.shape[:-1] + (size,), np.int32)
    gpu = _gpu(ctx)
    if gpu and piv_t.shape[-1] and size:
        target = f"{gpu}_lu_pivots_to_permutation"
        return ffi_call(
            ctx, target, [pivots], [piv_t], [out_t], {}, column_major=False, non_batch_dims=1
        )[0]
    return inline_ir(ctx, lambda b, p: [_permutation_loop(b, p, size)], [piv_t], [pivots])[0]


@lowering("lu_pivots_to_permutation")
def _lu_pivots_to_permutation(ctx, op, args):
    size = op.attrs["permutation_size"]
    return [_pivots_to_permutation(ctx, args[0], op.operands[0].type, size)]


@lowering("lu")
def _lu(ctx, op, args):
    t = op.operands[0].type
    lu_t, piv_t, _ = (r.type for r in op.results)
    info_t = TensorType(t.shape[:-2], np.int32)
    m = t.shape[-2]
    if t.shape[-2] == 0 or t.shape[-1] == 0:

        def empty(b, x):
            return [x, _splat(b, 0, piv_t), _permutation_loop(b, _splat(b, 0, piv_t), m)]

        return inline_ir(ctx, empty, [t], args)
    if platform(ctx) == "cpu":
        target = _lapack("getrf_ffi", t.dtype)
    elif _gpu(ctx):
        target = f"{_gpu(ctx)}solver_getrf_ffi"
    else:
        _no_rule("lu", ctx)
    lu, piv1, info = ffi_call(ctx, target, args, [t], [lu_t, piv_t, info_t], {}, aliases={0: 0})

    def post(b, lu, piv1, info):
        piv = b.op("subtract", [piv1, _splat(b, 1, piv_t)])[0]
        return [_nan_unless(b, _info_ok(b, info, "GE"), lu), piv]

    lu, piv = inline_ir(ctx, post, [lu_t, piv_t, info_t], [lu, piv1, info])
    return [lu, piv, _pivots_to_permutation(ctx, piv, piv_t, m)]


# ---- qr ----------------------------------------------------------------------------------------


@lowering("qr")
def _qr(ctx, op, args):
    t = op.operands[0].type
    q_t, r_t = (r.type for r in op.results)
    batch, (m, n) = t.shape[:-2], t.shape[-2:]
    full = op.attrs["full_matrices"]
    k = min(m, n)
    if m == 0 or n == 0:

        def empty(b, x):
            rows = b.op(
                "iota",
                [],
                {"shape": q_t.shape, "dtype": np.dtype(np.int32), "dimension": len(batch)},
            )[0]
            cols = b.op(
                "iota",
                [],
                {"shape": q_t.shape, "dtype": np.dtype(np.int32), "dimension": len(batch) + 1},
            )[0]
            eye = b.op("convert", [_cmp(b, rows, cols, "EQ")], {"dtype": t.dtype})[0]
            return [eye, _splat(b, 0, r_t)]

        return inline_ir(ctx, empty, [t], args)
    taus_t = TensorType(batch + (k,), t.dtype)
    r, taus = geqrf_call(ctx, "qr", args[0], t)
    # the Householder vectors, as an m x (columns of q) matrix
    if m < n:
        house_t = TensorType(batch + (m, m), t.dtype)
        (house,) = inline_ir(ctx, lambda b, x: [_slice_last2(b, x, m, m)], [t], [r])
    elif full and m > n:
        house_t = TensorType(batch + (m, m), t.dtype)
        pads = {
            "edge_padding_low": (0,) * t.rank,
            "edge_padding_high": (0,) * (t.rank - 1) + (m - n,),
            "interior_padding": (0,) * t.rank,
        }
        (house,) = inline_ir(
            ctx, lambda b, x: b.op("pad", [x, _const(b, 0, t.dtype)], pads), [t], [r]
        )
    else:
        house_t, house = t, r
    q = orgqr_call(ctx, "qr", house, taus, house_t, taus_t)
    rows = r_t.shape[-2]

    def post(b, r):
        return [_triangle(b, _slice_last2(b, r, rows, n), lower=False)]

    return [q, *inline_ir(ctx, post, [t], [r])]


# ---- eigh --------------------------------------------------------------------------------------


@lowering("eigh")
def _eigh(ctx, op, args):
    t = op.operands[0].type
    v_t, w_t = (r.type for r in op.results)
    info_t = TensorType(t.shape[:-2], np.int32)
    lower = op.attrs["lower"]
    if t.shape[-1] == 0:
        return inline_ir(ctx, lambda b, x: [x, _splat(b, 0, w_t)], [t], args)
    if platform(ctx) == "cpu":
        kind = "he" if dtypes.is_complex(t.dtype) else "sy"
        target = _lapack(f"{kind}evd_ffi", t.dtype)
        config = {"mode": char("V"), "uplo": char("L" if lower else "U")}
    elif _gpu(ctx):
        target = f"{_gpu(ctx)}solver_syevd_ffi"
        config = {"lower": str(lower).lower(), "algorithm": "0 : ui8"}
    else:
        _no_rule("eigh", ctx)
    outs = ffi_call(ctx, target, args, [t], [v_t, w_t, info_t], config, aliases={0: 0})

    def post(b, v, w, info):
        ok = _info_ok(b, info)
        return [_nan_unless(b, ok, v), _nan_unless(b, ok, w)]

    return inline_ir(ctx, post, [v_t, w_t, info_t], outs)


# ---- svd ---------------------------------------------------------------------------------------


@lowering("svd")
def _svd(ctx, op, args):
    t = op.operands[0].type
    batch, (m, n) = t.shape[:-2], t.shape[-2:]
    full, uv = op.attrs["full_matrices"], op.attrs["compute_uv"]
    k = min(m, n)
    result_types = [r.type for r in op.results]
    s_t = result_types[0]
    info_t = TensorType(batch, np.int32)
    if m == 0 or n == 0:
        return inline_ir(ctx, lambda b, x: _svd_empty(b, result_types), [t], args)
    u_full = TensorType(batch + (m, m if full else k), t.dtype)
    vt_full = TensorType(batch + (n if full else k, n), t.dtype)
    where, gpu = platform(ctx), _gpu(ctx)
    if where == "cpu":
        mode = ("A" if full else "S") if uv else "N"
        target = _lapack("gesdd_ffi", t.dtype)
        outs = ffi_call(
            ctx,
            target,
            args,
            [t],
            [t, s_t, u_full, vt_full, info_t],
            {"mode": char(mode)},
            aliases={0: 0},
        )
        _, s, u, vt, info = outs
        u_t, vt_t = u_full, vt_full
    elif gpu:
        s, u, vt, info, u_t, vt_t = _svd_gpu(ctx, gpu, args, t, s_t, info_t, full, uv)
    else:
        _no_rule("svd", ctx)

    def post(b, s, info, *uvt):
        ok = _info_ok(b, info)
        return [_nan_unless(b, ok, x) for x in (s, *uvt)]

    if not uv:
        return inline_ir(ctx, post, [s_t, info_t], [s, info])
    return inline_ir(ctx, post, [s_t, info_t, u_t, vt_t], [s, info, u, vt])


def _svd_gpu(ctx, gpu, args, t, s_t, info_t, full, uv):
    """cuSOLVER's SVD as JAX picks it: Jacobi (gesvdj) up to 1024 x 1024, else QR (gesvd)."""
    batch, (m, n) = t.shape[:-2], t.shape[-2:]
    k = min(m, n)
    nb = len(batch)
    if m <= 1024 and n <= 1024:
        econ = not full and m > 32 and n > 32
        u_t = TensorType(batch + (m, k if econ else m), t.dtype)
        v_t = TensorType(batch + (n, k if econ else n), t.dtype)
        config = {"full_matrices": str(not econ).lower(), "compute_uv": str(uv).lower()}
        _, s, u, v, info = ffi_call(
            ctx,
            f"{gpu}solver_gesvdj_ffi",
            args,
            [t],
            [t, s_t, u_t, v_t, info_t],
            config,
            aliases={0: 0},
        )
        if not uv:
            return s, None, None, info, None, None
        rows_u, rows_v = (m, k) if not full else (m, m), (k, n) if not full else (n, n)

        def fix(b, u, v):
            perm = tuple(range(nb)) + (nb + 1, nb)
            vt = b.op("transpose", [v], {"permutation": perm})[0]
            if dtypes.is_complex(t.dtype):
                vt = _conj(b, vt)
            return [_slice_last2(b, u, *rows_u), _slice_last2(b, vt, *rows_v)]

        u, vt = inline_ir(ctx, fix, [u_t, v_t], [u, v])
        u_out = TensorType(batch + rows_u, t.dtype)
        vt_out = TensorType(batch + rows_v, t.dtype)
        return s, u, vt, info, u_out, vt_out
    transposed = m < n
    scalar = TensorType((), t.dtype)
    u_t = TensorType(batch + (m, m if full else k), t.dtype) if uv else scalar
    vt_t = TensorType(batch + (n if full else k, n), t.dtype) if uv else scalar
    config = {
        "full_matrices": str(full).lower(),
        "compute_uv": str(uv).lower(),
        "transposed": str(transposed).lower(),
    }
    outs3 = [vt_t, u_t] if transposed else [u_t, vt_t]
    _, s, x, y, info = ffi_call(
        ctx,
        f"{gpu}solver_gesvd_ffi",
        args,
        [t],
        [t, s_t, *outs3, info_t],
        config,
        aliases={0: 0},
        column_major=not transposed,
    )
    u, vt = (y, x) if transposed else (x, y)
    return s, u, vt, info, u_t, vt_t


# ---- eig ---------------------------------------------------------------------------------------


@lowering("eig")
def _eig(ctx, op, args):
    t = op.operands[0].type
    batch, n = t.shape[:-2], t.shape[-1]
    left, right = op.attrs["compute_left_eigenvectors"], op.attrs["compute_right_eigenvectors"]
    cdt = complex_dtype(t.dtype)
    result_types = [r.type for r in op.results]
    w_t = result_types[0]
    vec_t = TensorType(t.shape, cdt)
    info_t = TensorType(batch, np.int32)
    real = not dtypes.is_complex(t.dtype)
    if n == 0:
        return inline_ir(ctx, lambda b, x: [_splat(b, 0, r) for r in result_types], [t], args)
    where, gpu = platform(ctx), _gpu(ctx)
    if where == "cpu":
        wr_t = TensorType(batch + (n,), t.dtype)
        ws = [wr_t, wr_t] if real else [w_t]
        config = {
            "compute_left": char("V" if left else "N"),
            "compute_right": char("V" if right else "N"),
        }
        outs = ffi_call(
            ctx, _lapack("geev_ffi", t.dtype), args, [t], [*ws, vec_t, vec_t, info_t], config
        )
        *w, vl, vr, info = outs
        if real:
            (w,) = ctx.op("stablehlo.complex", w, [wr_t, wr_t], [w_t])
        else:
            (w,) = w
    elif gpu == "cu" and left:
        # cuSOLVER's geev computes right eigenvectors only; JAX then runs LAPACK's geev on the
        # host through jaxlib's hybrid kernel (MAGMA on the GPU instead when it is installed
        # and n >= 2048: JAX's default `jax_use_magma="auto"`)
        _hybrid_ready()
        wr_t = TensorType(batch + (n,), t.dtype)
        ws = [wr_t, wr_t] if real else [w_t]
        config = {"magma": '"auto"', "left": "true", "right": str(right).lower()}
        target = f"{gpu}hybrid_eig_{'real' if real else 'comp'}"
        *w, vl, vr, info = ffi_call(ctx, target, args, [t], [*ws, vec_t, vec_t, info_t], config)
        if real:
            (w,) = ctx.op("stablehlo.complex", w, [wr_t, wr_t], [w_t])
        else:
            (w,) = w
    elif gpu == "cu":
        sq = TensorType(t.shape, t.dtype)
        config = {"left": "false", "right": str(right).lower()}
        _, w, _, vr_packed, info = ffi_call(
            ctx, f"{gpu}solver_geev_ffi", args, [t], [sq, w_t, sq, sq, info_t], config
        )
        vl = None
        vr = vr_packed
        if right and real:
            (vr,) = inline_ir(ctx, _unpack_conjugate_pairs, [w_t, sq], [w, vr_packed])
    else:
        _no_rule("eig", ctx)

    def post(b, info, w, *vecs):
        ok = _info_ok(b, info)
        return [_nan_unless(b, ok, x) for x in (w, *vecs)]

    vecs = ([vl] if left else []) + ([vr] if right else [])
    return inline_ir(ctx, post, [info_t, w_t] + [vec_t] * len(vecs), [info, w, *vecs])


# ---- hessenberg and schur (CPU only, as in JAX) ----------------------------------------------


@lowering("hessenberg")
def _hessenberg(ctx, op, args):
    t = op.operands[0].type
    batch, n = t.shape[:-2], t.shape[-1]
    if n <= 1:
        return inline_ir(ctx, lambda b, x: [x, _identity_like(b, t)], [t], args)
    taus_t = TensorType(batch + (n - 1,), t.dtype)
    info_t = TensorType(batch, np.int32)
    a, taus, info = gehrd_call(ctx, "hessenberg", args[0], t)
    small_t = TensorType(batch + (n - 1, n - 1), t.dtype)
    rank = t.rank

    def reflectors(b, x):
        attrs = {
            "start_indices": (0,) * (rank - 2) + (1, 0),
            "limit_indices": batch + (n, n - 1),
            "strides": (1,) * rank,
        }
        return b.op("slice", [x], attrs)

    (house,) = inline_ir(ctx, reflectors, [t], [a])
    q1 = orgqr_call(ctx, "hessenberg", house, taus, small_t, taus_t)

    def post(b, a, q1, info):
        pads = {
            "edge_padding_low": (0,) * (rank - 2) + (1, 1),
            "edge_padding_high": (0,) * rank,
            "interior_padding": (0,) * rank,
        }
        q = b.op("pad", [q1, _const(b, 0, t.dtype)], pads)[0]
        rows, cols = _iotas(b, t.shape)
        zero = _splat(b, 0, rows.type)
        corner = b.op("and", [_cmp(b, rows, zero, "EQ"), _cmp(b, cols, zero, "EQ")])[0]
        q = b.op("select", [corner, _splat(b, 1, t), q])[0]
        ok = _info_ok(b, info)
        return [_nan_unless(b, ok, _upper_hessenberg(b, a)), _nan_unless(b, ok, q)]

    return inline_ir(ctx, post, [t, small_t, info_t], [a, q1, info])


@lowering("schur")
def _schur(ctx, op, args):
    t = op.operands[0].type
    batch, n = t.shape[:-2], t.shape[-1]
    if n == 0:
        return inline_ir(ctx, lambda b, x: [x, x], [t], args)
    _cpu_only("schur", ctx)
    info_t = TensorType(batch, np.int32)
    eig_t = TensorType(batch + (n,), t.dtype)
    eigs = [eig_t] if dtypes.is_complex(t.dtype) else [eig_t, eig_t]
    config = {"mode": char("V"), "sort": char("N")}
    outs = ffi_call(
        ctx, _lapack("gees_ffi", t.dtype), args, [t], [t, t, *eigs, info_t, info_t], config,
        aliases={0: 0},
    )  # fmt: skip
    form, vectors, info = outs[0], outs[1], outs[-1]

    def post(b, form, vectors, info):
        ok = _info_ok(b, info)
        return [_nan_unless(b, ok, form), _nan_unless(b, ok, vectors)]

    return inline_ir(ctx, post, [t, t, info_t], [form, vectors, info])
