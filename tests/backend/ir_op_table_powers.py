"""The powers family's cases (`integer_pow`, `square`, `one_minus_square`, `log2`;
ir/ops/powers.py) for the op table:
each exponent from -3 to 5 on floats, complex and integers, against an independent route
(float64/complex128 `x ** y` rounded to the dtype, Python's exact integer power wrapped to
the width). Bit equality with JAX's own results is tested in tests/lax/test_integer_pow.py."""

from __future__ import annotations

import numpy as np
from ir_op_cases import BF16, C64, F16, F32, F64, RTOL, S8, S32, U8, U32, Case
from ir_op_cases import complexes, floats, ints, per_element, via_f64

EXPONENTS = range(-3, 6)


def _float_case(op, x, fn, attrs, label):
    # at most three roundings of the multiply tree (x**5: x*x, its square, times x)
    rtol = RTOL[np.dtype(x.dtype)] * 3
    return Case(op, [x], via_f64(fn), attrs, rtol=rtol, label=label)


def power_cases() -> list[Case]:
    cases = []
    for dt in (F32, F64, F16, BF16):
        x = floats(dt)
        for y in EXPONENTS:
            label = f"{np.dtype(dt).name}**{y}"
            cases.append(_float_case("integer_pow", x, lambda v, y=y: v**y, {"y": y}, label))
        cases.append(_float_case("square", x, lambda v: v * v, {}, np.dtype(dt).name))
    for y in EXPONENTS:  # complex: no zero base under a negative exponent (1/0 is NaN or inf)
        x = complexes(C64, nonzero=y < 0)
        cases.append(_float_case("integer_pow", x, lambda v, y=y: v**y, {"y": y}, f"c64**{y}"))
    cases.append(_float_case("square", complexes(C64), lambda v: v * v, {}, "c64"))
    for dt in (S32, S8, U8, U32):
        x = ints(dt)
        for y in range(0, 6):
            fn = per_element(lambda a, y=y: a**y)
            cases.append(Case("integer_pow", [x], fn, {"y": y}, label=f"{np.dtype(dt).name}**{y}"))
        cases.append(Case("square", [x], per_element(lambda a: a * a), label=np.dtype(dt).name))
    for dt in (F32, F64, F16, BF16):
        x = floats(dt)
        label = np.dtype(dt).name
        cases.append(_float_case("one_minus_square", x, lambda v: (1 + v) * (1 - v), {}, label))
        pos = np.abs(x) + np.asarray(0.25, dt)
        cases.append(_float_case("log2", pos, np.log2, {}, label))
    cases.append(_float_case("one_minus_square", complexes(C64), lambda v: 1 - v * v, {}, "c64"))
    cases.append(_float_case("log2", complexes(C64, nonzero=True), np.log2, {}, "c64"))
    for dt in (S32, S8, U8, U32):
        fn = per_element(lambda a: 1 - a * a)
        cases.append(Case("one_minus_square", [ints(dt)], fn, label=np.dtype(dt).name))
    return cases
