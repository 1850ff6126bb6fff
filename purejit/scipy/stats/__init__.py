"""purejit.scipy.stats: norm and multivariate_normal."""

from purejit.scipy.stats import multivariate_normal, norm  # noqa: F401

__all__ = ["multivariate_normal", "norm"]
