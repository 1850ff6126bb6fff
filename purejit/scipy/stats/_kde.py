"""gaussian_kde: a Gaussian kernel density estimate, as jax.scipy.stats.gaussian_kde.

The estimate is a weighted sum of Gaussians centred on the data points, all with the data's
(weighted) covariance scaled by the squared bandwidth factor (Scott's rule n_eff^(-1/(d+4))
by default, Silverman's, a scalar or a callable of the estimate). Densities are evaluated in
whitened coordinates: with W the lower Cholesky factor of the inverse kernel covariance,
`log k(x, p) = sum(log diag W) - d/2 log(2 pi) - |W^T (x - p)|^2 / 2`. The estimate is a
pytree (its arrays are the leaves), so it passes through jit, grad and vmap.
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit import numpy as jnp
from purejit import random
from purejit.scipy import linalg, special
from purejit.tree_util import register_pytree_node_class


def _no_complex(name: str, x):
    if pdt.issubdtype(x.dtype, np.complexfloating):
        raise NotImplementedError(f"gaussian_kde does not support complex {name}")


@register_pytree_node_class
class gaussian_kde:  # noqa: N801  (scipy's and JAX's name)
    """A Gaussian kernel density estimate of `dataset` (d, n): n points in d dimensions.

    Args:
        dataset: the points, (d, n) or (n,) for d = 1.
        bw_method: "scott" (default), "silverman", a scalar factor, or a callable taking
            the estimate and returning the factor.
        weights: optional (n,) weights of the points.
    """

    __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

    def __init__(self, dataset, bw_method=None, weights=None):
        data = jnp.atleast_2d(jnp.asarray(dataset))
        _no_complex("data", data)
        if not data.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = data.shape
        if weights is not None:
            w = jnp.asarray(weights)
            dt = jnp.result_type(data, w)
            dt = dt if pdt.is_inexact(dt) else pdt.default_float()
            data, w = data.astype(dt), jnp.atleast_1d(w.astype(dt))
            w = w / jnp.sum(w)
            if w.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if w.shape[0] != n:
                raise ValueError("`weights` input should be of length n")
        else:
            data = jnp.convert_inexact(data)
            w = jnp.full(n, 1.0 / n, dtype=data.dtype)
        self.dataset, self.weights = data, w
        self.neff = 1 / jnp.sum(w**2)
        bw_method = "scott" if bw_method is None else bw_method
        if isinstance(bw_method, str) and bw_method == "scott":
            factor = jnp.power(self.neff, -1.0 / (d + 4))
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = jnp.power(self.neff * (d + 2) / 4.0, -1.0 / (d + 4))
        elif jnp.isscalar(bw_method) and not isinstance(bw_method, str):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")
        data_cov = jnp.atleast_2d(jnp.cov(data, rowvar=True, bias=False, aweights=w))
        self.covariance = data_cov * factor**2
        self.inv_cov = jnp.linalg.inv(data_cov) / factor**2

    # pytree: the arrays are the leaves
    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = cls.__new__(cls)
        kde.neff, kde.dataset, kde.weights, kde.covariance, kde.inv_cov = children
        return kde

    @property
    def d(self) -> int:
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        return self.dataset.shape[1]

    def evaluate(self, points):
        """The density at `points` (d, m), or (m,) for d = 1, or (d,) for one point."""
        return _kernel_eval(False, self.dataset, self.weights, self._points(points), self.inv_cov)

    __call__ = evaluate
    pdf = evaluate

    def logpdf(self, x):
        """The log density at `x` (computed with a log-sum-exp, so it does not underflow)."""
        return _kernel_eval(True, self.dataset, self.weights, self._points(x), self.inv_cov)

    def integrate_gaussian(self, mean, cov):
        """The integral of the estimate times the Gaussian N(mean, cov)."""
        mean = jnp.atleast_1d(jnp.squeeze(jnp.asarray(mean)))
        cov = jnp.atleast_2d(jnp.asarray(cov))
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        chol = linalg.cho_factor(self.covariance + cov)
        norm = 1.0 / (jnp.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diag(chol[0])))
        return _convolve(chol, norm, self.dataset, self.weights, mean)

    def integrate_box_1d(self, low, high):
        """The probability mass between the scalars `low` and `high` (one dimension only)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        sigma = jnp.squeeze(jnp.sqrt(self.covariance))
        lo = jnp.squeeze((low - self.dataset) / sigma)
        hi = jnp.squeeze((high - self.dataset) / sigma)
        return jnp.sum(self.weights * (special.ndtr(hi) - special.ndtr(lo)))

    def integrate_kde(self, other):
        """The integral of the product of this estimate and `other`."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        chol = linalg.cho_factor(self.covariance + other.covariance)
        norm = 1.0 / (jnp.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diag(chol[0])))
        small, large = (self, other) if self.n < other.n else (other, self)
        # every point of the smaller estimate against the whole larger one at once
        diff = large.dataset[:, :, None] - small.dataset[:, None, :]  # (d, n_large, n_small)
        alpha = linalg.cho_solve(chol, jnp.reshape(diff, (self.d, -1)))
        arg = 0.5 * jnp.sum(jnp.reshape(diff, (self.d, -1)) * alpha, axis=0)
        per_point = norm * jnp.sum(
            jnp.reshape(jnp.exp(-arg), diff.shape[1:]) * large.weights[:, None], axis=0
        )
        return jnp.sum(per_point * small.weights)

    def resample(self, key, shape=()):
        """Draw points from the estimate: a data point (chosen by weight) plus kernel noise.

        Args:
            key: a PRNG key.
            shape: the batch shape of the draws.
        Returns:
            (d, *shape) points.
        """
        ind_key, eps_key = random.split(key)
        ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
        zeros = jnp.zeros(self.d, self.covariance.dtype)
        eps = random.multivariate_normal(
            eps_key, zeros, self.covariance, shape=shape, dtype=self.dataset.dtype
        ).T
        return self.dataset[:, ind] + eps

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        raise NotImplementedError("dynamically changing the bandwidth method is not supported")

    def _points(self, points):
        points = jnp.asarray(points)
        _no_complex("coordinates", points)
        points = jnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                points = jnp.reshape(points, (self.d, 1))
            else:
                raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points


def _convolve(chol, norm, target, weights, mean):
    diff = target - mean[:, None]
    alpha = linalg.cho_solve(chol, diff)
    arg = 0.5 * jnp.sum(diff * alpha, axis=0)
    return norm * jnp.sum(jnp.exp(-arg) * weights)


def _kernel_eval(in_log: bool, data, weights, xi, precision):
    """sum_j weights_j k(xi_i, data_j) (or its log) for every column xi_i."""
    dt = jnp.result_type(data, weights, xi, precision)
    dt = dt if pdt.is_inexact(dt) else pdt.default_float()
    data, weights, xi, precision = (a.astype(dt) for a in (data, weights, xi, precision))
    d = data.shape[0]
    if xi.shape[0] != d:
        raise ValueError("points and xi must have same trailing dim")
    if precision.shape != (d, d):
        raise ValueError("precision matrix must match data dims")
    white = linalg.cholesky(precision, lower=True)
    train = jnp.dot(data.T, white)  # (n, d)
    test = jnp.dot(xi.T, white)  # (m, d)
    log_norm = jnp.sum(jnp.log(jnp.diag(white))) - 0.5 * d * jnp.log(2 * np.pi)
    sq = jnp.sum(jnp.square(train[None, :, :] - test[:, None, :]), axis=-1)  # (m, n)
    arg = log_norm - 0.5 * sq
    if in_log:
        return special.logsumexp(jnp.log(weights)[None, :] + arg, axis=1)
    return jnp.sum(weights[None, :] * jnp.exp(arg), axis=1)
