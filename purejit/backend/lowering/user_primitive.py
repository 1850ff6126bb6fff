"""StableHLO lowering of user-defined primitives (`ir/ops/user_primitive.py`): the op's
region is the primitive's lowering, already traced into purejit ops, and is inlined."""

from __future__ import annotations

from purejit.backend.lowering._util import lowering
from purejit.ir.ops.user_primitive import OPS


@lowering(*OPS)
def _user_primitive(ctx, op, args):
    if not op.regions:
        raise NotImplementedError(
            f"{op.name} {op.attrs['primitive']!r}: the primitive has no lowering; register "
            "one with purejit.extend.mlir.register_lowering(prim, "
            "purejit.extend.mlir.lower_fun(impl, multiple_results=...)) before tracing it"
        )
    return ctx.inline(op.regions[0], list(args))
