"""`jax._src.ad_util` in drop-in mode: `stop_gradient_p`, the primitive object of purejit's
`stop_gradient` op (lineax imports it to register a transpose rule for it).

purejit's rule tables hold user-defined primitives; a rule registered for this built-in op
is kept in the table but purejit's own differentiation of `stop_gradient` applies (a zero
derivative). `linear_transpose` therefore gives a zero cotangent through a `stop_gradient`
where JAX, with lineax's rule, passes the cotangent through unchanged
(docs/flax_equinox.md)."""

from purejit.lax import stop_gradient_p

__all__ = ["stop_gradient_p"]
