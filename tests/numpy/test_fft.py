"""purejit.numpy.fft and purejit.lax.fft against jax.numpy.fft / jax.lax.fft: values,
dtypes, weak types and shapes, every norm, axes, s= cropping and padding, > 3 axes."""

import jax
import numpy as np
import pytest
from jnp_compare import check_cases

import purejit

RNG = np.random.default_rng(0)
REAL = RNG.normal(size=(3, 4, 6)).astype(np.float32)
CPLX = (RNG.normal(size=(3, 4, 6)) + 1j * RNG.normal(size=(3, 4, 6))).astype(np.complex64)

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"]


def _input(name):
    return "r" if name in ("rfft", "ihfft", "rfftn", "rfft2") else "c"


def _cases():
    cases = {}
    for name in ONE_D + N_D:
        x = _input(name)
        for norm in (None, "backward", "ortho", "forward"):
            cases[f"{name} {norm}"] = lambda m, r, c, name=name, x=x, norm=norm: getattr(
                m.fft, name
            )(r if x == "r" else c, norm=norm)
    for name in ONE_D:
        x = _input(name)
        cases[f"{name} n=5 axis=1"] = lambda m, r, c, name=name, x=x: getattr(m.fft, name)(
            r if x == "r" else c, n=5, axis=1
        )
        cases[f"{name} n=9 axis=0"] = lambda m, r, c, name=name, x=x: getattr(m.fft, name)(
            r if x == "r" else c, n=9, axis=0
        )
    for name in N_D:
        x = _input(name)
        cases[f"{name} s axes"] = lambda m, r, c, name=name, x=x: getattr(m.fft, name)(
            r if x == "r" else c, s=(3, 8), axes=(0, 2)
        )
    cases["fftn 1 axis"] = lambda m, r, c: m.fft.fftn(c, axes=(1,))
    cases["fft of real"] = lambda m, r, c: m.fft.fft(r)
    cases["fftshift"] = lambda m, r, c: m.fft.fftshift(r)
    cases["fftshift axis"] = lambda m, r, c: m.fft.fftshift(c, axes=1)
    cases["ifftshift axes"] = lambda m, r, c: m.fft.ifftshift(r, axes=(0, 2))
    return cases


def test_numpy_fft_against_jax():
    check_cases(_cases(), REAL, CPLX, rtol=2e-5, atol=2e-5, eager=("fft None", "irfftn ortho"))


def test_more_than_three_axes():
    x = RNG.normal(size=(2, 3, 2, 4, 2)).astype(np.float32)
    cases = {
        "fftn 4": lambda m, x: m.fft.fftn(x, axes=(1, 2, 3, 4)),
        "rfftn 5": lambda m, x: m.fft.rfftn(x),
        "ifftn 4": lambda m, x: m.fft.ifftn(x, axes=(0, 1, 2, 3)),
        "irfftn 4": lambda m, x: m.fft.irfftn(m.fft.rfftn(x, axes=(1, 2, 3, 4)), axes=(1, 2, 3, 4)),
    }
    check_cases(cases, x, rtol=2e-5, atol=2e-5)


def test_integer_input_and_frequencies():
    i = np.arange(8, dtype=np.int32).reshape(2, 4)
    cases = {
        "fft int": lambda m, i: m.fft.fft(i),
        "rfft int": lambda m, i: m.fft.rfft(i),
        "fftfreq": lambda m, i: m.fft.fftfreq(7, 0.5),
        "fftfreq even": lambda m, i: m.fft.fftfreq(8),
        "rfftfreq": lambda m, i: m.fft.rfftfreq(9, 2.0),
        "rfftfreq even": lambda m, i: m.fft.rfftfreq(8),
    }
    check_cases(cases, i, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_lax_fft(kind):
    lengths = (4, 6)
    x = {"FFT": CPLX, "IFFT": CPLX, "RFFT": REAL, "IRFFT": CPLX[..., :4]}[kind]
    want = jax.lax.fft(x, kind, lengths)
    got = purejit.jit(lambda x: purejit.lax.fft(x, kind, lengths))(x)
    assert (np.asarray(got).dtype, got.shape) == (np.asarray(want).dtype, want.shape)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-5)
    got_enum = purejit.lax.fft(x, purejit.lax.FftType[kind], lengths)
    np.testing.assert_allclose(np.asarray(got_enum), np.asarray(want), rtol=2e-5, atol=2e-5)


def test_errors():
    with pytest.raises(ValueError, match="norm"):
        purejit.numpy.fft.fft(CPLX, norm="bad")
    with pytest.raises(ValueError, match="multiple axes"):
        purejit.numpy.fft.fft(CPLX, axis=(0, 1))
    with pytest.raises(ValueError, match="2 axes"):
        purejit.numpy.fft.fft2(CPLX, axes=(0,))
    with pytest.raises(ValueError, match="fft_type"):
        purejit.lax.fft(CPLX, "DCT", (6,))
    with pytest.raises(purejit.PurejitTypeError, match="RFFT needs a real"):
        purejit.lax.fft(CPLX, "RFFT", (6,))
