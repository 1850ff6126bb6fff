"""Ahead-of-time handles: `jit(f).lower(*args)` -> `Lowered` (.ir, .as_text, .compile) ->
`Compiled` (callable, .cost_analysis, .memory_analysis); and the runtime's own type check."""

import numpy as np
import pytest
from purejit.ir import parse, print_function

import purejit
import purejit.numpy as jnp
from purejit.backend import pjrt, stablehlo
from tolerance import dot_tol


def mlp(params, x):
    (w1, b1), (w2, b2) = params
    return jnp.maximum(x @ w1 + b1, 0) @ w2 + b2


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return [
        (rng.standard_normal((8, 16)).astype(np.float32), np.zeros(16, np.float32)),
        (rng.standard_normal((16, 4)).astype(np.float32), np.ones(4, np.float32)),
    ]


def _np_mlp(params, x):
    (w1, b1), (w2, b2) = params
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2


X = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)


@pytest.fixture(scope="module")
def lowered():
    return purejit.jit(mlp).lower(_params(), X)


def test_ir_text_is_purejit_ir_that_parses(lowered):
    text = lowered.ir()
    assert text.startswith("func @mlp(")
    assert "dot_general" in text and "maximum" in text
    assert print_function(parse(text)) == text  # the text form round-trips


def test_as_text_is_stablehlo_that_jaxlib_verifies(lowered):
    module = lowered.as_text()
    assert "stablehlo.dot_general" in module and "stablehlo.maximum" in module
    assert "tensor<5x8xf32>" in module  # the input signature
    stablehlo.verify_module(module)


def test_records_show_each_stage(lowered):
    names = [r.name for r in lowered.records]
    assert names[0] == "trace"
    assert all(r.ops_after >= 0 and r.seconds >= 0 for r in lowered.records)
    assert lowered.records[-1].ops_after == lowered.fn.op_count()


def test_signature_is_recorded(lowered):
    assert [a.shape for a in lowered.in_avals] == [(8, 16), (16,), (16, 4), (4,), (5, 8)]
    assert [a.shape for a in lowered.out_avals] == [(5, 4)]


def test_compile_runs_and_reports_costs(lowered):
    compiled = lowered.compile()
    out = compiled(_params(), X)
    np.testing.assert_allclose(out, _np_mlp(_params(), X), **dot_tol(1e-5, 1e-5))
    # other values, same signature
    p2 = _params(seed=7)
    np.testing.assert_allclose(compiled(p2, X * 2), _np_mlp(p2, X * 2), **dot_tol(1e-5, 1e-5))
    cost = compiled.cost_analysis()
    assert isinstance(cost, dict)
    matmul_flops = 2 * 5 * 8 * 16 + 2 * 5 * 16 * 4
    assert matmul_flops <= cost["flops"] < 2 * matmul_flops
    mem = compiled.memory_analysis()
    assert mem.argument_size_in_bytes == 4 * (8 * 16 + 16 + 16 * 4 + 4 + 5 * 8)
    assert mem.output_size_in_bytes == 4 * 5 * 4
    assert "HloModule" in compiled.as_text()
    assert lowered.timings["xla_compile"] > 0


def test_compiled_rejects_wrong_shapes_and_dtypes(lowered):
    compiled = lowered.compile()
    with pytest.raises(TypeError, match=r"argument x is f32\[6,8\].*compiled for f32\[5,8\]"):
        compiled(_params(), np.ones((6, 8), np.float32))
    with pytest.raises(TypeError, match=r"argument x is s32\[5,8\].*compiled for f32\[5,8\]"):
        compiled(_params(), np.ones((5, 8), np.int32))
    with pytest.raises(TypeError, match="compiled for arguments"):
        compiled(_params()[0], X)  # a different pytree structure


def test_lower_does_not_count_as_a_call():
    f = purejit.jit(lambda x: x * 2)
    lo = f.lower(np.float32(1))
    assert f.stats.traces == 1 and f.stats.compiles == 0 and f.stats.hits == 0
    assert float(lo.compile()(np.float32(4))) == 8.0


def test_lower_with_static_arguments():
    f = purejit.jit(lambda x, n: x * n, static_argnums=1)
    assert "3.0" in f.lower(np.float32(1), 3).ir()
    assert "5.0" in f.lower(np.float32(1), 5).ir()


def test_lower_from_avals_of_jax_arrays():
    import jax.numpy as jjnp

    lo = purejit.jit(lambda a: a.sum()).lower(jjnp.ones((3, 2), jjnp.float32))
    assert lo.in_avals[0].shape == (3, 2) and "tensor<3x2xf32>" in lo.as_text()


# ---- PJRT's execute checks dtypes itself (PJRT would reinterpret the bits) --------------------


def test_executable_checks_dtype_before_execute():
    compiled = purejit.jit(lambda x: x + 1).lower(np.ones(3, np.float32)).compile()
    exe = compiled.exe
    with pytest.raises(pjrt.ExecuteTypeError, match=r"buffer s32\[3\] where f32\[3\]"):
        exe.execute([pjrt.to_device(np.ones(3, np.int32))])
    with pytest.raises(pjrt.ExecuteTypeError, match=r"buffer f32\[4\] where f32\[3\]"):
        exe.execute([pjrt.to_device(np.ones(4, np.float32))])
    with pytest.raises(pjrt.ExecuteTypeError, match="takes 1 buffers, got 2"):
        exe.execute([pjrt.to_device(np.ones(3, np.float32))] * 2)
    (out,) = exe.execute([pjrt.to_device(np.arange(3, dtype=np.float32))])
    np.testing.assert_array_equal(np.asarray(out), [1, 2, 3])


# ---- the ahead-of-time executable serves the calls, as JAX's -------------------------------


@pytest.fixture
def backend_compiles(monkeypatch):
    """How many programs XLA has compiled since the test began (eager ops aside)."""
    count = [0]
    real = pjrt.compile

    def counting(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(pjrt, "compile", counting)
    return lambda: count[0]


def test_compile_ahead_fills_the_cache_calls_read(backend_compiles):
    f = purejit.jit(lambda x, y: x * 2 + y)
    x, y = np.arange(3, dtype=np.float32), np.float32(1)
    compiled = f.lower(x, y).compile()
    assert backend_compiles() == 1
    np.testing.assert_array_equal(f(x, y), [1, 3, 5])
    np.testing.assert_array_equal(f(x + 1, y), [3, 5, 7])  # the fast path too
    assert backend_compiles() == 1 and f.stats.compiles == 1 and f.stats.hits == 2
    assert f.lower(x, y).compile() is compiled  # compiling again returns it
    f.trace(x, y).lower().compile()  # the trace stage's path reads the same entry
    assert backend_compiles() == 1
    f(x, 1.0)  # another signature (a weak scalar) compiles its own
    assert backend_compiles() == 2


def test_compile_ahead_for_other_options_or_devices_is_not_reused(backend_compiles):
    def g(x):
        return jnp.sin(x) * 2

    x = np.arange(3, dtype=np.float32)
    purejit.jit(g, compiler_options={"disable_passes": ["cse"]}).lower(x).compile()
    plain = purejit.jit(g)
    plain(x)  # its own jit, its own options: compiles
    assert backend_compiles() == 2
    h = purejit.jit(g)
    h.lower(x).compile(device=pjrt.default_device())  # a device the calls do not ask for
    h(x)
    assert backend_compiles() == 4
    k = purejit.jit(g, buckets={"x": {0: [4, 8]}})  # calls run padded signatures: not shared
    k.lower(x).compile()
    k(x)
    assert backend_compiles() == 6
    m = purejit.jit(g)
    lowered = m.lower(x)
    with purejit.enable_x64(True):  # compiled in another context than the calls below
        lowered.compile()
    m(x)
    assert backend_compiles() == 8
