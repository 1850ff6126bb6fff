"""Differentiation of the Householder ops (`ir/ops/householder.py`): none, as in JAX, whose
`geqrf`, `householder_product`, `ormqr`, `hessenberg` (gehrd) and `tridiagonal` (sytrd) have
no JVP rule. Differentiate a QR through the `qr` op (`jnp.linalg.qr` in modes reduced,
complete and r) instead, whose rule is in `linalg.py`."""

from __future__ import annotations

from purejit.transforms.autodiff._core import not_differentiable

not_differentiable(
    "JAX does not differentiate it: jax.lax.linalg's geqrf, householder_product and ormqr "
    "have no JVP rule (differentiate jnp.linalg.qr in mode 'reduced' or 'complete' instead)",
    "geqrf",
    "householder_product",
    "ormqr",
)
not_differentiable(
    "JAX does not differentiate it: jax.lax.linalg.hessenberg (gehrd) and tridiagonal "
    "(sytrd) have no JVP rule (the reflectors are not unique where entries vanish)",
    "gehrd",
    "sytrd",
)
