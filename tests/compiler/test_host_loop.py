"""The host loop (`compiler_options={"roll_layers": "host"}`): a rolled program split at its
top-level scans and run as programs chained from the host (`passes/_segments.py`,
`purejit/compiler/host_loop.py`).

Numbers: float32 training steps (an MLP stack and bench.models' transformer) compared with
the rolled and the unrolled programs at rtol/atol 1e-5 (XLA fuses a loop body and a program
of its own differently, so the last bits may differ) and with purejit's interpreter run on
the traced program at 1e-4; an integer-valued forward pass is compared exactly. What is
refused (effects, a loop's stacked output read whole) runs as the rolled program, with the
reason in the report and in `explain`. Dots run at full precision (TF32 on a GPU would
round differently in each program). The programs: each loop body compiled once whatever
the depth, and no program stacks a saved value (no concatenate, no dynamic-update-slice)."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import purejit
import purejit.nn as pnn
import purejit.numpy as pnp
from bench.models import transformer, transformer_params
from purejit.backend import cudnn_fmha, pjrt
from purejit.ir import interpret
from purejit.runtime.array import DeletedArrayError
from tests.passes.roll_layers_util import dense, leaves, mlp, mlp_params

HOST = {"roll_layers": "host"}
tmap = purejit.tree_util.tree_map


@pytest.fixture(autouse=True)
def _full_precision():
    """float32 dots at full precision (a GPU's default is TF32, whose rounding differs
    between programs the tolerances here do not cover)."""
    with purejit.default_matmul_precision("highest"):
        yield


def _mlp_layer():
    return purejit.jit(dense(pnp))


def _tf_layer():
    return purejit.jit(lambda h, p: transformer(pnp, [p], h, 2))


def _loss(layer):
    """The loss the steps here differentiate: the layers chained, the mean square."""
    chain = mlp(pnp, layer)
    return lambda ps, h: pnp.mean(chain(ps, h) ** 2)


def _step_fn(layer, lr=0.1):
    def step(ps, h):
        value, grads = purejit.value_and_grad(_loss(layer))(ps, h)
        return tmap(lambda p, g: p - lr * g, ps, grads), value

    return step


def _model(kind: str, layers: int):
    if kind == "mlp":
        h = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
        return _mlp_layer(), mlp_params(layers), h
    params = transformer_params(layers, 8, np.random.default_rng(0))
    h = np.random.default_rng(1).standard_normal((2, 4, 8)).astype(np.float32)
    return _tf_layer(), params, h


def _steps(step, params, h, roll, n=3):
    f = purejit.jit(step, donate_argnums=0, compiler_options={"roll_layers": roll})
    ps = tmap(lambda v: pnp.asarray(v) + 0, params)
    values = []
    for _ in range(n):
        old = ps
        ps, value = f(ps, h)
        values.append(float(value))
    return f, old, leaves(ps), values


@pytest.mark.parametrize("kind", ["mlp", "transformer"])
def test_training_steps_match_rolled_unrolled_and_interpreter(kind):
    layer, params, h = _model(kind, 4)
    step = _step_fn(layer)
    f, old, got, values = _steps(step, params, h, "host")
    route = f.lower(tmap(pnp.asarray, params), h).host_route
    assert route.split is not None, route.report
    loops = route.report["split"]["loops"]
    assert [(lp["trips"], lp["reverse"]) for lp in loops] == [(4, False), (4, True)]
    # the backward loop's layer input (the previous layer's saved output, or the loop's
    # input before the first layer) is picked by the host, not by a select in the body
    assert [lp["picked_on_host"] for lp in loops] == [0, 1]
    # the donated parameters of the last step are gone, as after any donating call
    with pytest.raises(DeletedArrayError):
        np.asarray(old[0]["w"] if kind == "mlp" else old[0]["qkv"])
    for roll in (True, False):
        _, _, want, want_values = _steps(step, params, h, roll)
        np.testing.assert_allclose(values, want_values, rtol=1e-5, atol=1e-5)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    # one step against the interpreter on the traced program
    f1 = purejit.jit(step, compiler_options=HOST)
    lowered = f1.lower(params, h)
    ref = interpret(lowered.traced, *leaves(params), h)
    out = leaves(f1(tmap(pnp.asarray, params), h))
    for g, w in zip(out, ref):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def _variants():
    rng = np.random.default_rng(4)
    emb = (rng.standard_normal((4, 8)) / 2).astype(np.float32)
    shared = purejit.jit(lambda h, p, s: pnp.tanh(h @ p["w"] + s) * 0.9)
    pair = purejit.jit(
        lambda hc, p: (pnp.tanh(hc[0] @ p["w"] + hc[1]), hc[1] * 0.5 + pnp.sin(hc[0] @ p["w"]))
    )
    layer = _mlp_layer()

    def embed_head(ps, e, x):  # ops before the loop and after it
        h = x @ e
        for p in ps:
            h = layer(h, p)
        return pnp.sum(h * h) + pnp.sum(e)

    def shared_value(ps, s, x):  # a value every layer reads (a loop constant)
        h = x @ emb
        for p in ps:
            h = shared(h, p, s)
        return pnp.mean(h**2)

    def two_carries(ps, x):
        hc = (x @ emb, x @ emb * 0.1)
        for p in ps:
            hc = pair(hc, p)
        return pnp.mean(hc[0] ** 2 + hc[1])

    leaky = purejit.jit(lambda h, p: (lambda z: pnp.where(z > 0, z, 0.1 * z))(h @ p["w"] + p["b"]))

    def selects_on_data(ps, x):  # selects the host cannot decide stay in the body
        h = x @ emb
        for p in ps:
            h = leaky(h, p)
        return pnp.mean(h**2)

    ps, x = mlp_params(5, seed=3), rng.standard_normal((2, 4)).astype(np.float32)
    s = rng.standard_normal(8).astype(np.float32)
    return {
        "embed_head": (embed_head, (ps, emb, x), (0, 1)),
        "shared_value": (shared_value, (ps, s, x), (0, 1)),
        "two_carries": (two_carries, (ps, x), (0,)),
        "selects_on_data": (selects_on_data, (ps, x), (0,)),
    }


@pytest.mark.parametrize("name", ["embed_head", "shared_value", "two_carries", "selects_on_data"])
@pytest.mark.parametrize("remat", [None, False])
def test_other_programs_around_the_loop(name, remat):
    model, args, argnums = _variants()[name]
    g = purejit.value_and_grad(model, argnums=argnums)
    f = purejit.jit(g, compiler_options={"roll_layers": "host", "remat": remat})
    assert f.lower(*args).host_route.split is not None
    got = leaves(f(*args))
    want = leaves(purejit.jit(g)(*args))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_integer_forward_is_exact():
    layer = purejit.jit(lambda h, p: (h @ p["w"] + p["b"]) % 7)

    def model(ps, h):
        outs = []
        for p in ps:
            h = layer(h, p)
            outs.append(h * 2)
        return h, outs

    rng = np.random.default_rng(0)
    ps = [
        {
            "w": rng.integers(-3, 4, (4, 4)).astype(np.int32),
            "b": rng.integers(-3, 4, 4).astype(np.int32),
        }
        for _ in range(5)
    ]
    h = rng.integers(0, 5, (3, 4)).astype(np.int32)
    f = purejit.jit(model, compiler_options=HOST)
    assert f.lower(ps, h).host_route.split is not None
    got = leaves(f(ps, h))
    ref = interpret(f.lower(ps, h).traced, *leaves(ps), h)
    want = leaves(purejit.jit(model)(ps, h))
    for g, r, w in zip(got, ref, want):
        np.testing.assert_array_equal(g, r)
        np.testing.assert_array_equal(g, w)


def test_layers_that_differ_in_constants_take_their_row_per_trip():
    # the roll pass stacks the layers' constants (an xs of constants): each trip's row is a
    # buffer made once, at compile time
    def make(c):
        return purejit.jit(lambda h, p: pnp.tanh(h @ p["w"] + p["b"]) * c)

    layers = [make(0.5 + 0.25 * k) for k in range(4)]

    def loss(ps, h):
        for layer, p in zip(layers, ps):
            h = layer(h, p)
        return pnp.mean(h**2)

    params, h = mlp_params(4), np.ones((2, 8), np.float32)
    f = purejit.jit(purejit.value_and_grad(loss), compiler_options=HOST)
    lowered = f.lower(params, h)
    (rec,) = [r for r in lowered.records if r.name == "roll_layers"]
    assert [r["stacked_constants"] for r in rec.report["rolled"]] == [1, 1]
    assert lowered.host_route.split is not None
    got = leaves(f(params, h))
    want = leaves(purejit.jit(purejit.value_and_grad(loss))(params, h))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _counting_compiles(monkeypatch):
    calls = []
    inner = pjrt.compile_step["fn"]

    def counted(*args, **kwargs):
        calls.append(args[1] if len(args) > 1 else None)
        return inner(*args, **kwargs)

    monkeypatch.setitem(pjrt.compile_step, "fn", counted)
    return calls


@pytest.mark.parametrize("layers", [3, 6])
def test_each_body_compiled_once_whatever_the_depth(monkeypatch, layers):
    layer, params, h = _model("mlp", layers)
    f = purejit.jit(_step_fn(layer), compiler_options=HOST)
    calls = _counting_compiles(monkeypatch)
    saved = purejit.config.read("cache_dir")
    purejit.config.update("cache_dir", None)  # every program compiled here, none loaded
    try:
        f(tmap(pnp.asarray, params), h)
    finally:
        purejit.config.update("cache_dir", saved)
    route = f.lower(params, h).host_route
    s = route.split
    # two loop bodies and the loss head between them (the update folded into the
    # backward body), each compiled once
    assert s.kinds.count("body") == 2
    assert len(calls) == len(s.programs) == 3
    launched = [sum(L.program == k for L in s.launches) for k in range(len(s.programs))]
    assert sorted(launched) == [1, layers, layers]


def test_two_chains_of_one_layer_share_their_bodies(monkeypatch):
    layer, params, h = _model("mlp", 3)
    more = mlp_params(4, seed=5)

    def loss(ps, qs, h):
        for p in ps:
            h = layer(h, p)
        h = h * 2
        for q in qs:
            h = layer(h, q)
        return pnp.mean(h**2)

    g = purejit.value_and_grad(loss, argnums=(0, 1))
    f = purejit.jit(g, compiler_options=HOST)
    s = f.lower(params, more, h).host_route.split
    assert s.kinds.count("body") == 4
    calls = _counting_compiles(monkeypatch)
    saved = purejit.config.read("cache_dir")
    purejit.config.update("cache_dir", None)
    try:
        got = leaves(f(params, more, h))
    finally:
        purejit.config.update("cache_dir", saved)
    # the two forward bodies are one module (so are the two backward bodies): compiled once
    assert len(calls) == len(s.programs) - 2
    want = leaves(purejit.jit(g)(params, more, h))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_no_program_stacks_a_saved_value():
    layer, params, h = _model("transformer", 3)
    step = _step_fn(layer)
    host = purejit.jit(step, compiler_options=HOST)
    rolled = purejit.jit(step, compiler_options={"roll_layers": True, "stacked_params": False})
    text = host.lower(params, h).as_text()
    assert "host loop program" in text
    for op in ("stablehlo.concatenate", "stablehlo.dynamic_update_slice", "stablehlo.while"):
        assert op not in text, op
    # the rolled program stacks them (what the route removes)
    assert "stablehlo.concatenate" in rolled.lower(params, h).as_text()
    compiled = host.lower(params, h).compile()
    assert "dynamic-update-slice" not in compiled.as_text()


def test_donated_parameters_are_updated_in_place():
    layer, params, h = _model("mlp", 4)
    f = purejit.jit(_step_fn(layer), donate_argnums=0, compiler_options=HOST)
    lowered = f.lower(tmap(pnp.asarray, params), h)
    # each layer's update runs in its backward trip, which takes that layer's parameters'
    # buffers over (aliased to its outputs): one program, two aliases, four launches
    s = lowered.host_route.split
    donating = [L for L in s.launches if L.donate]
    assert len(donating) == 4 and {s.kinds[L.program] for L in donating} == {"body"}
    assert all(len(L.donate) == 2 for L in donating)
    assert lowered.as_text().count("tf.aliasing_output") == 2
    ps = tmap(lambda v: pnp.asarray(v) + 0, params)
    kept = ps[1]["b"]
    ps, _ = f(ps, h)
    assert kept.is_deleted()
    ps, _ = f(ps, h)  # the new parameters are live arrays a second call takes
    assert all(np.isfinite(v).all() for v in leaves(ps))


def test_numpy_arguments_and_a_returned_argument():
    layer = _mlp_layer()

    def f(ps, h):
        x = h
        for p in ps:
            x = layer(x, p)
        return x, h

    params = mlp_params(3)
    h = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    g = purejit.jit(f, compiler_options=HOST)
    route = g.lower(params, h).host_route
    assert route.report["split"]["copies"] == 1  # h returned: a buffer of its own
    for _ in range(2):  # the second call takes the fast path
        got = leaves(g(params, h))
        want = leaves(purejit.jit(f)(params, h))
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_effects_are_refused_with_the_reason():
    layer, params, h = _model("mlp", 3)
    seen = []

    def loss(ps, h):
        for p in ps:
            h = layer(h, p)
        purejit.debug.callback(lambda v: seen.append(np.asarray(v)), h)
        return pnp.mean(h**2)

    f = purejit.jit(purejit.value_and_grad(loss), compiler_options=HOST)
    route = f.lower(params, h).host_route
    assert route.split is None
    assert "effects" in route.report["refused"]
    got = f(params, h)
    want = purejit.jit(purejit.value_and_grad(loss))(params, h)
    for a, b in zip(leaves(got), leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    text = str(purejit.explain(f, params, h))
    assert "host loop refused (runs as the rolled program)" in text
    assert "effects" in text


def test_a_loop_whose_stacked_output_is_returned_stays_whole():
    layer = _mlp_layer()

    def f(ps, h, xs):
        for p in ps:
            h = layer(h, p)
        # a loop of the user's own at the top level, whose stacked output is returned whole
        return pnp.sum(purejit.lax.scan(lambda c, x: (c + x, c * x), h, xs)[1], axis=0)

    params = mlp_params(3)
    h = np.ones((2, 8), np.float32)
    xs = np.arange(3 * 2 * 8, dtype=np.float32).reshape(3, 2, 8) / 10
    g = purejit.jit(f, compiler_options=HOST)
    route = g.lower(params, h, xs).host_route
    assert route.split is not None
    (kept,) = route.report["split"]["kept"]
    assert "its xs f32[3,2,8] is a stack made by an argument of the program" in kept["reason"]
    got = leaves(g(params, h, xs))
    want = leaves(purejit.jit(f)(params, h, xs))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_a_stacked_output_read_whole_by_a_later_loop_is_refused():
    def f(h):
        xs = pnp.asarray(np.arange(4 * 3, dtype=np.float32).reshape(4, 3))
        _, ys = purejit.lax.scan(lambda c, x: (c * 0.5 + x, c + x), h, xs)
        # the second loop's body reads the first's stacked output whole
        return purejit.lax.scan(lambda c, x: (c + pnp.sum(ys, axis=0) * x, c), h, xs)[0]

    h = np.ones(3, np.float32)
    g = purejit.jit(f, compiler_options=HOST)
    route = g.lower(h).host_route
    assert route.split is None
    assert "reads an earlier loop's stacked output f32[4,3]" in route.report["refused"]
    np.testing.assert_allclose(g(h), purejit.jit(f)(h), rtol=1e-6)
    assert "host loop refused" in str(purejit.explain(g, h))


def test_explain_names_the_host_loop():
    layer, params, h = _model("mlp", 4)
    f = purejit.jit(_step_fn(layer), compiler_options=HOST)
    text = str(purejit.explain(f, params, h))
    assert (
        "host loop: 3 programs (2 loop bodies, each compiled once: 4 trips, 4 trips reversed"
        in text
    )
    assert "each layer's 8 ops after the loop (2 per-layer inputs)" in text
    compiled = f.lower(params, h).compile()
    # XLA's figures as one: flops over the launches, the largest program's temporaries
    assert compiled.cost_analysis()["flops"] > 0
    memory = compiled.memory_analysis()
    assert len(memory.programs) == 3
    assert memory.temp_size_in_bytes == max(m.temp_size_in_bytes for m in memory.programs)


def test_option_values():
    with pytest.raises(ValueError, match="'host'"):
        purejit.jit(lambda x: x, compiler_options={"roll_layers": "hosted"})
    opts = purejit.compiler.options.CompilerOptions.parse(HOST)
    assert opts.host_loop() and not opts.stacks_params()
    assert not purejit.compiler.options.CompilerOptions.parse({"roll_layers": True}).host_loop()


@pytest.mark.skipif(pjrt.platform() != "cpu", reason="XLA refuses cuDNN's calls on a CPU only")
def test_xla_refusing_cudnn_attention_falls_back_to_the_rolled_program(monkeypatch):
    # cuDNN's calls emitted on the CPU (the fault-injection switch): XLA refuses the split's
    # programs; the whole rolled program is emitted again, and its compile decomposes them
    monkeypatch.setenv("PUREJIT_ATTENTION_INJECT_CUDA", "1")
    cudnn_fmha.refusals.clear()
    bf = np.dtype(ml_dtypes.bfloat16)
    rng = np.random.default_rng(0)

    def body(h, w):
        return (pnn.dot_product_attention(h @ w, h, h, is_causal=True) + h).astype(bf)

    layer = purejit.jit(body)

    def loss(ws, h):
        for w in ws:
            h = layer(h, w)
        return h.astype(np.float32).sum()

    ws = [(rng.standard_normal((32, 32)) / 6).astype(bf) for _ in range(3)]
    h = rng.standard_normal((1, 16, 2, 32)).astype(bf)
    try:
        f = purejit.jit(purejit.grad(loss), compiler_options=HOST)
        lowered = f.lower(ws, h)
        assert lowered.host_route.split is not None and "__cudnn" in lowered.as_text()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "refused fused attention", said once
            compiled = lowered.compile()
            got = leaves(compiled(ws, h))
            want = leaves(
                purejit.jit(purejit.grad(loss), compiler_options={"roll_layers": True})(ws, h)
            )
    finally:
        cudnn_fmha.refusals.clear()
    assert "XLA refused a program of the split" in lowered.host_route.report["refused"]
    assert type(compiled).__name__ == "Compiled"
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.float32(a), np.float32(b))
