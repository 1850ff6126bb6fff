"""purejit.scipy.stats: norm, multivariate_normal, mode, rankdata, sem and gaussian_kde."""

from purejit.scipy.stats import multivariate_normal, norm  # noqa: F401
from purejit.scipy.stats._descriptive import ModeResult, mode, rankdata, sem  # noqa: F401
from purejit.scipy.stats._kde import gaussian_kde  # noqa: F401

__all__ = [
    "ModeResult", "gaussian_kde", "mode", "multivariate_normal", "norm", "rankdata", "sem",
]  # fmt: skip
