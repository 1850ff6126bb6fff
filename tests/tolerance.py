"""Tolerances for float32 results that went through a matrix product on the default device.

On GPU, XLA runs float32 dots in TF32 by default, as JAX does (`precision=DEFAULT`): the
operands are rounded to 10 explicit mantissa bits (unit roundoff 2**-11, about 4.9e-4), so
each product carries a relative error up to about 1e-3 and a sum of K products an absolute
error up to 1e-3 * sum(|a_i * b_i|). The tests multiply O(1) values with K <= 64 through at
most two layers and compare with NumPy in full float32, or with a program whose dots run at
other shapes (bucket padding, another kernel): `dot_tol` widens their tolerances to 1e-2
there and keeps the caller's on CPU, where dots are full float32.
"""

from purejit.backend import pjrt

TF32_TOL = 1e-2


def dot_tol(rtol: float = 1e-5, atol: float = 1e-5) -> dict:
    """`rtol`/`atol` for `np.testing.assert_allclose` of results computed through f32 dots."""
    if pjrt.is_gpu():
        return {"rtol": max(rtol, TF32_TOL), "atol": max(atol, TF32_TOL)}
    return {"rtol": rtol, "atol": atol}
