"""`purejit.scipy.sparse`, as `jax.scipy.sparse`: its `linalg` module holds the iterative
solvers (`cg`, `bicgstab`, `gmres`). Like JAX's, it has no sparse matrix types."""

from purejit.scipy.sparse import linalg

__all__ = ["linalg"]
