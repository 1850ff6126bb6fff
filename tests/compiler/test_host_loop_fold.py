"""The host loop's folding of each layer's update into the backward loop's body
(`passes/_fold_rows.py`): SGD and an Adam-like update with per-layer state against the
rolled and unrolled programs (float32, 1e-5: XLA fuses a loop body and a program of its own
differently), the donated buffers taken over by each layer's backward trip, and an update
that reads every layer's gradient (a global-norm clip), which stays after the loop."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from tests.compiler.test_host_loop import _full_precision, _loss, _mlp_layer, _step_fn  # noqa: F401
from tests.passes.roll_layers_util import leaves, mlp_params

tmap = purejit.tree_util.tree_map
HOST = {"roll_layers": "host"}


def _adam_step(layer, lr=0.01, b1=0.9, b2=0.99, eps=1e-6):
    def step(ps, m, v, t, h):
        value, g = purejit.value_and_grad(_loss(layer))(ps, h)
        m = tmap(lambda a, b: b1 * a + (1 - b1) * b, m, g)
        v = tmap(lambda a, b: b2 * a + (1 - b2) * b * b, v, g)
        c1, c2 = 1 - b1**t, 1 - b2**t  # shared by every layer, computed after the loop
        ps = tmap(lambda p, a, b: p - lr * (a / c1) / (pnp.sqrt(b / c2) + eps), ps, m, v)
        return ps, m, v, value

    return step


def _clipped_step(layer, lr=0.1, clip=0.05):
    def step(ps, h):
        value, g = purejit.value_and_grad(_loss(layer))(ps, h)
        norm = pnp.sqrt(sum(pnp.sum(x * x) for x in purejit.tree_util.tree_leaves(g)))
        scale = pnp.minimum(1.0, clip / norm)
        return tmap(lambda p, d: p - lr * scale * d, ps, g), value

    return step


def _run(step, args, roll, donate, n=3):
    f = purejit.jit(step, donate_argnums=donate, compiler_options={"roll_layers": roll})
    state = [tmap(lambda v: pnp.asarray(v) + 0, a) for a in args]
    out = []
    for _ in range(n):
        res = f(*state)
        state = list(res[: len(donate)]) + state[len(donate) :]
        out.append(leaves(res))
    return f, out


def _backward(s):
    """The backward loop's body program and its launches."""
    k = [i for i, kind in enumerate(s.kinds) if kind == "body"][-1]
    return s.programs[k], [L for L in s.launches if L.program == k]


def _same(got, want):
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_sgd_update_runs_in_each_layers_backward_trip():
    layer, params = _mlp_layer(), mlp_params(4)
    h = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    step = _step_fn(layer)
    f, got = _run(step, (params, h), "host", (0,))
    s = f.lower(tmap(pnp.asarray, params), h).host_route.split
    (fold,) = [r["folded"] for r in s.report["folded"] if "folded" in r]
    assert (fold["rows"], fold["per_row_inputs"], fold["results_per_row"]) == (4, 2, 2)
    body, launches = _backward(s)
    # the body returns the new parameters, not the gradients: the carry and w, b
    assert [str(t) for t in body.result_types] == ["f32[2,8]", "f32[8]", "f32[8,8]"]
    assert s.kinds == ["body", "body", "glue"]  # no update program after the loop
    assert all(len(L.donate) == 2 for L in launches)
    for roll in (True, False):
        _same(got, _run(step, (params, h), roll, (0,))[1])


def test_adam_update_with_per_layer_state_is_folded():
    layer, params = _mlp_layer(), mlp_params(5)
    h = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    zeros = tmap(np.zeros_like, params)
    step = _adam_step(layer)
    args = (params, zeros, zeros, np.float32(1.0), h)
    f, got = _run(step, args, "host", (0, 1, 2))
    s = f.lower(*[tmap(pnp.asarray, a) for a in args]).host_route.split
    (fold,) = [r["folded"] for r in s.report["folded"] if "folded" in r]
    # per layer: w, b and their m, v (their decay computed in the trip); results per
    # layer: new w, b, m, v
    assert (fold["per_row_inputs"], fold["results_per_row"]) == (6, 6)
    body, launches = _backward(s)
    assert len(body.results) == 1 + 6
    # each trip takes its layer's parameters and state over (6 buffers a trip)
    assert [len(L.donate) for L in launches] == [6] * 5
    for roll in (True, False):
        _same(got, _run(step, args, roll, (0, 1, 2))[1])


def test_global_norm_clip_keeps_the_update_after_the_loop():
    # the update reads every layer's gradient (through the norm): each layer's part before
    # the global reduction may move into its trip, the update itself stays in the glue
    layer, params = _mlp_layer(), mlp_params(4)
    h = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    step = _clipped_step(layer)
    f, got = _run(step, (params, h), "host", (0,))
    s = f.lower(tmap(pnp.asarray, params), h).host_route.split
    assert s.kinds[-1] == "glue"
    (update,) = [L for L in s.launches if L.donate]
    assert s.kinds[update.program] == "glue" and len(update.donate) == 8
    _, launches = _backward(s)
    assert not any(L.donate for L in launches)
    for roll in (True, False):
        _same(got, _run(step, (params, h), roll, (0,))[1])


@pytest.mark.parametrize("layers", [3, 4])
def test_an_update_reading_another_layers_gradient_is_not_folded(layers):
    # layer k's update of w reads layer k+1's gradient (the last layer's, its own): the
    # last row's work differs from the others'; nothing moves
    layer, params = _mlp_layer(), mlp_params(layers)
    h = np.ones((2, 8), np.float32)

    def step(ps, h):
        value, g = purejit.value_and_grad(_loss(layer))(ps, h)
        n = len(ps)
        new = [
            {"w": p["w"] - 0.1 * g[min(i + 1, n - 1)]["w"], "b": p["b"] - 0.1 * g[i]["b"]}
            for i, p in enumerate(ps)
        ]
        return new, value

    f, got = _run(step, (params, h), "host", (0,), n=2)
    s = f.lower(tmap(pnp.asarray, params), h).host_route.split
    backward = [r for r in s.report["folded"]][-1]
    assert "not every layer's row" in backward["not_folded"]
    for roll in (True, False):
        _same(got, _run(step, (params, h), roll, (0,), n=2)[1])


def test_gradients_returned_with_the_update():
    # each layer's gradients are read after the loop as well (returned): they come out of
    # the body as rows next to the new parameters
    layer, params = _mlp_layer(), mlp_params(4)
    h = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)

    def step(ps, h):
        value, g = purejit.value_and_grad(_loss(layer))(ps, h)
        new = tmap(lambda p, d: p * 0.99 - 0.1 * d, ps, g)  # weight decay and SGD
        return new, g, value

    f, got = _run(step, (params, h), "host", (0,))
    s = f.lower(tmap(pnp.asarray, params), h).host_route.split
    (fold,) = [r["folded"] for r in s.report["folded"] if "folded" in r]
    assert fold["results_per_row"] == 4  # new w, b and their gradients
    for roll in (True, False):
        _same(got, _run(step, (params, h), roll, (0,))[1])
