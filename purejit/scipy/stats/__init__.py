"""purejit.scipy.stats: the distributions of `jax.scipy.stats` (one module each: norm,
beta, gamma, poisson, ...), mode, rankdata, sem and gaussian_kde."""

from purejit.scipy.stats import (  # noqa: F401
    bernoulli, beta, betabinom, binom, cauchy, chi2, dirichlet, expon, gamma, gennorm, geom,
    gumbel_l, gumbel_r, laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
    pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy,
)  # fmt: skip
from purejit.scipy.stats._descriptive import ModeResult, mode, rankdata, sem  # noqa: F401
from purejit.scipy.stats._kde import gaussian_kde  # noqa: F401

_DISTRIBUTIONS = (
    "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
    "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace", "logistic", "multinomial",
    "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "t", "truncnorm", "uniform",
    "vonmises", "wrapcauchy",
)  # fmt: skip

__all__ = ["ModeResult", "gaussian_kde", "mode", "rankdata", "sem", *_DISTRIBUTIONS]
