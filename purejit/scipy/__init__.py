"""purejit.scipy: the parts of `jax.scipy` JAX users call most.

special: every function of jax.scipy.special (the gamma family, error functions and the
         Faddeeva family, exponential/sine/cosine/Fresnel integrals, hypergeometric
         functions, Bessel functions, spherical harmonics, ...)
linalg:  cho_factor, cho_solve, solve_triangular, lu, lu_factor, lu_solve, expm,
         block_diag
stats:   norm (pdf, logpdf, cdf, logcdf, ppf), multivariate_normal (pdf, logpdf)
signal, ndimage, interpolate, cluster: as jax.scipy's (every public name)
sparse:  linalg (the iterative solvers cg, bicgstab, gmres)
spatial: transform (Rotation, Slerp)
optimize: minimize (BFGS, JAX's line search) and OptimizeResults
"""

from purejit.scipy import fft, linalg, optimize, special, stats  # noqa: F401
from purejit.scipy import cluster, interpolate, ndimage, signal  # noqa: F401
from purejit.scipy import sparse, spatial  # noqa: F401

__all__ = ["linalg", "optimize", "special", "stats"]
