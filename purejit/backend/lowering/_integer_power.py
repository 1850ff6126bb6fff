"""The IR op `power` of integers, spelled out as the op's reference computes it
(`ir/ops/elementwise.py`): XLA's own integer power read the exponent's low 6 bits up to
jaxlib 0.11 and reads all of them from 0.12, so `stablehlo.power` would give one program two
meanings. `lowering/elementwise.py` registers the rule and calls this for integers.
"""

from __future__ import annotations

import numpy as np

from purejit.backend.lowering.powers import _splat
from purejit.ir import TensorType
from purejit.ir.ops._xla_refs import INT_POWER_BITS


def integer_power(ctx, op, args) -> list[str]:
    """`op` (an integer `power`) as square-and-multiply over the exponent's low bits."""
    t = op.results[0].type
    st = TensorType(t.shape, np.dtype(f"int{8 * t.dtype.itemsize}"))
    pt = TensorType(t.shape, np.dtype(bool))

    def ew(name, x, y):
        return ctx.op(f"stablehlo.{name}", [x, y], [t, t], [t])[0]

    def eq(x, y, ty=st, direction="EQ"):
        kind = "SIGNED" if ty.dtype.kind == "i" else "UNSIGNED"
        attrs = (
            f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
            f"compare_type = #stablehlo<comparison_type {kind}>"
        )
        return ctx.op("stablehlo.compare", [x, y], [ty, ty], [pt], attrs)[0]

    def select(c, x, y, ty):
        return ctx.op("stablehlo.select", [c, x, y], [pt, ty, ty], [ty])[0]

    def signed(x):  # the same bits as a signed integer
        if t.dtype.kind == "i":
            return x
        return ctx.op("stablehlo.bitcast_convert", [x], [t], [st])[0]

    base, e = args
    one = _splat(ctx, 1, t)
    acc, odd0 = one, None
    for _ in range(INT_POWER_BITS):  # square and multiply over the exponent's low bits
        odd = eq(ew("and", e, one), one, ty=t)
        odd0 = odd if odd0 is None else odd0
        acc = select(odd, ew("multiply", acc, base), acc, t)
        base = ew("multiply", base, base)
        e = ew("shift_right_logical", e, one)
    # a negative exponent (its bits read as signed): 1 for a base of 1, +-1 for -1, else 0
    sa = signed(args[0])
    s1, s0, sm1 = (_splat(ctx, v, st) for v in (1, 0, -1))
    minus = select(odd0, sm1, s1, st)
    small = select(eq(sa, s1), s1, select(eq(sa, sm1), minus, s0, st), st)
    if t.dtype.kind == "u":
        small = ctx.op("stablehlo.bitcast_convert", [small], [st], [t])[0]
    return [select(eq(signed(args[1]), s0, direction="LT"), small, acc, t)]
