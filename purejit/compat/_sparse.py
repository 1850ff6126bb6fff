"""`jax.experimental.sparse` in drop-in mode: the `BCOO` type libraries import at load time
(numpyro's `CAR` distribution converts a SciPy sparse adjacency matrix with it). purejit has
no sparse arrays, so no value is a `BCOO` and making one raises NotImplementedError naming
what is missing."""

from __future__ import annotations


def _no_sparse(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: purejit has no sparse arrays (JAX's jax.experimental.sparse); use a dense "
        "array (scipy's .toarray()), or run this under JAX"
    )


class BCOO:
    """A batched-coordinate sparse array (JAX's `jax.experimental.sparse.BCOO`)."""

    def __init__(self, *args, **kwargs):
        raise _no_sparse("BCOO")

    @classmethod
    def fromdense(cls, *args, **kwargs):
        raise _no_sparse("BCOO.fromdense")

    @classmethod
    def from_scipy_sparse(cls, *args, **kwargs):
        raise _no_sparse("BCOO.from_scipy_sparse")


__all__ = ["BCOO"]
