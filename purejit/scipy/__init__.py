"""purejit.scipy: the parts of `jax.scipy` JAX users call most.

special: logsumexp, softmax, erf, erfc, erfinv, gammaln, digamma, xlogy, xlog1py,
         expit, logit, ndtr, ndtri
linalg:  cho_factor, cho_solve, solve_triangular, lu, lu_factor, lu_solve, expm,
         block_diag
stats:   norm (pdf, logpdf, cdf, logcdf, ppf), multivariate_normal (pdf, logpdf)
"""

from purejit.scipy import linalg, special, stats  # noqa: F401

__all__ = ["linalg", "special", "stats"]
