"""StableHLO lowering of the tridiagonal ops (`ir/ops/tridiagonal.py`), as JAX 0.10-0.11
lowers them:

- tridiagonal_solve: CPU `lapack_?gtsv_ffi` (LU with partial pivoting; info != 0, a singular
  matrix, gives NaN in that batch element); CUDA/ROCm `cusparse_gtsv2_ffi` from 3 rows on,
  and below that the Thomas recurrence written with IR ops, the formula of JAX's fallback
  (cuSPARSE's gtsv2 needs m >= 3).
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering._lapack_ffi import (
    _gpu,
    _info_ok,
    _lapack,
    _nan_unless,
    _no_rule,
    ffi_call,
    inline_ir,
    platform,
)
from purejit.backend.lowering._util import lowering
from purejit.ir import Builder, TensorType


@lowering("tridiagonal_solve")
def _tridiagonal_solve(ctx, op, args):
    types = [v.type for v in op.operands]
    b_t = types[3]
    m = b_t.shape[-2]
    if 0 in b_t.shape:
        return inline_ir(ctx, lambda b, *xs: [xs[3]], types, args)
    if platform(ctx) == "cpu":
        info_t = TensorType(b_t.shape[:-2], np.int32)
        aliases = {0: 0, 1: 1, 2: 2, 3: 3}
        target = _lapack("gtsv_ffi", b_t.dtype)
        *_, x, info = ffi_call(ctx, target, args, types, [*types, info_t], {}, aliases=aliases)

        def post(b, x, info):
            return [_nan_unless(b, _info_ok(b, info), x)]

        return inline_ir(ctx, post, [b_t, info_t], [x, info])
    gpu = _gpu(ctx)
    if not gpu:
        _no_rule("tridiagonal_solve", ctx)
    if m >= 3:
        target = f"{gpu}sparse_gtsv2_ffi"
        return ffi_call(ctx, target, args, types, [b_t], {}, aliases={0: 3})
    return inline_ir(ctx, _thomas, types, args)


def _thomas(b: Builder, dl, d, du, rhs):
    """x of T x = rhs by the Thomas recurrence (no pivoting), unrolled over the m rows:
    cp' = c / (d - a cp), dp' = (r - a dp) / (d - a cp); then x_i = dp_i - cp_i x_{i+1}."""
    t = rhs.type
    m, nb = t.shape[-2], t.rank - 2

    def row(v, i):
        """Row i of rhs [..., 1, n], or entry i of a diagonal spread over rhs's columns."""
        if v.type.rank == t.rank:
            start, limit = (0,) * nb + (i, 0), t.shape[:-2] + (i + 1, t.shape[-1])
        else:
            start, limit = (0,) * nb + (i,), t.shape[:-2] + (i + 1,)
        (s,) = b.op("slice", [v], {"start_indices": start, "limit_indices": limit,
                                   "strides": (1,) * len(start)})  # fmt: skip
        if v.type.rank == t.rank:
            return s
        shape = t.shape[:-2] + (1, t.shape[-1])
        dims = tuple(range(nb + 1))
        return b.op("broadcast_in_dim", [s], {"shape": shape, "broadcast_dimensions": dims})[0]

    def ar(name, x, y):
        return b.op(name, [x, y])[0]

    cp = ar("divide", row(du, 0), row(d, 0))
    dp = ar("divide", row(rhs, 0), row(d, 0))
    cps, dps = [cp], [dp]
    for i in range(1, m):
        a = row(dl, i)
        den = ar("subtract", row(d, i), ar("multiply", a, cp))
        cp = ar("divide", row(du, i), den)
        dp = ar("divide", ar("subtract", row(rhs, i), ar("multiply", a, dp)), den)
        cps.append(cp)
        dps.append(dp)
    xs = [dps[-1]]
    for i in range(m - 2, -1, -1):
        xs.insert(0, ar("subtract", dps[i], ar("multiply", cps[i], xs[0])))
    if m == 1:
        return xs
    return b.op("concatenate", xs, {"dimension": nb})
