"""The vectorisable sine, cosine and tan of `purejit/backend/lowering/_fast_math.py`.

Accuracy: a few million float32 inputs (random bit patterns over every binade, dense runs
near multiples of pi/2, the hardest arguments for the reduction) against NumPy's float64
result, in float32 ulps. `python -m bench.ulp_sweep` does the same for all 2^32 inputs.
Special values, bfloat16 and float16 against `jax.jit` (XLA's own lowering).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit.config import config
from purejit.backend.lowering._fast_math import MIN_ELEMENTS
from purejit.core import bind1

pytestmark = pytest.mark.skipif(
    purejit.devices()[0].platform != "cpu", reason="the fast lowering is CPU-only"
)

FUNCS = {"sin": (pnp.sin, np.sin, jnp.sin), "cos": (pnp.cos, np.cos, jnp.cos)}
FUNCS["tan"] = (pnp.tan, np.tan, jnp.tan)


def ulp_error(got, ref):
    """|got - ref| in float32 ulps of the exact value `ref` (float64)."""
    _, exp = np.frexp(np.abs(ref))
    return np.abs(got.astype(np.float64) - ref) / np.ldexp(1.0, np.maximum(exp - 24, -149))


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(18)
    bits = rng.integers(0, 2**32, 2_000_000, dtype=np.uint64).astype(np.uint32)
    anywhere = bits.view(np.float32)
    anywhere = anywhere[np.isfinite(anywhere)]
    moderate = rng.uniform(-2e4, 2e4, 500_000).astype(np.float32)
    # a few ulps around k pi/2, where the reduction cancels most
    k = rng.integers(-(2**20), 2**20, 100_000).astype(np.float64)
    near = (k * (np.pi / 2)).astype(np.float32)
    steps = rng.integers(-4, 5, near.size).astype(np.int32)
    near = (near.view(np.int32) + steps).view(np.float32)
    # the hardest float32 arguments of the reduction (closest to a multiple of pi/2), each
    # at every scale by 2^k that stays finite
    hard = [16367173.0 * 2.0**e for e in range(-60, 104)]
    hard += [10741887.0 * 2.0**e for e in range(-60, 104)]
    hard += [16573937.0 * 2.0**e for e in range(-60, 104)]
    hard = np.array(hard, np.float32)
    edges = np.array([2.0 ** (24 * j + 23) for j in range(1, 5)], np.float32)
    edges = np.concatenate([edges, np.nextafter(edges, np.float32(0)), [3.4028235e38]])
    x = np.concatenate([anywhere, moderate, near, hard, edges]).astype(np.float32)
    return np.concatenate([x, -x])


def test_float32_within_one_ulp_over_a_dense_sweep():
    x = _inputs()
    outs = purejit.jit(lambda v: tuple(f(v) for f, _, _ in FUNCS.values()))(x)
    xd = x.astype(np.float64)
    report = {}
    for (name, (_, ref, _)), got in zip(FUNCS.items(), outs):
        got = np.asarray(got)
        assert got.dtype == np.float32
        err = ulp_error(got, ref(xd))
        i = int(err.argmax())
        report[name] = (float(err[i]), float(x[i]))
    assert all(e <= 1.0 for e, _ in report.values()), report


SPECIAL = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-40, -3e-39,
     1.1754942e-38, 1.17549435e-38, 2.0**-12, -(2.0**-12), 2.0**-13, 2.4414062e-4, 1e-7,
     3.4028235e38, -3.4028235e38, np.pi / 2, np.pi, 1.0, -1.0],
    np.float32,
)  # fmt: skip


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_special_values_match_xla(name):
    pj, _, jx = FUNCS[name]
    x = np.resize(SPECIAL, MIN_ELEMENTS)  # as many as the fast lowering needs
    got = np.asarray(purejit.jit(pj)(x))
    want = np.asarray(jax.jit(jx)(x))
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    # zeros keep their sign and subnormal arguments come back bit for bit, as in XLA
    tiny = np.abs(x) < 2.0**-12
    same = tiny if name != "cos" else np.zeros_like(tiny)
    np.testing.assert_array_equal(got[same].view(np.int32), want[same].view(np.int32))
    fin = np.isfinite(want)
    assert (ulp_error(got[fin], want[fin].astype(np.float64)) <= 2.0).all()


@pytest.mark.parametrize("dtype", [jnp.bfloat16, np.float16])
def test_narrow_floats_go_through_float32(dtype):
    x = np.random.default_rng(1).uniform(-300, 300, MIN_ELEMENTS).astype(dtype)
    x[:4] = np.array([0.0, -0.0, np.inf, np.nan]).astype(dtype)
    fn = purejit.jit(lambda v: tuple(f(v) for f, _, _ in FUNCS.values()))
    want = jax.jit(lambda v: tuple(f(v) for _, _, f in FUNCS.values()))(x)
    for name, g, w in zip(FUNCS, fn(x), want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype == np.dtype(dtype), name
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        # both round a float32 result within an ulp of the other: at most one step apart
        gi = g.view(np.int16).astype(np.int32)
        wi = w.view(np.int16).astype(np.int32)
        gi, wi = np.where(gi < 0, -(gi & 0x7FFF), gi), np.where(wi < 0, -(wi & 0x7FFF), wi)
        ok = np.isnan(w) | (np.abs(gi - wi) <= 1)
        assert ok.all(), (name, x[~ok][:5], g[~ok][:5], w[~ok][:5])


def _module(fn, x) -> str:
    return purejit.jit(fn).lower(x).as_text()


def test_fast_lowering_has_no_xla_calls_and_the_option_restores_them():
    x = np.ones(MIN_ELEMENTS, np.float32)
    text = _module(lambda v: (pnp.sin(v), pnp.cos(v), pnp.tan(v)), x)
    assert "stablehlo.sine" not in text and "stablehlo.cosine" not in text
    assert "stablehlo.tan" not in text
    config.update("cpu_fast_transcendentals", False)
    try:
        text = _module(lambda v: (pnp.sin(v), pnp.cos(v), pnp.tan(v)), x)
    finally:
        config.update("cpu_fast_transcendentals", True)
    assert "stablehlo.sine" in text and "stablehlo.cosine" in text and "stablehlo.tan" in text


def test_impl_xla_on_the_op_keeps_xla_lowering():
    x = np.linspace(-5, 5, MIN_ELEMENTS, dtype=np.float32)

    def f(v):
        return bind1("sine", v, impl="xla"), bind1("cosine", v), bind1("tan", v, impl="xla")

    text = _module(f, x)
    assert "stablehlo.sine" in text and "stablehlo.tan" in text
    assert "stablehlo.cosine" not in text  # only the marked ops
    s, c, t = purejit.jit(f)(x)
    want = jax.jit(lambda v: (jnp.sin(v), jnp.tan(v)))(x)
    np.testing.assert_array_equal(np.asarray(s), np.asarray(want[0]))  # XLA's, bit for bit
    np.testing.assert_array_equal(np.asarray(t), np.asarray(want[1]))
    np.testing.assert_allclose(np.asarray(c), np.cos(x), rtol=1e-6, atol=1e-7)


def test_float64_and_complex_keep_xla_lowering():
    config.update("enable_x64", True)
    try:
        text = _module(pnp.sin, np.ones(4, np.float64))
        ctext = _module(pnp.cos, np.ones(4, np.complex64))
    finally:
        config.update("enable_x64", False)
    assert "stablehlo.sine" in text and "stablehlo.cosine" in ctext


def test_eager_ops_use_the_fast_lowering_too():
    x = np.resize(np.array([1e30, -2.5, 3.0], np.float32), MIN_ELEMENTS)
    got = np.asarray(pnp.sin(pnp.asarray(x)))
    assert (ulp_error(got, np.sin(x.astype(np.float64))) <= 1.0).all()


def test_small_arrays_keep_xla_lowering():
    # below MIN_ELEMENTS the polynomial would move the program off the calling thread
    small = _module(lambda v: pnp.sin(v), np.ones(MIN_ELEMENTS - 1, np.float32))
    big = _module(lambda v: pnp.sin(v), np.ones(MIN_ELEMENTS, np.float32))
    assert "stablehlo.sine" in small and "stablehlo.sine" not in big
