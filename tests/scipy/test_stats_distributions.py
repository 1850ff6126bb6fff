"""jax.scipy.stats' distributions against JAX: every public function of each module, jitted
once over points that cover the support, its edges and invalid parameters, compared bit for
bit with jax.scipy.stats under jax.jit on CPU."""

from __future__ import annotations

import importlib

import jax
import numpy as np
import pytest

import purejit

F = np.float32
NAN = np.nan


def f32(*v):
    return np.array(v, F)


# points and parameters per distribution (broadcast together by the functions)
X = f32(-3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0, NAN)
Q = f32(-0.1, 0.0, 0.01, 0.3, 0.5, 0.9, 1.0, NAN)  # quantile arguments (ppf, isf)
K = f32(-1.0, 0.0, 1.0, 2.0, 3.0, 5.0, 2.5, NAN)  # counts (pmf, cdf of discrete families)
LOC, SCALE = (
    f32(0.0, 0.5, -1.0, 0.0, 0.2, 0.0, 1.0, 0.0),
    f32(1.0, 2.0, 0.5, 1.0, 3.0, 1.5, 0.7, 1.0),
)
SHAPE = f32(0.5, 1.0, 2.0, 3.5, 0.7, 5.0, 1.2, 2.0)  # positive shape parameters
P = f32(0.3, 0.0, 1.0, 0.5, 0.9, 0.2, 1.5, 0.4)  # probabilities (one invalid)
U = f32(-0.1, 0.0, 0.1, 0.3, 0.5, 0.8, 1.0, 1.2)  # points of [0, 1] and just outside
# truncation bounds: across 0, in either tail, far in a tail, and a >= b (NaN)
TRUNC_A, TRUNC_B = f32(-1, -2, 0.5, -9, 1, -1, 3, -1), f32(1, 0.5, 4, -7, 2, 1, 1, 2)
ANGLE = f32(-0.5, 0.0, 0.5, 1.5, 3.0, 5.0, 6.3, NAN)

# module -> {function: arguments}; "*" gives the arguments of every function not named
CASES = {
    "bernoulli": {"*": (K - 1, P), "logpmf": (K, P, 1.0), "pmf": (K, P, 1.0), "ppf": (Q, P)},
    "beta": {"*": (U, SHAPE, SHAPE[::-1]), "logpdf": (X, SHAPE, SHAPE[::-1], LOC, SCALE)},
    "betabinom": {"*": (K, f32(0, 3, 5, 5, 4, 10, 3, 2), SHAPE, SHAPE[::-1])},
    "binom": {"*": (K, f32(0, 3, 5, 5, 4, 10, 3, 2), P)},
    "cauchy": {"*": (X, LOC, SCALE), "ppf": (Q, LOC, SCALE), "isf": (Q, LOC, SCALE)},
    "chi2": {"*": (X + 3, SHAPE * 2, LOC, SCALE)},
    "dirichlet": {"*": (np.stack([U[2:6], 1 - U[2:6]]), f32(1.5, 2.5))},
    "expon": {"*": (X, LOC, SCALE), "ppf": (Q, LOC, SCALE)},
    "gamma": {"*": (X + 1, SHAPE, LOC, SCALE)},
    "gennorm": {"*": (X, SHAPE + 0.5)},
    "geom": {"*": (K, P, 1.0)},
    "gumbel_l": {"*": (X, LOC, SCALE), "ppf": (Q, LOC, SCALE)},
    "gumbel_r": {"*": (X, LOC, SCALE), "ppf": (Q, LOC, SCALE)},
    "laplace": {"*": (X, LOC, SCALE)},
    "logistic": {"*": (X, LOC, SCALE), "ppf": (Q, LOC, SCALE), "isf": (Q, LOC, SCALE)},
    "multinomial": {
        "logpmf": (np.array([1, 2, 3], np.int32), np.int32(6), f32(0.2, 0.5, 0.3)),
        "pmf": (np.array([1, 2, 2], np.int32), 6, f32(0.2, 0.5, 0.3)),  # counts off n: 0
    },
    "nbinom": {"*": (K, SHAPE * 2, P, 0.5)},
    "norm": {"*": (X, LOC, SCALE), "ppf": (Q, LOC, SCALE), "isf": (Q, LOC, SCALE)},
    "pareto": {"*": (X + 2, SHAPE, LOC, SCALE), "ppf": (Q, SHAPE, LOC, SCALE)},
    "poisson": {"*": (K, SHAPE * 2, 0.5), "entropy": (f32(0.0, 0.5, 3.0, 9.9, 10.0, 42.0, 150.0),)},
    "t": {"*": (X, SHAPE * 3, LOC, SCALE)},
    "truncnorm": {"*": (X, TRUNC_A, TRUNC_B, LOC, SCALE)},
    "uniform": {"*": (X, LOC, SCALE), "ppf": (Q, LOC, SCALE)},
    "vonmises": {"*": (ANGLE, f32(0.5, 1.0, 4.0, 0.0, 30.0, 2.0, 1.0, 1.0))},
    "wrapcauchy": {"*": (ANGLE, f32(0.5, 0.1, 0.9, 0.0, 0.3, 1.0, 0.7, 0.5))},
}  # fmt: skip

# functions whose bits differ, with the rtol they meet and why: purejit.scipy.special computes
# betaln, ndtr and log_ndtr with other formulas than JAX's (JAX's betaln sorts a <= b, adds
# lgamma(a) + (lgamma(b) - lgamma(a + b)) and for b >= 8 uses a series; its ndtr uses erf
# near 0 and erfc beyond, purejit's exp(-x^2) erfcx(|x|)), so these agree to a few ulps
_BETALN = (1e-5, "betaln: lgamma(a) + lgamma(b) - lgamma(a + b), not JAX's ordered sum")
_NDTR = (2e-6, "ndtr and log_ndtr: purejit.scipy.special's erfcx form, not JAX's erf/erfc")
DIFFERENT_SPECIAL = {
    **{("norm", f): _NDTR for f in ("cdf", "logcdf", "logsf", "sf")},
    **{("betabinom", f): _BETALN for f in ("logpmf", "pmf")},
    **{("truncnorm", f): _NDTR for f in ("cdf", "logcdf", "logpdf", "logsf", "pdf", "sf")},
}


def _functions(name):
    jmod = importlib.import_module(f"jax.scipy.stats.{name}")
    return sorted(k for k in dir(jmod) if not k.startswith("_") and callable(getattr(jmod, k)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_distribution_matches_jax(name):
    pmod = importlib.import_module(f"purejit.scipy.stats.{name}")
    jmod = importlib.import_module(f"jax.scipy.stats.{name}")
    assert sorted(pmod.__all__) == _functions(name)
    cases = CASES[name]
    names = _functions(name)
    args = {f: tuple(np.asarray(a) for a in cases.get(f) or cases["*"]) for f in names}

    def run(mod, args):
        return {f: getattr(mod, f)(*args[f]) for f in names}

    # one jit per module, each function on its own parameters: no value is shared between
    # functions, so XLA neither merges nor co-fuses their work (which can change the bits)
    ref = jax.jit(lambda a: run(jmod, a))(args)
    got = purejit.jit(lambda a: run(pmod, a))(args)
    for f in names:
        g, r = np.asarray(got[f]), np.asarray(ref[f])
        assert g.shape == r.shape and g.dtype == r.dtype, (f, g.shape, g.dtype, r.shape, r.dtype)
        tol = DIFFERENT_SPECIAL.get((name, f))
        if tol is None:
            np.testing.assert_array_equal(g, r, err_msg=f"{name}.{f}", strict=True)
        else:
            np.testing.assert_allclose(g, r, rtol=tol[0], err_msg=f"{name}.{f}: {tol[1]}")


@pytest.mark.parametrize(
    "name, f, args",
    [
        ("gamma", "cdf", (1.3, 3.5)),  # lax.igamma
        ("beta", "sf", (0.3, 3.5, 0.7)),  # lax.betainc
        ("vonmises", "pdf", (1.5, 2.0)),  # lax.bessel_i0e
        ("t", "logpdf", (0.5, 3.0)),  # typed constants
        ("uniform", "cdf", (0.3,)),  # JAX's strong 0 and 1: a strong result
        ("poisson", "pmf", (3, 2.5)),  # integer k
    ],
)
def test_python_scalars_give_jax_dtype_and_weak_type(name, f, args):
    got = getattr(importlib.import_module(f"purejit.scipy.stats.{name}"), f)(*args)
    ref = getattr(importlib.import_module(f"jax.scipy.stats.{name}"), f)(*args)
    assert (got.dtype, got.weak_type, got.shape) == (ref.dtype, ref.weak_type, ref.shape)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-6)


def test_shape_and_dtype_errors_name_the_function():
    from purejit.scipy.stats import dirichlet, multinomial

    alpha = f32(1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="dirichlet.logpdf: alpha must be one-dimensional"):
        dirichlet.logpdf(f32(0.5, 0.5), alpha[None])
    with pytest.raises(ValueError, match=r"dirichlet.logpdf: x must have .* x.shape=\(4,\)"):
        dirichlet.logpdf(f32(0.1, 0.2, 0.3, 0.4), alpha)
    with pytest.raises(ValueError, match="multinomial.logpmf: x and n must be of integer type"):
        multinomial.logpmf(f32(1.0, 2.0), 3, f32(0.5, 0.5))


def test_dropin_jax_scipy_stats_modules_are_purejits():
    import purejit.compat
    import purejit.scipy.stats as stats

    with purejit.compat.dropin():
        import jax.scipy.stats as jstats
        import jax.scipy.stats.gumbel_r as gumbel_r
        from jax.scipy.stats import truncnorm

        assert gumbel_r.__name__ == "jax.scipy.stats.gumbel_r"
        assert gumbel_r.logsf is stats.gumbel_r.logsf and truncnorm.cdf is stats.truncnorm.cdf
        assert all(getattr(jstats, d).__name__ == f"jax.scipy.stats.{d}" for d in CASES)
