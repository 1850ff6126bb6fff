"""`purejit.scipy.integrate`, as `jax.scipy.integrate`: `trapezoid`, the composite
trapezoidal rule (JAX's is `jax.numpy.trapezoid` under another name, and so is this)."""

from purejit.numpy import trapezoid

__all__ = ["trapezoid"]
