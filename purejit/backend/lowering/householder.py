"""StableHLO lowering of the Householder ops (`ir/ops/householder.py`), as JAX 0.10-0.11
lowers them, so XLA runs the same library kernels:

- geqrf: CPU `lapack_?geqrf_ffi`; CUDA/ROCm `cusolver_geqrf_ffi`.
- householder_product: CPU `lapack_?orgqr_ffi` (`ungqr` for complex); GPU
  `cusolver_orgqr_ffi`.
- ormqr: CPU `lapack_?ormqr_ffi` (`unmqr` for complex); GPU `cusolver_ormqr_ffi`; both
  with `left` and `transpose` as attributes, `c` updated in place.
- gehrd: CPU `lapack_?gehrd_ffi` (ilo = 1, ihi = n); JAX lowers it on CPU only too.
- sytrd: CPU `lapack_?sytrd_ffi` (`hetrd` for complex); GPU `cusolver_sytrd_ffi`.
gehrd and sytrd report failures in an `info` output: NaN in that batch element, as in JAX.

The geqrf, orgqr and gehrd calls are the ones the `qr` and `hessenberg` lowerings make
(`_lapack_ffi.geqrf_call`, `orgqr_call`, `gehrd_call`). Empty matrices and zero reflectors
never reach a kernel: the results are written with IR ops (zero taus, the identity's columns,
c).
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._lapack_ffi import (
    _cmp,
    _gpu,
    _householder_target,
    _info_ok,
    _lapack,
    _nan_unless,
    _no_rule,
    _splat,
    char,
    ffi_call,
    gehrd_call,
    geqrf_call,
    inline_ir,
    orgqr_call,
    platform,
)
from purejit.backend.lowering._util import lowering
from purejit.ir import Builder, TensorType


def _eye(b: Builder, t: TensorType):
    """The first columns of the identity, batched like `t`."""
    s32, n = np.dtype(np.int32), t.rank
    rows = b.op("iota", [], {"shape": t.shape, "dtype": s32, "dimension": n - 2})[0]
    cols = b.op("iota", [], {"shape": t.shape, "dtype": s32, "dimension": n - 1})[0]
    return b.op("convert", [_cmp(b, rows, cols, "EQ")], {"dtype": t.dtype})[0]


@lowering("geqrf")
def _geqrf(ctx, op, args):
    t = op.operands[0].type
    taus_t = op.results[1].type
    if 0 in t.shape[-2:]:
        return inline_ir(ctx, lambda b, x: [x, _splat(b, 0, taus_t)], [t], args)
    return geqrf_call(ctx, "geqrf", args[0], t)


@lowering("householder_product")
def _householder_product(ctx, op, args):
    h_t, taus_t = (v.type for v in op.operands)
    if h_t.shape[-1] == 0 or taus_t.shape[-1] == 0:
        return inline_ir(ctx, lambda b, h, taus: [_eye(b, h_t)], [h_t, taus_t], args)
    return [orgqr_call(ctx, "householder_product", *args, h_t, taus_t)]


@lowering("ormqr")
def _ormqr(ctx, op, args):
    types = [v.type for v in op.operands]
    c_t = types[2]
    if types[1].shape[-1] == 0 or 0 in c_t.shape[-2:]:
        return inline_ir(ctx, lambda b, h, taus, c: [c], types, args)
    target = _householder_target(ctx, "ormqr", "ormqr", c_t.dtype)
    config = {k: str(bool(op.attrs[k])).lower() for k in ("left", "transpose")}
    return ffi_call(ctx, target, args, types, [c_t], config, aliases={0: 2})


def _nan_where_failed(ctx, types: list[TensorType], outs: list[str]) -> list[str]:
    """The results `outs` (the last one info), NaN in the batch elements whose info != 0."""

    def post(b, *xs):
        ok = _info_ok(b, xs[-1])
        return [_nan_unless(b, ok, x) for x in xs[:-1]]

    return inline_ir(ctx, post, types, outs)


@lowering("gehrd")
def _gehrd(ctx, op, args):
    t = op.operands[0].type
    taus_t = op.results[1].type
    if t.shape[-1] <= 1 or 0 in t.shape:
        return inline_ir(ctx, lambda b, x: [x, _splat(b, 0, taus_t)], [t], args)
    outs = gehrd_call(ctx, "gehrd", args[0], t)
    return _nan_where_failed(ctx, [t, taus_t, TensorType(t.shape[:-2], np.int32)], outs)


@lowering("sytrd")
def _sytrd(ctx, op, args):
    t = op.operands[0].type
    result_types = [r.type for r in op.results]
    info_t = TensorType(t.shape[:-2], np.int32)
    lower = bool(op.attrs["lower"])
    if 0 in t.shape:
        return inline_ir(ctx, lambda b, x: [x, *(_splat(b, 0, r) for r in result_types[1:])],
                         [t], args)  # fmt: skip
    if platform(ctx) == "cpu":
        kind = "he" if np.dtype(t.dtype).kind == "c" else "sy"
        target, config = _lapack(f"{kind}trd_ffi", t.dtype), {"uplo": char("L" if lower else "U")}
    elif _gpu(ctx):
        target, config = f"{_gpu(ctx)}solver_sytrd_ffi", {"lower": str(lower).lower()}
    else:
        _no_rule("sytrd", ctx)
    outs = ffi_call(ctx, target, args, [t], [*result_types, info_t], config, aliases={0: 0})
    return _nan_where_failed(ctx, [*result_types, info_t], outs)
