"""The host loop's memory (issue #32): what each layer's forward trip saves for the backward
is what the unrolled program keeps alive from that layer's forward to its backward, byte for
byte (the residual plan is the same; docs/benchmarks/roll_layers_cpu.md, "Session 20, third
pass"), and `HostLoopCompiled.memory_plan` counts the buffers the launches hold."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import purejit
import purejit.fused_attention as fa
import purejit.numpy as pnp
from bench.models import transformer, transformer_params
from passes._same_rows import _root
from tests.compiler.test_host_loop import _step_fn, _steps
from tests.passes.roll_layers_util import leaves

tmap = purejit.tree_util.tree_map


def _step(heads: int):
    return _step_fn(purejit.jit(lambda h, p: transformer(pnp, [p], h, heads)))


def _lowered(layers: int, roll, d=16, heads=2, dtype=np.float32):
    params = transformer_params(layers, d, np.random.default_rng(0), dtype=np.dtype(dtype))
    h = np.random.default_rng(1).standard_normal((2, 8, d)).astype(dtype)
    f = purejit.jit(_step(heads), donate_argnums=0, compiler_options={"roll_layers": roll})
    return f.lower(params, h), params, h


def _kept_to_backward(fn) -> int:
    """Bytes of the buffers an unrolled step computes before its first weight gradient (a
    `dot_general` of a 2-D parameter's type: the last layer's backward has begun) and reads
    after it: every layer's residuals, and the last layer's first backward values. A
    barrier's result is its operand's buffer (as XLA assigns it within one program)."""
    weights = {p.type for p in fn.params if p.type.rank == 2}
    turn = next(
        i for i, op in enumerate(fn.ops)
        if op.name == "dot_general" and op.results[0].type in weights
    )  # fmt: skip
    defined, last = {}, {}
    for i, op in enumerate(fn.ops):
        for r in op.results:
            defined[r] = i
        for v in op.operands:
            last[v] = i
    for v in fn.results:
        last[v] = len(fn.ops)
    made = {r: (op, i) for op in fn.ops for i, r in enumerate(op.results)}
    kept = {_root(v, made) for v, i in defined.items() if i < turn and last.get(v, -1) >= turn}
    return sum(v.type.nbytes for v in kept)


def _unrolled_per_layer(**kw) -> int:
    four, six = (_kept_to_backward(_lowered(n, False, **kw)[0].fn) for n in (4, 6))
    assert (six - four) % 2 == 0
    return (six - four) // 2


def _forward_saves(lowered) -> int:
    """Bytes of the forward body's results: the layer's output (the next layer's input,
    which its backward trip reads) and what it saves for its backward trip."""
    s = lowered.host_route.split
    body = s.programs[s.launches[0].program]
    assert s.kinds[s.launches[0].program] == "body"
    return sum(r.type.nbytes for r in body.results)


def test_forward_body_saves_what_the_unrolled_step_keeps():
    # attention as written (no fused kernel): one value more a layer, the count of the
    # softmax's maxima (f32[batch, heads, seq], 1/seq of the probabilities' bytes), which
    # the unrolled step recomputes from the saved mask; everything else byte for byte
    per_layer = _unrolled_per_layer()
    lowered = _lowered(4, "host")[0]
    s = lowered.host_route.split
    body = s.programs[s.launches[0].program]
    made = {r: op for op in body.ops for r in op.results}
    counts = [
        r for r in body.results
        if made[r].name == "reduce" and made[made[r].operands[0]].name == "convert"
        and made[made[made[r].operands[0]].operands[0]].name == "compare"
    ]  # fmt: skip
    assert [str(r.type) for r in counts] == ["f32[2,2,8]"]
    assert _forward_saves(lowered) == per_layer + counts[0].type.nbytes


def test_with_fused_attention_as_on_a_gpu(monkeypatch):
    # the attention rewrite as an H200's compile runs it (lowered only: no cuDNN here)
    # with the projection split at any size (on an H200 from 2**34 flops a part, which
    # bench's d=1024 model passes): the layer's normalised input behind three barriers, one
    # buffer, which the forward body returned three times before `_same_rows`
    hopper = {"max_head_dim": 256, "distinct_v_head_dim": True, "window": True,
              "split_min_flops": 0.0}  # fmt: skip
    monkeypatch.setattr(fa, "target_options", lambda: hopper)
    kw = {"d": 32, "heads": 2, "dtype": ml_dtypes.bfloat16}
    per_layer = _unrolled_per_layer(**kw)
    lowered = _lowered(4, "host", **kw)[0]
    s = lowered.host_route.split
    names = [op.name for op in s.programs[0].ops]
    assert "dot_product_attention" in names and "optimization_barrier" in names
    # the second and third copies (ys 3 and 5) read as the first's (y 1): 2 x [2, 8, 32] bf16
    assert [(m["merged"], m["bytes_per_trip"]) for m in s.report["merged"]] == [
        ([(3, 1), (5, 1)], 2048)
    ]
    assert _forward_saves(lowered) == per_layer


def test_memory_plan_counts_the_saved_values():
    layers = 4
    lowered, params, h = _lowered(layers, "host")
    saved = _forward_saves(lowered)
    plan = lowered.compile().memory_plan()
    layer_bytes = sum(v.nbytes for v in params[0].values())
    args = sum(v.nbytes for p in params for v in p.values()) + h.nbytes + plan["constants"]
    live = plan["live"]
    # each forward trip adds what it saves; nothing is dropped until the backward loop
    assert [b - a for a, b in zip(live[: layers - 1], live[1:layers])] == [saved] * (layers - 1)
    assert live[0] == args + saved
    # at the end: the new parameters (written into the donated buffers), the input and the
    # loss
    assert live[-1] == args + 4
    assert plan["peak"] >= max(live)
    kinds = [p["kind"] for p in plan["programs"]]
    assert kinds == ["body", "body", "glue"]
    assert [p["launches"] for p in plan["programs"]] == [layers, layers, 1]
    # the backward trip writes its layer's new parameters into the donated buffers
    assert plan["programs"][1]["alias"] == layer_bytes


def _barrier_layer(h, p):
    # one value behind a barrier of its own with each weight, as the projection split does
    n = pnp.tanh(h)
    out = h
    for w in (p["a"], p["b"], p["c"]):
        nb, wb = purejit.lax.optimization_barrier((n, w))
        out = out + nb @ wb
    return out


def test_a_value_behind_barriers_is_saved_once_and_steps_match():
    rng = np.random.default_rng(0)
    params = [{k: (rng.standard_normal((8, 8)) / 8).astype(np.float32) for k in "abc"}
              for _ in range(4)]  # fmt: skip
    h = rng.standard_normal((2, 8)).astype(np.float32)
    layer = purejit.jit(_barrier_layer)

    step = _step_fn(layer)
    f, _, got, values = _steps(step, params, h, "host")
    s = f.lower(tmap(pnp.asarray, params), h).host_route.split
    (merged,) = s.report["merged"]
    assert len(merged["merged"]) == 2 and merged["bytes_per_trip"] == 2 * h.nbytes
    body = s.programs[s.launches[0].program]
    assert sum(r.type == body.results[0].type for r in body.results) == 2  # carry, tanh(h)
    for roll in (True, False):
        _, _, want, want_values = _steps(step, params, h, roll)
        np.testing.assert_allclose(values, want_values, rtol=1e-5, atol=1e-5)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert len(leaves(got)) == 12
