"""`jax.scipy.optimize` in drop-in mode: `minimize`, which libraries import at load time
(numpyro's `optim.Minimize` wraps it). purejit has no `scipy.optimize` (JAX's BFGS with its
zoom line search is not ported), so calling it raises NotImplementedError naming what is
missing; a library that only imports it loads and runs its other parts."""

from __future__ import annotations


def minimize(fun, x0, args=(), *, method: str, tol=None, options=None):
    """JAX's `jax.scipy.optimize.minimize`: not implemented in purejit."""
    raise NotImplementedError(
        f"jax.scipy.optimize.minimize(method={method!r}): purejit has no scipy.optimize; use "
        "optimistix (optx.minimise with optx.BFGS runs on purejit) or run this under JAX"
    )


__all__ = ["minimize"]
