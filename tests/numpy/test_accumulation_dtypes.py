"""float16 / bfloat16 reductions accumulate where jax.numpy accumulates, and only there.

jax.numpy sums, multiplies and averages half floats in float32 and casts back when no `dtype`
is given, and var / std always; cumulative sums, einsum, dots, `nanmean` (which passes its own
dtype) and lax-level reductions stay in the input's dtype. The values are compared with JAX on
10^4 elements eager, under jit, grad and vmap; the structure is compared op by op: every
accumulating op (reduce, dot_general, reduce_window ...) of purejit's lowered module has the
element type of `jax.jit(f).lower(...)`'s for the same call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hlo_dtypes import accumulations

import purejit
import purejit.nn as pnn
import purejit.numpy as pnp
from purejit import lax as plax

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
HALF = [F16, BF16]


def _close(got, want, dt):
    """Equal to JAX up to one unit in the last place of `dt` (a wrong accumulation dtype is
    off by hundreds of units on these inputs)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    ulp = float(np.finfo(np.float16).eps if dt == F16 else 2.0**-7)
    np.testing.assert_allclose(g, w, rtol=ulp, atol=ulp * (np.abs(w).max() + 1e-3) / 4)


def test_the_issue_examples():
    """f16 sum of 4096 x 0.1, f16 mean of 70,000 ones (the count itself overflows float16),
    bf16 linspace(-3, 3, 5000): sum and variance."""
    tenths = np.full(4096, 0.1, F16)
    ones = np.ones(70_000, F16)
    ramp = np.linspace(-3, 3, 5000).astype(BF16)
    for f in (lambda n: n.sum(tenths), lambda n: purejit.jit(n.sum)(tenths)):
        assert float(f(pnp)) == 409.5
    assert float(pnp.mean(ones)) == 1.0 and float(purejit.jit(pnp.mean)(ones)) == 1.0
    assert float(pnp.sum(ramp)) == float(jnp.sum(ramp)) == 0.0
    assert float(pnp.var(ramp)) == float(jnp.var(ramp)) == 3.0
    assert float(pnp.std(ramp)) == float(jnp.std(ramp))


def _data(dt, n=10_000):
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 2.0, size=(8, n // 8)).astype(dt)
    mask = rng.random(x.shape) > 0.3
    return x, mask


CALLS = {
    "sum": lambda n, x, m: n.sum(x),
    "sum_axis": lambda n, x, m: n.sum(x, axis=1),
    "sum_where": lambda n, x, m: n.sum(x, axis=1, where=m),
    "sum_initial": lambda n, x, m: n.sum(x, axis=0, initial=2.0),
    "sum_dtype_half": lambda n, x, m: n.sum(x, dtype=x.dtype),
    "sum_dtype_f32": lambda n, x, m: n.sum(x, axis=1, dtype=np.float32),
    # XLA keeps excess precision inside a fused bf16 chain (its rounding of an elementwise result
    # is not purejit's), so products take the data itself, few enough not to overflow
    "prod": lambda n, x, m: n.prod(x[:, :12], axis=1),
    "mean": lambda n, x, m: n.mean(x),
    "mean_keepdims": lambda n, x, m: n.mean(x, axis=0, keepdims=True),
    "mean_where": lambda n, x, m: n.mean(x, axis=1, where=m),
    "mean_dtype_half": lambda n, x, m: n.mean(x, axis=1, dtype=x.dtype),
    "var": lambda n, x, m: n.var(x),
    "var_dtype_half": lambda n, x, m: n.var(x, axis=1, dtype=x.dtype),
    "var_where": lambda n, x, m: n.var(x, axis=1, where=m),
    "std_ddof": lambda n, x, m: n.std(x, axis=1, ddof=1),
    "var_no_dof": lambda n, x, m: n.var(x[:, :1], axis=1, ddof=1),
    "nansum": lambda n, x, m: n.nansum(n.where(m, x, np.nan)),
    "nanprod": lambda n, x, m: n.nanprod(n.where(m, 1.001, np.nan).astype(x.dtype), axis=1),
    "nanmean": lambda n, x, m: n.nanmean(n.where(m, x, np.nan), axis=1),
    "nanvar": lambda n, x, m: n.nanvar(n.where(m, x, np.nan), axis=1),
    "nanstd": lambda n, x, m: n.nanstd(n.where(m, x, np.nan)),
    "average": lambda n, x, m: n.average(x, axis=1),
    "average_weights": lambda n, x, m: n.average(x, axis=1, weights=n.abs(x[0])),
    "cumsum": lambda n, x, m: n.cumsum(x, axis=1),
    "cumprod": lambda n, x, m: n.cumprod(x[:, :12], axis=1),
    "einsum": lambda n, x, m: n.einsum("ij->i", x),
    "einsum_dot": lambda n, x, m: n.einsum("ij,ij->i", x, x),
    "dot": lambda n, x, m: n.dot(x, x.T),
    "trace": lambda n, x, m: n.trace(x),
    "norm": lambda n, x, m: n.linalg.norm(x),
    "norm_ord0": lambda n, x, m: n.linalg.vector_norm(x, ord=0),
    "max": lambda n, x, m: n.max(x, axis=1),
    "ptp": lambda n, x, m: n.ptp(x),
}
NN_CALLS = {
    "softmax": lambda n, x, m: n.softmax(x),
    "softmax_where": lambda n, x, m: n.softmax(x, where=m),
    "log_softmax": lambda n, x, m: n.log_softmax(x, axis=0),
    "logsumexp": lambda n, x, m: n.logsumexp(x, axis=1),
    "standardize": lambda n, x, m: n.standardize(x),
}


def _both(name):
    if name in NN_CALLS:
        f = NN_CALLS[name]
        return (lambda x, m: f(pnn, x, m)), (lambda x, m: f(jax.nn, x, m))
    f = CALLS[name]
    return (lambda x, m: f(pnp, x, m)), (lambda x, m: f(jnp, x, m))


ALL = [*CALLS, *NN_CALLS]
# purejit's simplifier folds a reduction over one element away, so nothing is left to compare
STRUCTURAL = [n for n in ALL if n != "var_no_dof"]


@pytest.mark.parametrize("dt", HALF, ids=["f16", "bf16"])
@pytest.mark.parametrize("name", ALL)
def test_matches_jax_under_jit(name, dt):
    """Every accumulating op purejit emits has the element type JAX's lowering has, and the
    values agree."""
    fp, fj = _both(name)
    x, m = _data(dt)
    want_lowered, got_lowered = jax.jit(fj).lower(x, m), purejit.jit(fp).lower(x, m)
    want = accumulations(want_lowered.as_text()) if name in STRUCTURAL else None
    # JAX lowers cumsum/cumprod on GPUs as an associative scan of elementwise ops (no reduce
    # to read a type from): there the values alone are compared
    if want or (name in STRUCTURAL and jax.default_backend() == "cpu"):
        assert want, "the call must accumulate something to compare"
        assert accumulations(got_lowered.as_text()) == want
    _close(got_lowered.compile()(x, m), want_lowered.compile()(x, m), dt)


def _alternating(names):
    """Each name with one half dtype, taking turns: both dtypes are covered while a CI run
    pays for each expensive case once."""
    return [pytest.param(n, HALF[i % 2], id=f"{n}-{HALF[i % 2].name}") for i, n in enumerate(names)]


@pytest.mark.parametrize(("name", "dt"), _alternating(ALL))
def test_values_match_jax_eager(name, dt):
    fp, fj = _both(name)
    x, m = _data(dt)
    _close(fp(pnp.asarray(x), m), jax.jit(fj)(x, m), dt)


GRADS = ["sum", "mean_where", "var", "var_where", "std_ddof", "nanvar", "average", "norm",
         "log_softmax", "logsumexp", "standardize", "softmax_where"]  # fmt: skip


@pytest.mark.parametrize(("name", "dt"), _alternating(GRADS))
def test_grad_matches_jax(name, dt):
    """The backward pass of a half-float reduction: values and the lowering's accumulation
    dtypes as JAX's (the loss itself is summed in float32 on both sides)."""
    fp, fj = _both(name)
    x, m = _data(dt)

    def loss(n, f):
        return lambda x: n.sum(f(x, m).astype(np.float32) * 0.5)

    gj = jax.grad(loss(jnp, fj))
    gp = purejit.grad(loss(pnp, fp))
    want = np.asarray(gj(x)).astype(np.float64)
    # a gradient cancels terms of order one, so its half-float rounding depends on the order
    # of the backward ops: judge it by its distance to a float32 reference, as JAX's
    ref = np.asarray(gj(x.astype(np.float32))).astype(np.float64)
    err_jax = np.linalg.norm(want - ref)
    # eager grad runs op by op: two cases keep it covered
    eager = [gp(pnp.asarray(x))] if name in ("var", "log_softmax") else []
    for got in [purejit.jit(gp)(x), *eager]:
        assert np.asarray(got).dtype == dt
        err = np.linalg.norm(np.asarray(got).astype(np.float64) - ref)
        assert err <= 1.5 * err_jax + 1e-6 * np.linalg.norm(ref), (err, err_jax)
    assert accumulations(purejit.jit(gp).lower(x).as_text()) == accumulations(
        jax.jit(gj).lower(x).as_text()
    )


@pytest.mark.parametrize(("name", "dt"), _alternating(["sum", "mean", "var", "std_ddof",
                                                        "nanmean", "einsum", "dot", "var"]))  # fmt: skip
def test_vmap_matches_jax(name, dt):
    fp, fj = _both(name)
    x, m = _data(dt, 40_000)
    xs, ms = x.reshape(4, 8, -1), m.reshape(4, 8, -1)
    want = jax.vmap(fj)(xs, ms)
    if name == "sum":
        _close(purejit.vmap(fp)(xs, ms), want, dt)
    _close(purejit.jit(purejit.vmap(fp))(xs, ms), want, dt)
    assert accumulations(purejit.jit(purejit.vmap(fp)).lower(xs, ms).as_text()) == accumulations(
        jax.jit(jax.vmap(fj)).lower(xs, ms).as_text()
    )


@pytest.mark.parametrize("dt", HALF, ids=["f16", "bf16"])
def test_lax_level_reductions_stay_in_their_dtype(dt):
    """lax.reduce and segment_sum accumulate in the operand's dtype, as in JAX."""
    x, _ = _data(dt)
    ids = np.arange(x.shape[1]) % 7

    def fp(x):
        return (plax.reduce(x, np.array(0, dt), plax.add, (1,)),
                purejit.ops.segment_sum(x.T, ids, num_segments=7))  # fmt: skip

    def fj(x):
        return (jax.lax.reduce(x, np.array(0, dt), jax.lax.add, (1,)),
                jax.ops.segment_sum(x.T, ids, num_segments=7))  # fmt: skip

    want = jax.jit(fj)(x)
    for g, w in zip(purejit.jit(fp)(x), want, strict=True):
        _close(g, w, dt)
    got_acc = accumulations(purejit.jit(fp).lower(x).as_text())
    assert got_acc == accumulations(jax.jit(fj).lower(x).as_text())
    assert {t for _, _, t in got_acc} == {"f16" if dt == F16 else "bf16"}


@pytest.mark.parametrize("dt", HALF, ids=["f16", "bf16"])
def test_error_within_jax_error_on_a_million_elements(dt):
    """Against a float64 reference, purejit's sum / mean / var error is at most JAX's."""
    x = np.random.default_rng(1).uniform(0, 1, 1_000_000).astype(dt)
    ref = x.astype(np.float64)
    for name, f64 in (("sum", ref.sum()), ("mean", ref.mean()), ("var", ref.var())):
        got = float(getattr(pnp, name)(x))
        want = float(getattr(jnp, name)(x))
        assert abs(got - f64) <= 1.5 * abs(want - f64) + 1e-12, (name, got, want, f64)
