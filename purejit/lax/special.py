"""`random_gamma_grad`: the derivative of a Gamma(a, 1) sample with respect to `a`, as
`jax.lax.random_gamma_grad`, composed from existing ops (no IR op of its own).

A sample x of Gamma(a, 1) solves P(a, x) = u for a uniform u held fixed, with P the
regularised lower incomplete gamma function, so implicitly

    dx/da = -(dP/da) / (dP/dx),    dP/dx = x^(a-1) e^-x / Gamma(a).

Both factors share the prefactor x^a e^-x / Gamma(a), which cancels: what remains is the
derivative in `a` of the normalised series (or continued fraction) times x. The series of
P(a, x) serves where x <= 1 or x <= a, the continued fraction of Q(a, x) = 1 - P(a, x)
elsewhere (`purejit/lax/incomplete.py`, which also gives igamma and igamma_grad_a); each is
a `while_loop` that carries the value and its derivative in `a` and stops once the
derivative has converged, the same iteration as JAX's, so the results agree to rounding.
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.lax._lift import broadcast_shapes_named, convert
from purejit.lax._lift import lift as _lift
from purejit.lax.incomplete import sample_derivative
from purejit.lax.ops import broadcast_in_dim


def _where() -> str:
    return errors.at(errors.user_location())


def random_gamma_grad(a, x):
    """The derivative of a Gamma(a, 1) sample `x` with respect to `a`, elementwise, as
    `jax.lax.random_gamma_grad` (implicit reparameterisation).

    Args:
        a: the shape parameter, a float array.
        x: samples of Gamma(a, 1), a float array of a's dtype. As in JAX, the operands
            broadcast to their common shape with a lower-rank operand aligned on the leading
            axes; float16 and bfloat16 are computed in float32.
    Returns:
        dx/da, of the broadcast shape and a's dtype; 0 where x == 0, NaN where x < 0 or
        a <= 0.
    """
    a, x = _lift(a), _lift(x)
    for name, v in (("a", a), ("x", x)):
        if not pdt.is_inexact(v.dtype) or v.dtype.kind == "c":
            raise errors.PurejitTypeError(
                f"lax.random_gamma_grad: {name} must be a real float array, got "
                f"{v.aval.str_short()}{_where()}; convert it with convert_element_type"
            )
    shape = broadcast_shapes_named("lax.random_gamma_grad", a.shape, x.shape)
    for name, v in (("a", a), ("x", x)):
        if any(d not in (1, shape[i]) for i, d in enumerate(v.shape)):
            raise errors.PurejitTypeError(
                f"lax.random_gamma_grad: {name} {v.aval.str_short()} does not broadcast to "
                f"{list(shape)} along the leading axes (jax.lax.random_gamma_grad aligns a "
                f"lower-rank operand on the leading axes){_where()}; broadcast it first"
            )
    a = broadcast_in_dim(a, shape, tuple(range(a.ndim)))
    x = broadcast_in_dim(x, shape, tuple(range(x.ndim)))
    out_dtype = a.dtype
    weak = a.weak_type and x.weak_type
    if out_dtype in (np.dtype(np.float16), pdt.bfloat16):
        a, x = convert(a, np.float32), convert(x, np.float32)
    if a.dtype != x.dtype:
        raise errors.PurejitTypeError(
            f"lax.random_gamma_grad requires a and x to have the same dtype, got "
            f"{a.dtype.name} and {x.dtype.name}{_where()}; convert with convert_element_type"
        )
    return convert(sample_derivative(a, x), out_dtype, weak=weak)
