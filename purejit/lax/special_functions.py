"""jax.lax's special functions that are IR ops (XLA expands them from CHLO, as it does for
JAX): erfc, digamma, polygamma, zeta (Hurwitz), bessel_i1e; and bessel_i0e, which JAX (and
so purejit) composes from Cephes' Chebyshev expansions.

As every lax function, these take floating-point operands of one dtype and promote nothing;
their derivatives are JAX's (`purejit/transforms/autodiff/elementwise.py`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.lax.elementwise import abs, add, div, le, mul, sqrt, sub
from purejit.lax.ops import _same_dtypes, binary, full, select, unary


def _where() -> str:
    return errors.at(errors.user_location())


def _floats(name: str, *xs):
    out = [_lift(x) for x in xs]
    for v in out:
        if not pdt.is_inexact(v.dtype) or v.dtype.kind == "c":
            raise TypeError(
                f"lax.{name} does not accept dtype {v.dtype.name}. Accepted dtypes are "
                f"subtypes of floating{_where()}"
            )
    if len(out) > 1:
        _same_dtypes(name, *out)
    return out


_erfc, _digamma = unary("erfc", "erfc"), unary("digamma", "digamma")
_i1e = unary("bessel_i1e", "bessel_i1e")
_polygamma, _zeta = binary("polygamma", "polygamma"), binary("zeta", "zeta")


def erfc(x):
    """The complementary error function 1 - erf(x), elementwise (IR op `erfc`)."""
    return _erfc(*_floats("erfc", x))


def digamma(x):
    """The logarithmic derivative of the gamma function, elementwise (IR op `digamma`)."""
    return _digamma(*_floats("digamma", x))


def polygamma(m, x):
    """The m-th derivative of digamma at x (m a non-negative integer-valued float of x's
    dtype), elementwise (IR op `polygamma`)."""
    return _polygamma(*_floats("polygamma", m, x))


def zeta(x, q):
    """The Hurwitz zeta function sum_k (q + k)^-x, elementwise (IR op `zeta`)."""
    return _zeta(*_floats("zeta", x, q))


def bessel_i1e(x):
    """exp(-|x|) I1(x), the scaled modified Bessel function of order 1 (IR op
    `bessel_i1e`)."""
    return _i1e(*_floats("bessel_i1e", x))


# Cephes' Chebyshev coefficients of exp(-x) I0(x): on [0, 8] in x/2 - 2 (A), beyond 8 in
# 32/x - 2, times 1/sqrt(x) (B). float32 uses the last 18 and 7 terms (as Cephes' i0ef).
_I0E_A = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1,
)  # fmt: skip
_I0E_B = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1,
)  # fmt: skip


def _chebyshev(y, coefficients):
    """Clenshaw's recurrence for sum c_k T_k(y/2) in Cephes' convention (chbevl)."""
    b0 = b1 = b2 = full(y.shape, np.zeros((), y.dtype))
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = add(sub(mul(y, b1), b2), np.array(c, y.dtype))
    return mul(sub(b0, b2), np.array(0.5, y.dtype))


# the differentiable version (JAX's derivative rule), registered by purejit/special_gradients.py
IMPLS: dict[str, Callable] = {}


def bessel_i0e(x):
    """exp(-|x|) I0(x), the scaled modified Bessel function of order 0, by Cephes' Chebyshev
    expansions (as `jax.lax.bessel_i0e`); float16 and bfloat16 are computed in float32.
    Its derivative is JAX's, i1e(x) - sign(x) i0e(x), not that of the expansions."""
    (v,) = _floats("bessel_i0e", x)
    return IMPLS.get("bessel_i0e", bessel_i0e_value)(v)


def bessel_i0e_value(v):
    """`bessel_i0e` of a float array, from the expansions."""
    dt, weak = v.dtype, v.weak_type
    if dt != np.float64:
        v = convert(v, np.float32)
    wide = v.dtype == np.float64
    a_coef, b_coef = (_I0E_A, _I0E_B) if wide else (_I0E_A[-18:], _I0E_B[-7:])
    ax = abs(v)
    k = lambda c: np.array(c, v.dtype)  # noqa: E731
    small = _chebyshev(sub(mul(k(0.5), ax), k(2.0)), a_coef)
    large = div(_chebyshev(sub(div(k(32.0), ax), k(2.0)), b_coef), sqrt(ax))
    out = select(le(ax, k(8.0)), small, large)
    return convert(out, dt, weak=weak)
