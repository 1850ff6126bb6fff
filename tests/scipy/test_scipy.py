"""purejit.scipy against jax.scipy: special, linalg, stats.norm, stats.multivariate_normal
(values, dtypes, weak types, shapes; jitted, a few eagerly)."""

import jax.scipy as jsp
import numpy as np
import pytest
from jnp_compare import check_cases

import purejit
import purejit.scipy as psp

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 5)).astype(np.float32) * 2
P = RNG.uniform(0.02, 0.98, size=(3, 5)).astype(np.float32)
POS = RNG.uniform(0.1, 9.0, size=(3, 5)).astype(np.float32)


def _mods(m):
    return jsp if m.__name__.startswith("jax") else psp


SPECIAL = {
    "logsumexp": lambda s, x, p, q: s.special.logsumexp(x, axis=1),
    "softmax": lambda s, x, p, q: s.special.softmax(x, axis=0),
    "erf": lambda s, x, p, q: s.special.erf(x),
    "erfc": lambda s, x, p, q: s.special.erfc(x),
    "erfc tail": lambda s, x, p, q: s.special.erfc(q),
    "erfinv": lambda s, x, p, q: s.special.erfinv(2 * p - 1),
    "gammaln": lambda s, x, p, q: s.special.gammaln(q),
    "digamma": lambda s, x, p, q: s.special.digamma(q),
    "digamma negative": lambda s, x, p, q: s.special.digamma(-q - 0.5),
    "xlogy": lambda s, x, p, q: s.special.xlogy(x, q),
    "xlogy zero": lambda s, x, p, q: s.special.xlogy(0 * x, 0 * q),
    "xlog1py": lambda s, x, p, q: s.special.xlog1py(x, p),
    "expit": lambda s, x, p, q: s.special.expit(x),
    "logit": lambda s, x, p, q: s.special.logit(p),
    "ndtr": lambda s, x, p, q: s.special.ndtr(x),
    "ndtri": lambda s, x, p, q: s.special.ndtri(p),
    "norm.pdf": lambda s, x, p, q: s.stats.norm.pdf(x, 0.5, 2.0),
    "norm.logpdf": lambda s, x, p, q: s.stats.norm.logpdf(x),
    "norm.cdf": lambda s, x, p, q: s.stats.norm.cdf(x, loc=1.0),
    "norm.logcdf": lambda s, x, p, q: s.stats.norm.logcdf(x),
    "norm.ppf": lambda s, x, p, q: s.stats.norm.ppf(p, 1.0, 3.0),
}


def test_special_and_norm():
    cases = {k: (lambda m, *a, f=f: f(_mods(m), *a)) for k, f in SPECIAL.items()}
    check_cases(cases, X, P, POS, rtol=2e-5, atol=2e-6, eager=("erfc", "digamma", "norm.cdf"))


def test_integer_arguments_promote():
    i = np.arange(1, 7, dtype=np.int32)
    cases = {
        "gammaln": lambda m, i: _mods(m).special.gammaln(i),
        "digamma": lambda m, i: _mods(m).special.digamma(i),
        "erf": lambda m, i: _mods(m).special.erf(i),
        "xlogy": lambda m, i: _mods(m).special.xlogy(i, i),
    }
    check_cases(cases, i, rtol=2e-5, atol=2e-6)


def _spd(shape):
    a = RNG.normal(size=shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(np.float32)


def test_linalg():
    s = _spd((2, 4, 4))
    a = RNG.normal(size=(2, 4, 4)).astype(np.float32) + 3 * np.eye(4, dtype=np.float32)
    b = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    small = (RNG.normal(size=(2, 4, 4)) * 0.3).astype(np.float32)
    cases = {
        "cho_factor": lambda m, s, a, b, e: _mods(m).linalg.cho_factor(s)[0],
        "cho_factor lower": lambda m, s, a, b, e: _mods(m).linalg.cho_factor(s, lower=True)[0],
        "cho_solve": lambda m, s, a, b, e: _mods(m).linalg.cho_solve(
            _mods(m).linalg.cho_factor(s), b),
        "cho_solve lower": lambda m, s, a, b, e: _mods(m).linalg.cho_solve(
            _mods(m).linalg.cho_factor(s, lower=True), b),
        "solve_triangular": lambda m, s, a, b, e: _mods(m).linalg.solve_triangular(a, b, lower=True),
        "solve_triangular T": lambda m, s, a, b, e: _mods(m).linalg.solve_triangular(
            a[0], b[0, :, 0], trans="T", unit_diagonal=True),
        "lu": lambda m, s, a, b, e: tuple(_mods(m).linalg.lu(a[0])),
        "lu wide": lambda m, s, a, b, e: tuple(_mods(m).linalg.lu(b[0].T)),
        "lu permute_l": lambda m, s, a, b, e: tuple(_mods(m).linalg.lu(a[1], permute_l=True)),
        "lu_factor": lambda m, s, a, b, e: tuple(_mods(m).linalg.lu_factor(a)),
        "lu_solve": lambda m, s, a, b, e: _mods(m).linalg.lu_solve(_mods(m).linalg.lu_factor(a), b),
        "lu_solve T": lambda m, s, a, b, e: _mods(m).linalg.lu_solve(
            _mods(m).linalg.lu_factor(a[0]), b[0, :, 0], trans=1),
        "expm": lambda m, s, a, b, e: _mods(m).linalg.expm(a),
        "expm small": lambda m, s, a, b, e: _mods(m).linalg.expm(e),
        "block_diag": lambda m, s, a, b, e: _mods(m).linalg.block_diag(a[0], b[0], e[0, 0], 2.0),
        "mvn logpdf": lambda m, s, a, b, e: _mods(m).stats.multivariate_normal.logpdf(
            b[..., 0], b[0, :, 1], s[0]),
        "mvn pdf": lambda m, s, a, b, e: _mods(m).stats.multivariate_normal.pdf(
            b[0, :, 0], b[0, :, 1], s[0]),
        "mvn scalar cov": lambda m, s, a, b, e: _mods(m).stats.multivariate_normal.logpdf(
            b[..., 0], b[0, :, 1], 2.0),
    }  # fmt: skip
    check_cases(cases, s, a, b, small, rtol=5e-4, atol=5e-5, eager=("lu", "expm"))


def test_expm_of_large_norm_squares():
    a = (RNG.normal(size=(3, 3)) * 6).astype(np.float32)
    want = np.asarray(jsp.linalg.expm(a))
    got = np.asarray(purejit.jit(psp.linalg.expm)(a))
    np.testing.assert_allclose(got, want, rtol=2e-3)


def test_errors():
    with pytest.raises(ValueError, match="trans"):
        psp.linalg.solve_triangular(np.eye(2, dtype=np.float32), np.ones(2, np.float32), trans=3)
    with pytest.raises(ValueError, match="expm"):
        psp.linalg.expm(np.ones((2, 3), np.float32))
    with pytest.raises(NotImplementedError, match="allow_singular"):
        psp.stats.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(2), True)


def test_ndtri_is_cephes_rational_form_bit_for_bit_into_the_tails():
    # erf_inv(2p - 1) was 6e-4 off at p = 1e-6 in float32; JAX evaluates Cephes' form
    import jax
    import jax.scipy.special as js

    p = np.array(
        [0, 1, 1e-30, 1e-20, 1e-10, 1e-6, 1e-3, 0.1, 0.135, 0.5, 0.86, 0.999, 1 - 1e-7],
        np.float32,
    )
    got = np.asarray(purejit.jit(psp.special.ndtri)(p))
    want = np.asarray(jax.jit(js.ndtri)(p))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
