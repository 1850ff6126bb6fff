"""erfcx, dawsn, wofz, owens_t, the exponential/sine/cosine/Fresnel integrals and spence of
purejit.scipy.special against scipy (float64, near its rounding) and jax.scipy (float32, at
JAX's own test tolerance of 1e-3 or tighter), with their derivatives against JAX's."""

import jax
import jax.scipy.special as jsp
import numpy as np
import pytest
import scipy.special as ss

import purejit
import purejit.scipy.special as psp

X = np.concatenate([np.linspace(-6, 6, 49), [0.0, 1e-6, 0.999, 1.001, 30.0, 45.0, 1e3]])
XP = np.abs(X)
N = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 10.0, 50.0])[:, None]
Z = np.random.RandomState(0).randn(24) * 3 + 1j * np.random.RandomState(1).randn(24) * 3
H = np.random.RandomState(2).randn(40) * 3
A = np.random.RandomState(3).randn(40) * 4

# name -> (function of the module, arguments); scipy and purejit take the same arguments
CASES = {
    "erfcx": (lambda s: s.erfcx, (X,)),
    "erfcx complex": (lambda s: s.erfcx, (Z,)),
    "dawsn": (lambda s: s.dawsn, (X,)),
    "wofz": (lambda s: s.wofz, (Z,)),
    "owens_t": (lambda s: s.owens_t, (H, A)),
    "exp1": (lambda s: s.exp1, (XP,)),
    "expi": (lambda s: s.expi, (X,)),
    "expn": (lambda s: s.expn, (N, XP[None, :])),
    "sici": (lambda s: s.sici, (X,)),
    "fresnel": (lambda s: s.fresnel, (X,)),
    "spence": (lambda s: s.spence, (XP,)),
}
# float64 relative tolerance against scipy
TOL64 = {"wofz": 1e-12, "erfcx complex": 1e-12, "dawsn": 1e-12, "sici": 1e-12, "fresnel": 1e-12}


def _leaves(out):
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


def _close(got, want, rtol, what):
    for g, w in zip(_leaves(got), _leaves(want)):
        w = np.broadcast_to(w, g.shape)
        assert np.array_equal(np.isfinite(g), np.isfinite(w)), what
        ok = np.isfinite(w)
        np.testing.assert_allclose(g[ok], w[ok], rtol=rtol, atol=rtol * 1e-3, err_msg=what)


@pytest.fixture
def x64():
    purejit.config.update("enable_x64", True)
    try:
        with jax.enable_x64(True):
            yield
    finally:
        purejit.config.update("enable_x64", False)


def test_float64_against_scipy(x64):
    for n, (fn, args) in CASES.items():
        got = purejit.jit(fn(psp))(*args)
        want = fn(ss)(*args)
        if n == "sici":  # scipy's Ci of a negative real is complex; jax.scipy keeps Ci(|x|)
            want = (want[0], np.where(X < 0, ss.sici(np.abs(X))[1], want[1]))
        assert _leaves(got)[0].dtype in (np.float64, np.complex128), n
        _close(got, want, TOL64.get(n, 1e-13), f"float64 {n}")


def _f32(a):
    return a.astype(np.complex64 if np.iscomplexobj(a) else np.float32)


# compared with jax.scipy too (the loop-based ones against scipy only: compiling JAX's
# vectorised while loops takes most of a minute on CI's two cores)
AGAINST_JAX = ("erfcx", "erfcx complex", "dawsn", "wofz", "owens_t", "spence")


def test_float32_against_scipy_and_jax():
    for n, (fn, args) in CASES.items():
        args = [_f32(a) for a in args]
        got = purejit.jit(fn(psp))(*args)
        want = fn(ss)(
            *[a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) for a in args]
        )
        if n == "sici":
            want = (want[0], ss.sici(np.abs(args[0]).astype(np.float64))[1])
        if n in AGAINST_JAX:
            want = jax.jit(fn(jsp))(*args)
        leaves_g, leaves_w = _leaves(got), _leaves(want)
        for g, w in zip(leaves_g, leaves_w):
            assert g.dtype in (np.float32, np.complex64), n
            w = np.broadcast_to(np.real_if_close(w) if n == "sici" else w, g.shape)
            ok = np.isfinite(w) & (np.abs(w) < 1e30)
            # JAX's own test tolerance against scipy is 1e-3; these agree far better
            np.testing.assert_allclose(g[ok], w[ok], rtol=2e-4, atol=1e-6, err_msg=n)


@pytest.mark.parametrize(
    "name, fn, x",
    [
        ("erfcx", lambda s, x: s.erfcx(x), [-1.5, 0.3, 4.0]),
        ("dawsn", lambda s, x: s.dawsn(x), [-1.5, 0.1, 4.0]),
        ("wofz", lambda s, x: s.wofz(x + 0.5j).real, [-1.5, 0.1, 4.0]),
        ("owens_t h", lambda s, x: s.owens_t(x, 0.7), [-1.5, 0.1, 4.0]),
        ("owens_t a", lambda s, x: s.owens_t(0.8, x), [-1.5, 0.1, 4.0]),
        ("exp1", lambda s, x: s.exp1(x), [0.4, 1.5, 7.0]),
        ("expi", lambda s, x: s.expi(x), [-2.0, 0.4, 7.0]),
        ("expn", lambda s, x: s.expn(3, x), [0.4, 1.5, 7.0]),
        ("sici", lambda s, x: s.sici(x)[0] + s.sici(x)[1], [0.4, 1.5, 7.0]),
        ("fresnel", lambda s, x: s.fresnel(x)[0] * s.fresnel(x)[1], [-0.4, 1.2, 3.0]),
        ("spence", lambda s, x: s.spence(x), [0.2, 0.7, 3.0]),  # JAX: NaN on (1, 1.5]
    ],
)
def test_grad_matches_jax(name, fn, x):
    x = np.asarray(x, np.float32)
    got = purejit.vmap(purejit.grad(lambda v: fn(psp, v)))(x)
    want = jax.vmap(jax.grad(lambda v: fn(jsp, v)))(x)
    np.testing.assert_allclose(
        np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-6, err_msg=name
    )


def test_vmap_and_errors():
    x = np.linspace(0.1, 3, 6, dtype=np.float32).reshape(2, 3)
    got = purejit.vmap(psp.expn, in_axes=(None, 0))(2, x)
    np.testing.assert_allclose(np.asarray(got), ss.expn(2, x), rtol=1e-5)
    with pytest.raises(ValueError, match="complex"):
        psp.dawsn(np.complex64(1))
    with pytest.raises(TypeError, match="not supported"):
        psp.spence(np.int32(1))


def test_spence_grad_closed_form():
    # d/dx spence(x) = log(x) / (1 - x), on every branch of the identities
    x = np.array([0.2, 0.7, 1.2, 1.7, 3.0], np.float32)
    got = purejit.vmap(purejit.grad(psp.spence))(x)
    np.testing.assert_allclose(np.asarray(got), np.log(x) / (1 - x), rtol=1e-5)
