"""The host loop running k consecutive trips of a loop per launch
(`compiler_options={"roll_layers": "host", "host_layers_per_run": k}`,
`passes/_compose.py`): float32 training steps (donated, the update folded into the backward
body) against the rolled and unrolled programs at 1e-5, with the number of layers not a
multiple of k (the remainder a program of its own), the launches and XLA compiles counted."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from tests.compiler.test_host_loop import (  # noqa: F401
    _counting_compiles,
    _full_precision,
    _model,
    _step_fn,
    _steps,
)
from tests.compiler.test_host_loop_fold import _adam_step, _run, _same
from tests.passes.roll_layers_util import mlp_params

tmap = purejit.tree_util.tree_map


def _jit(step, k):
    opts = {"roll_layers": "host", "host_layers_per_run": k}
    return purejit.jit(step, donate_argnums=0, compiler_options=opts)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("kind", ["mlp", "transformer"])
def test_k_layers_per_launch_match_rolled_and_unrolled(monkeypatch, kind, k):
    layer, params, h = _model(kind, 5)
    step = _step_fn(layer)
    f = _jit(step, k)
    s = f.lower(tmap(pnp.asarray, params), h).host_route.split
    loops = s.report["loops"]
    # 5 trips: k=2 runs 2+2+1, k=3 runs 3+2; each loop's two programs
    runs = {2: 3, 3: 2}[k]
    assert [(lp["per_run"], lp["runs"], lp["programs"]) for lp in loops] == [(k, runs, 2)] * 2
    assert s.kinds.count("body") == 4 and len(s.launches) == 2 * runs + 1
    ps = tmap(lambda v: pnp.asarray(v) + 0, params)
    calls = _counting_compiles(monkeypatch)
    saved = purejit.config.read("cache_dir")
    purejit.config.update("cache_dir", None)  # every program compiled here, none loaded
    try:
        got = []
        for _ in range(3):
            ps, value = f(ps, h)
            got.append(float(value))
    finally:
        purejit.config.update("cache_dir", saved)
    assert len(calls) == len(s.programs) == 5
    got_ps = [np.asarray(v) for v in purejit.tree_util.tree_leaves(ps)]
    for roll in (True, False):
        _, _, want, want_values = _steps(step, params, h, roll)
        np.testing.assert_allclose(got, want_values, rtol=1e-5, atol=1e-5)
        for a, b in zip(got_ps, want):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_k_dividing_the_depth_is_one_program_per_loop():
    layer, params, h = _model("mlp", 6)
    f = _jit(_step_fn(layer), 3)
    s = f.lower(tmap(pnp.asarray, params), h).host_route.split
    assert s.kinds.count("body") == 2 and len(s.launches) == 2 + 2 + 1
    # the backward program of 3 trips takes each trip's w and b over (aliased)
    k = [i for i, kind in enumerate(s.kinds) if kind == "body"][-1]
    assert all(len(L.donate) == 6 for L in s.launches if L.program == k)
    text = str(purejit.explain(f, tmap(pnp.asarray, params), h))
    assert "6 trips, 3 a launch, 6 trips reversed, 3 a launch" in text


def test_adam_with_k_layers_per_launch():
    layer, params = purejit.jit(lambda h, p: pnp.tanh(h @ p["w"] + p["b"])), mlp_params(5)
    h = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    zeros = tmap(np.zeros_like, params)
    step = _adam_step(layer)
    args = (params, zeros, zeros, np.float32(1.0), h)
    opts = {"roll_layers": "host", "host_layers_per_run": 2}
    f = purejit.jit(step, donate_argnums=(0, 1, 2), compiler_options=opts)
    state = [tmap(lambda v: pnp.asarray(v) + 0, a) for a in args]
    got = []
    for _ in range(3):
        res = f(*state)
        state = list(res[:3]) + state[3:]
        got.append([np.asarray(v) for v in purejit.tree_util.tree_leaves(res)])
    for roll in (True, False):
        _same(got, _run(step, args, roll, (0, 1, 2))[1])


def test_option_values():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="host_layers_per_run"):
            purejit.jit(lambda x: x, compiler_options={"host_layers_per_run": bad})
