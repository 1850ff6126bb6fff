"""purejit.scipy.signal against jax.scipy.signal, both under jit on CPU: bit for bit where the
same operations run (direct and FFT convolutions, correlations, stft, istft, welch, csd);
tolerances only where a stated purejit difference changes the last bits."""

from __future__ import annotations

import jax
import jax.scipy.signal as jsignal
import numpy as np
import pytest

import purejit
from purejit.scipy import signal

RNG = np.random.default_rng(0)
X = RNG.normal(size=(7, 9)).astype(np.float32)
K = RNG.normal(size=(3, 4)).astype(np.float32)
XC = (RNG.normal(size=(6, 5)) + 1j * RNG.normal(size=(6, 5))).astype(np.complex64)
SIG = RNG.normal(size=(2, 300)).astype(np.float32)
MODES = ("full", "same", "valid")
# purejit.numpy.arange makes a constant, where JAX's makes an iota that XLA's simplifier
# divides by multiplying with the reciprocal: frequencies of an nfft that is not a power of
# two can differ in the last bit
FREQ_TOL = {"rtol": 2e-7, "atol": 0}


def _leaves(tree):
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(tree)]


def assert_bits(got, want):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_array_equal(g, w)


def both(fn_purejit, fn_jax, *args, **options):
    return purejit.jit(fn_purejit, **options)(*args), jax.jit(fn_jax)(*args)


def _direct_all(mod):
    def f(a, b):
        out = []
        for mode in MODES:
            out += [mod.convolve(a, b, mode), mod.correlate(a, b, mode)]
            out += [mod.convolve2d(a, b, mode), mod.correlate2d(a, b, mode)]
        return out

    return f


@pytest.mark.parametrize("swap", [False, True], ids=["big_small", "small_big"])
def test_direct_convolutions_match_jax_bitwise(swap):
    a, b = (K, X) if swap else (X, K)
    assert_bits(*both(_direct_all(signal), _direct_all(jsignal), a, b))


def test_complex_and_precision_match_jax_bitwise():
    # complex: three real convolutions (Gauss), as JAX lowers them on CPU and GPU
    def f(mod, highest):
        return lambda a, b, c: (
            mod.correlate(a, a[:2, :3]),
            mod.convolve(a, b, "same"),
            mod.correlate2d(c, a[:2, :3].real, "valid"),
            mod.convolve(c, b, precision="highest"),
            mod.convolve(c, b, method="direct", precision=highest),
        )

    highest = purejit.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST
    assert_bits(*both(f(signal, highest[0]), f(jsignal, highest[1]), XC, K, X))


def test_fftconvolve_matches_jax_bitwise():
    xb, kb = SIG[:, :20], K[:2]

    def f(mod):
        def g(a, b, c, ab, kb):
            out = [mod.fftconvolve(a, b, mode) for mode in MODES]
            out += [mod.fftconvolve(b, a, "valid"), mod.fftconvolve(c, b)]
            out += [mod.fftconvolve(ab, kb, axes=1), mod.fftconvolve(ab, kb, "same", axes=[-1])]
            out += [mod.convolve(a[0], b[0], method="fft")]
            return out

        return g

    assert_bits(*both(f(signal), f(jsignal), X, K, XC, xb, kb))


def test_detrend_matches_jax():
    def f(mod):
        return lambda a: (mod.detrend(a, type="constant"), mod.detrend(a.T, type="constant"))

    assert_bits(*both(f(signal), f(jsignal), X))

    def g(mod):
        return lambda a: (mod.detrend(a), mod.detrend(a, axis=0, bp=[3]), mod.detrend(a[0]))

    # a linear trend is fitted to the constant design matrix [1, k / n]: purejit folds it
    # (k / n exactly, and its SVD with NumPy's LAPACK), where JAX's k is an iota that XLA
    # divides by multiplying with 1 / n, and its SVD runs at run time: last bits differ
    got, want = both(g(signal), g(jsignal), X)
    for gl, wl in zip(_leaves(got), _leaves(want)):
        assert gl.dtype == wl.dtype and gl.shape == wl.shape
        np.testing.assert_allclose(gl, wl, rtol=0, atol=1e-6)
    # what remains has no linear trend
    np.testing.assert_allclose(np.polyfit(np.arange(9), np.asarray(got[0][2]), 1), 0, atol=1e-6)


def test_stft_and_istft_match_jax_bitwise():
    def f(mod):
        return lambda s: (
            mod.stft(s, nperseg=32),
            mod.stft(s.T, nperseg=16, boundary="even", axis=0, return_onesided=False),
            mod.stft(s, nperseg=32, noverlap=8, boundary="odd", padded=False),
            mod.stft(s, nperseg=32, boundary="constant", window=np.hanning(32)),
            mod.stft(s, nperseg=32, boundary=None, detrend="constant"),
        )

    assert_bits(*both(f(signal), f(jsignal), SIG))
    z = np.asarray(jsignal.stft(SIG, nperseg=32)[2])

    def g(mod):
        return lambda z: (
            mod.istft(z, nperseg=32),
            mod.istft(z.swapaxes(-1, -2), time_axis=-2, freq_axis=-1),
        )

    got, want = both(g(signal), g(jsignal), z)
    assert_bits(got, want)
    # a constant window makes the normalisation constant: purejit's `fold` pass sums it
    # with NumPy, in another order than XLA's reduction; with folding off the bits are JAX's
    win = np.hanning(32)
    assert_bits(
        *both(
            lambda z: signal.istft(z, boundary=False, window=win),
            lambda z: jsignal.istft(z, boundary=False, window=win),
            z,
            compiler_options={"disable_passes": ["fold"]},
        )
    )
    # the inverse recovers the signal
    np.testing.assert_allclose(np.asarray(got[0][1])[:, :300], SIG, atol=1e-5)


def test_welch_and_csd_match_jax():
    def f(mod):
        return lambda s, t: (
            mod.welch(s, nperseg=64),
            mod.welch(s, nperseg=64, average="median", scaling="spectrum"),
            mod.welch(s, nperseg=64, window="hamming", detrend=False),
            mod.welch(s.T, nperseg=64, axis=0, detrend=lambda d: d - d.mean()),
            mod.csd(s, t, nperseg=64),
            mod.csd(s, t, nperseg=64, average="median", return_onesided=False),
            mod.csd(s, None, nperseg=50, nfft=60),
        )

    got, want = both(f(signal), f(jsignal), SIG, SIG[::-1] + 1)
    assert_bits([g[0] for g in got[:-1]], [w[0] for w in want[:-1]])  # nfft 64: exact
    np.testing.assert_allclose(np.asarray(got[-1][0]), np.asarray(want[-1][0]), **FREQ_TOL)
    median = 5
    assert_bits(
        [g[1] for g in got if g is not got[median]], [w[1] for w in want if w is not want[median]]
    )
    # the median's bias 1 + sum(1/(k+1) - 1/k) over k = arange(2, n, 2) is a constant in
    # purejit (its arange is one), so XLA divides by multiplying with its reciprocal; JAX's
    # arange is an iota, and XLA divides
    np.testing.assert_allclose(np.asarray(got[median][1]), np.asarray(want[median][1]), rtol=3e-7)


def test_unsupported_settings_raise_clearly():
    with pytest.raises(NotImplementedError, match="boundary='fill'"):
        signal.convolve2d(X, K, boundary="wrap")
    with pytest.raises(NotImplementedError, match="overwrite_data"):
        signal.detrend(X, overwrite_data=True)
    with pytest.raises(ValueError, match="mode must be one of"):
        signal.convolve(X, K, mode="middle")
    with pytest.raises(ValueError, match="smaller than the other in every dimension"):
        signal.convolve(X, np.ones((8, 3), np.float32))
    with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
        signal.correlate(X, K, method="winograd")
    with pytest.raises(ValueError, match="noverlap"):
        signal.stft(SIG, nperseg=16, noverlap=16)


def test_dropin_mode_gives_purejits_module():
    import purejit.compat

    with purejit.compat.dropin():
        import jax.scipy.signal as dropped

        assert dropped.__name__ == "jax.scipy.signal"
        assert dropped.convolve is purejit.scipy.signal.convolve
