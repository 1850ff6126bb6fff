"""StableHLO lowering of the Householder ops (`ir/ops/householder.py`), as JAX 0.10-0.11
lowers them, so XLA runs the same library kernels:

- geqrf: CPU `lapack_?geqrf_ffi`; CUDA/ROCm `cusolver_geqrf_ffi`.
- householder_product: CPU `lapack_?orgqr_ffi` (`ungqr` for complex); GPU
  `cusolver_orgqr_ffi`.
- ormqr: CPU `lapack_?ormqr_ffi` (`unmqr` for complex); GPU `cusolver_ormqr_ffi`; both
  with `left` and `transpose` as attributes, `c` updated in place.

The geqrf and orgqr calls are the ones the `qr` and `hessenberg` lowerings make
(`_lapack_ffi.geqrf_call`, `orgqr_call`). Empty matrices and zero reflectors never reach
a kernel: the results are written with IR ops (the zero taus, the identity's columns, c).
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._lapack_ffi import (
    _cmp,
    _householder_target,
    _splat,
    ffi_call,
    geqrf_call,
    inline_ir,
    orgqr_call,
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
