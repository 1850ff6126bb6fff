"""StableHLO lowering of the control family (`ir/ops/control.py`): `case` and `while`.

IR regions are closed functions whose captured values are explicit operands; StableHLO's
`case` branches take no block arguments and `while` regions take only the carry, so the
remaining region parameters are bound to the outer SSA names (XLA turns those implicit
captures into operands of the HLO conditional / while when it imports the module).
"""

from __future__ import annotations

from purejit.backend.lowering._util import lowering


@lowering("case")
def _case(ctx, op, args):
    branches = [ctx.region(r, block_args=0, outer=args[1:]) for r in op.regions]
    types = [r.type for r in op.results]
    return ctx.op("stablehlo.case", args[:1], [op.operands[0].type], types, "", branches)


@lowering("while")
def _while(ctx, op, args):
    n = len(op.results)
    cond, body = (ctx.region(r, block_args=n, outer=args[n:]) for r in op.regions)
    types = [r.type for r in op.results]
    return ctx.op("stablehlo.while", args[:n], types, types, "", [cond, body])
