"""Derivatives of `fft` (every transform type, odd and even lengths, norms), of `erf_inv`,
`complex`, `bitcast_convert` and `next_after`, and of the host callbacks, against JAX."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from ad_compare import check_ad, rand_like

import purejit
import purejit.numpy as jnp
from purejit import lax
from purejit.test_util import check_grads
from purejit.transforms.autodiff import NonDifferentiableError

XR = rand_like(np.zeros((2, 4, 6), np.float32), 0)  # even last length
XO = rand_like(np.zeros((3, 5), np.float32), 1)  # odd lengths
XC = rand_like(np.zeros((2, 3, 6), np.complex64), 2)


def test_fft_family_matches_jax():
    def make(m):
        def f(xr, xo, xc):
            return [
                m.fft.fft(xc),
                m.fft.ifft(xc, axis=1, norm="ortho"),
                m.fft.fft2(xc, norm="forward"),
                m.fft.ifftn(xc, axes=(0, 1, 2)),
                m.fft.fft(xr),  # real input: convert, then FFT
                m.fft.rfft(xr),
                m.fft.rfft(xo, norm="ortho"),
                m.fft.rfftn(xr, axes=(1, 2)),
                m.fft.rfft2(xo, s=(3, 4)),  # cropped last axis
                m.fft.irfft(xc),
                m.fft.irfft(xc, n=7, axis=1),  # odd output length, padded input
                m.fft.irfftn(xc, s=(3, 5), norm="ortho"),
                m.fft.irfft2(xc[:, :, :4]),
                m.fft.hfft(xc[0, 0], n=9),
                m.fft.ihfft(xo, axis=0),
            ]

        return f

    check_ad(make(jnp), make(jjnp), XR, XO, XC, rtol=1e-4, atol=1e-4)


def test_fft_check_grads_real_to_complex_round_trip():
    def f(x):
        y = jnp.fft.rfft(x) * (1 + 0.5j)
        return jnp.fft.irfft(y * y, n=x.shape[-1])

    check_grads(f, (XO,), order=2, modes=("fwd", "rev"))
    check_grads(lambda z: jnp.fft.fft2(z * z), (XC,), order=1, modes=("fwd", "rev"))


def test_erf_inv_complex_and_bitcast_match_jax():
    def make(m, lx):
        def f(x, y):
            u = 0.9 * m.tanh(x)
            as_int = lx.bitcast_convert_type(x, np.int32)
            return [
                lx.erf_inv(u),
                lx.complex(x, y) * lx.complex(y, x),
                m.conj(lx.complex(x, y * y)),
                lx.bitcast_convert_type(as_int, np.float32) * x,  # zero through the bits
            ]

        return f

    x, y = XO, XO[::-1] * 0.7
    check_ad(make(jnp, lax), make(jjnp, jax.lax), x, y, rtol=1e-4, atol=1e-4)


def test_next_after_is_not_differentiable_as_in_jax():
    with pytest.raises(NotImplementedError, match="nextafter"):
        jax.grad(lambda x: jax.lax.nextafter(x, 2.0))(1.0)
    with pytest.raises(NonDifferentiableError, match="next_after.*JAX does not differentiate"):
        purejit.grad(lambda x: lax.nextafter(x, np.float32(2.0)))(np.float32(1.0))
    # a zero tangent passes through it
    g = purejit.grad(lambda x: x * lax.nextafter(np.float32(1.0), np.float32(2.0)))
    assert g(np.float32(3.0)) == np.nextafter(np.float32(1.0), np.float32(2.0))


def test_debug_callbacks_run_once_in_the_forward_pass_under_grad(capsys):
    seen = []

    def loss(x):
        purejit.debug.print("x0={}", x[0])
        purejit.debug.callback(lambda v: seen.append(float(v)), jnp.sum(x))
        purejit.debug.print("ordered {}", x[1], ordered=True)
        return jnp.sum(jnp.sin(x) ** 2)

    x = np.array([0.5, 1.5, -2.0], np.float32)
    for f in (purejit.grad(loss), purejit.jit(purejit.grad(loss))):
        seen.clear()
        g = f(x)
        np.testing.assert_allclose(np.asarray(g), jax.grad(lambda x: jjnp.sum(jjnp.sin(x) ** 2))(x),
                                   rtol=1e-6)  # fmt: skip
        assert seen == [pytest.approx(0.0)]
        out = capsys.readouterr().out
        assert out.count("x0=0.5") == 1 and out.count("ordered 1.5") == 1, out
    _, t = purejit.jvp(loss, (x,), (np.ones_like(x),))
    assert len(seen) == 1 + 1


def test_pure_callback_needs_custom_jvp_as_in_jax():
    def host_sin(x):
        return np.sin(x).astype(x.dtype)

    def f(x):
        return purejit.pure_callback(host_sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    x = np.array([0.3, 1.2], np.float32)
    for d in (purejit.grad, lambda f: purejit.jit(purejit.grad(f))):
        with pytest.raises(NonDifferentiableError, match="pure_callback.*custom_jvp"):
            d(lambda x: jnp.sum(f(x)))(x)
    with pytest.raises(Exception, match="Pure callbacks do not support JVP"):
        jax.grad(lambda x: jjnp.sum(jax.pure_callback(host_sin, x, x)))(x)

    g = purejit.custom_jvp(f)

    @g.defjvp
    def g_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return g(x), jnp.cos(x) * t

    got = purejit.jit(purejit.grad(lambda x: jnp.sum(g(x) ** 2)))(x)
    np.testing.assert_allclose(np.asarray(got), 2 * np.sin(x) * np.cos(x), rtol=1e-6)
    # a pure_callback on values without tangents is fine
    got = purejit.grad(lambda y: jnp.sum(f(x) * y))(x)
    np.testing.assert_allclose(np.asarray(got), np.sin(x), rtol=1e-6)
