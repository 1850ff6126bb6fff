"""`purejit.explain` and `Lowered.explain()`: stages under pass names, op counts, groups
with bytes, eager-vs-fused traffic, one graph, and XLA's kernels and costs compared with
purejit's plan."""

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp


def chain(x):
    y = jnp.sin(x) * jnp.cos(x)
    return jnp.maximum((y + x) * 0.5, 0.0)


def softmax_rows(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


@pytest.fixture
def xla_transcendentals():
    """XLA's own sin/cos: the CPU polynomial lowering does many more flops than purejit's
    cost model counts for one sin, which explain rightly flags as a difference."""
    old = purejit.config.read("cpu_fast_transcendentals")
    purejit.config.update("cpu_fast_transcendentals", False)
    yield
    purejit.config.update("cpu_fast_transcendentals", old)


def test_explain_chain_names_every_stage_and_counts_traffic(xla_transcendentals):
    x = np.ones((64, 64), np.float32)
    # XLA's own sin/cos calls: on CPU the fast lowering's polynomials are ~50 flops an
    # element in XLA's cost analysis, where purejit's cost model counts one
    purejit.config.update("cpu_fast_transcendentals", False)
    try:
        ex = purejit.explain(chain, x)
    finally:
        purejit.config.update("cpu_fast_transcendentals", True)
    text = str(ex)
    assert "graphs: 1" in text
    assert "=== trace (" in text and "=== fusion (" in text
    assert "=== simplify [cleanup round 1]" in text
    names = [r.name for r in ex.stages]
    assert names[0] == "trace" and "fusion" in names and "cse" in names
    # one fusion group holding the whole chain: reads x, writes the result
    assert len(ex.groups) == 1 and len(ex.kernels) == 1
    g = ex.groups[0]
    assert (g.bytes_read, g.bytes_written) == (x.nbytes, x.nbytes)
    assert ex.fused_bytes == 2 * x.nbytes
    # op by op: sin, cos, mul, add, broadcasts of two constants, mul, max
    assert ex.eager_bytes > 5 * ex.fused_bytes
    assert "x less" in text
    # XLA compiled it into one kernel too, and its cost analysis is shown next to ours
    assert len(ex.xla_kernels) == 1 and ex.kernels_match
    assert "bytes accessed" in text and "none: XLA's kernels are purejit's groups" in text
    assert abs(ex.xla_cost["bytes accessed"] - ex.fused_bytes) <= 0.05 * ex.fused_bytes


def test_lowered_explain_flags_differences_with_xla():
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    lowered = purejit.jit(softmax_rows).lower(x)
    ex = lowered.explain()
    assert ex.name == "softmax_rows"
    # purejit plans: max-reduce | exp, sum-reduce (input fusion) | divide; the comparison
    # with XLA either matches or names each difference in words
    assert len(ex.groups) >= 2
    plan, xla = len(ex.kernels), len(ex.xla_kernels)
    if plan != xla:
        assert any("kernel count" in d for d in ex.differences)
    assert ("differences" in str(ex)) and (ex.kernels_match == (not ex.differences))


def test_explain_purejit_fusion_mode_shows_route_and_matches():
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    f = purejit.jit(softmax_rows, compiler_options={"fusion": "purejit"})
    ex = purejit.explain(f, x)
    from purejit.backend.fusion import probe_route

    if probe_route().realised:
        assert ex.fusion != "xla" and "each group is handed to XLA as one kernel" in str(ex)
        assert ex.kernels_match, ex.differences
    else:
        assert ex.fusion == "xla"
