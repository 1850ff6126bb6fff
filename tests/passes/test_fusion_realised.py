"""fusion="purejit": the capability probe, groups handed to XLA as its kernels (kernel count
from the compiled HLO equals purejit's plan on the seed workloads), the flat fallback, and
the kernel counter that reads XLA's HLO."""

import warnings

import numpy as np
import pytest
from purejit.passes import Pipeline, cost
from purejit.passes.fusion import Fusion

import purejit
import purejit.numpy as jnp
from purejit.backend import fusion as fb

# the seed workloads ------------------------------------------------------------------------


def complex_activation(x):
    y = jnp.sin(x) * jnp.cos(x)
    return jnp.maximum((y + x) * 0.5, 0.0)


def tiny_ops_chain(x):
    x = x * 2.0
    x = x + 1.0
    x = 1.0 / (1.0 + jnp.exp(-x))
    x = x * x
    x = jnp.tanh(x)
    return x / (jnp.abs(x) + 1.0)


def mlp_dead_matmul(x, w1, w2, gating1):
    h = jnp.maximum(x @ w1, 0.0)
    _ = x @ gating1
    return h @ w2


def ln_linear_gelu_residual(x, g, b, w):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) * (x - m), axis=-1, keepdims=True)
    h = (x - m) / jnp.sqrt(v + 1e-5) * g + b
    y = h @ w
    return x + 0.5 * y * (1.0 + jnp.tanh(0.7978845608 * (y + 0.044715 * y * y * y)))


def _seeds():
    r = np.random.default_rng(0)
    n, d = 32, 64

    def m(*s):
        return (r.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)

    return [
        (complex_activation, (r.standard_normal(4096).astype(np.float32),)),
        (tiny_ops_chain, (r.standard_normal(4096).astype(np.float32),)),
        (mlp_dead_matmul, (m(n, d), m(d, d), m(d, d), m(d, d))),
        (ln_linear_gelu_residual, (m(n, d), np.ones(d, "f4"), np.zeros(d, "f4"), m(d, d))),
    ]


def _reference(f, args):
    """`jax.jit` of the same function, its `jnp` rebound to jax.numpy."""
    import jax
    import jax.numpy as jxn

    same_with_jax = type(f)(f.__code__, {**f.__globals__, "jnp": jxn}, f.__name__)
    return np.asarray(jax.jit(same_with_jax)(*args))


CAP = fb.probe_route()


@pytest.mark.parametrize("f, args", _seeds(), ids=lambda v: getattr(v, "__name__", ""))
def test_seed_workloads_kernels_equal_purejit_groups_where_realised(f, args):
    fb._warned.clear()  # the fallback warning is given once per process: each case sees it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jitted = purejit.jit(f, compiler_options={"fusion": "purejit"})
        lowered = jitted.lower(*args)
        compiled = lowered.compile()
    out = np.asarray(compiled(*args))
    np.testing.assert_allclose(out, _reference(f, args), rtol=2e-5, atol=2e-5)
    plan = cost.predicted_kernels(lowered.fn)
    xla = fb.kernels(compiled.as_text())
    if CAP.realised:
        assert CAP.route in ("mhlo.fusion", "call")
        assert not [w for w in caught if "cannot" in str(w.message)]
        assert len(xla) == len(plan)  # one XLA kernel per purejit group or lone op
        groups = sorted(g for k in xla for g in k.groups())
        assert groups == [k.group for k in plan if k.group is not None]
        assert all(len(k.groups()) <= 1 for k in xla)
        assert "mhlo.fusion" in lowered.as_text() or 'inlineable = "false"' in lowered.as_text()
    else:
        assert any("flat program" in str(w.message) for w in caught)
        assert "mhlo.fusion" not in lowered.as_text()


def test_probe_reports_what_it_found():
    assert CAP.platform == purejit.backend.pjrt.platform()
    assert CAP.detail
    if CAP.route == "mhlo.fusion":
        opts = CAP.fusion_options()
        assert opts["multi_output"] is False and "transpose" in opts["exclude_ops"]
        assert opts["elementwise_after_reduction"] is True


def _transpose_group(x):
    return jnp.cos(jnp.sin(x).T)


@pytest.mark.skipif(CAP.route != "mhlo.fusion", reason="needs the mhlo.fusion route")
def test_groups_the_route_cannot_take_are_inlined_with_a_warning_not_a_crash():
    # an unrestricted fusion pass puts a transpose in a group, which jaxlib 0.10.2's CPU
    # compiler would abort on inside mhlo.fusion: the emitter inlines that group instead
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    f = purejit.jit(
        _transpose_group, passes=Pipeline([Fusion()]), compiler_options={"fusion": "purejit"}
    )
    fb._warned.clear()  # the warning is given once per process
    with pytest.warns(RuntimeWarning, match="a transpose cannot be realised"):
        lowered = f.lower(x)
    assert "transpose(" in lowered.ir() and "fusion(" in lowered.ir()
    assert "mhlo.fusion" not in lowered.as_text()
    np.testing.assert_allclose(np.asarray(f(x)), np.cos(np.sin(x).T), rtol=1e-6)


def test_default_xla_mode_inlines_groups_into_a_flat_program():
    from purejit.backend import stablehlo

    x = np.ones(64, np.float32)
    lowered = purejit.jit(tiny_ops_chain).lower(x)
    # XLA fuses the flat program, so the module is emitted before the fusion plan runs
    text = lowered.as_text()
    assert "mhlo.fusion" not in text and "func.call" not in text and "fusion" not in text
    assert "fusion" not in lowered.timings and "deferred_passes" not in lowered.timings
    assert "fusion(" in lowered.ir()  # reading the IR runs the plan
    assert "deferred_passes" in lowered.timings
    tagged = stablehlo.emit(lowered.fn)  # what explain compiles to match kernels to groups
    assert "mhlo.fusion" not in tagged and "func.call" not in tagged
    assert 'loc("purejit.fusion.0")' in tagged  # every op of the group is tagged


HLO = """HloModule m, is_scheduled=true, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

%fused (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %s = f32[8]{0} sine(%p), metadata={op_name="purejit.fusion.0"}
}

%body (a: (f32[8], s32[])) -> (f32[8], s32[]) {
  %a = (f32[8]{0}, s32[]) parameter(0)
  %g = f32[8]{0} get-tuple-element(%a), index=0
  %c = f32[8]{0} cosine(%g), metadata={op_name="purejit.fusion.1"}
  %i = s32[] get-tuple-element(%a), index=1
  ROOT %t = (f32[8]{0}, s32[]) tuple(%c, %i)
}

%cond (a: (f32[8], s32[])) -> pred[] {
  %a = (f32[8]{0}, s32[]) parameter(0)
  ROOT %k = pred[] constant(false)
}

ENTRY %main (x: f32[8]) -> (f32[8], f32[8]) {
  %x = f32[8]{0} parameter(0)
  %f = f32[8]{0} fusion(%x), kind=kLoop, calls=%fused
  %z = s32[] constant(0)
  %tup = (f32[8]{0}, s32[]) tuple(%f, %z)
  %w = (f32[8]{0}, s32[]) while(%tup), condition=%cond, body=%body
  %e = f32[8]{0} get-tuple-element(%w), index=0
  %d = f32[8]{0} custom-call(%e), custom_call_target="foo"
  ROOT %r = (f32[8]{0}, f32[8]{0}) tuple(%d, %f)
}
"""


def test_kernel_counter_reads_fusions_lone_ops_and_loop_bodies():
    ks = fb.kernels(HLO)
    assert [(k.name, k.kind) for k in ks] == [
        ("f", "kLoop"),
        ("c", "cosine"),
        ("d", "custom-call"),
    ]
    assert [sorted(k.groups()) for k in ks] == [[0], [1], []]


@pytest.mark.skipif(not CAP.realised, reason="needs a route that realises groups")
def test_a_module_xla_rejects_falls_back_to_the_flat_program():
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    lowered = purejit.jit(tiny_ops_chain, compiler_options={"fusion": "purejit"}).lower(x)
    assert lowered.xla_disable_passes
    # a module XLA cannot take (an op it does not know) stands in for a rejected group
    lowered.module = lowered.module.replace('"mhlo.fusion"', '"mhlo.not_an_op"', 1)
    fb._warned.clear()
    with pytest.warns(RuntimeWarning, match="using the flat program"):
        compiled = lowered.compile()
    assert "mhlo.fusion" not in lowered.module and not lowered.xla_disable_passes
    want = purejit.jit(tiny_ops_chain)(x)
    np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(want), rtol=1e-6)
