"""purejit.example_libraries.optimizers against jax.example_libraries.optimizers: the same
parameter trajectories over 300 jitted steps of a least-squares problem, for every optimizer
and schedule; adamw against its update equation written in NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp_ref
from jax.example_libraries import optimizers as jopt

import purejit
import purejit.numpy as jnp
from purejit.example_libraries import optimizers as popt

STEPS = 300
rng = np.random.default_rng(0)
A = rng.standard_normal((8, 5)).astype(np.float32) / 3
B = rng.standard_normal((8,)).astype(np.float32)
PARAMS = {"w": rng.standard_normal((5,)).astype(np.float32), "m": np.ones((2, 3), np.float32)}


def _grads(np_mod, p):
    # d/dw 0.5 |A w - b|^2 and d/dm 0.5 |m - 0.5|^2, written out so no autodiff is involved
    return {"w": A.T @ (A @ p["w"] - B), "m": p["m"] - 0.5}


def _run(lib, np_mod, jit, make):
    init, update, get_params = make(lib)
    # the parameters are read outside the step: sm3 keeps the shape in its state, which is
    # traced inside jit (as in JAX)
    step = jit(lambda i, p, s: update(i, _grads(np_mod, p), s))
    state = init(PARAMS)
    for i in range(STEPS):
        state = step(i, get_params(state), state)
    return {k: np.asarray(v) for k, v in get_params(state).items()}


CASES = {
    "sgd": lambda o: o.sgd(0.1),
    "momentum": lambda o: o.momentum(0.05, 0.9),
    "nesterov": lambda o: o.nesterov(0.05, 0.9),
    "adagrad": lambda o: o.adagrad(0.1),
    "rmsprop": lambda o: o.rmsprop(0.01),
    "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.01),
    "adam": lambda o: o.adam(0.01),
    "adamax": lambda o: o.adamax(0.01),
    "sm3": lambda o: o.sm3(0.1),
    "exponential_decay": lambda o: o.sgd(o.exponential_decay(0.1, 50, 0.5)),
    "inverse_time_decay": lambda o: o.sgd(o.inverse_time_decay(0.1, 50, 0.5, staircase=True)),
    "polynomial_decay": lambda o: o.adam(o.polynomial_decay(0.01, 200, 0.001, power=2.0)),
    "piecewise_constant": lambda o: o.momentum(
        o.piecewise_constant([100, 200], [0.1, 0.05, 0.01]), 0.5
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_trajectory_matches_jax(name):
    ours = _run(popt, jnp, purejit.jit, CASES[name])
    ref = _run(jopt, jnp_ref, jax.jit, CASES[name])
    for k in ref:
        np.testing.assert_allclose(ours[k], ref[k], rtol=2e-5, atol=2e-6, err_msg=f"{name}:{k}")
    # and it really optimised something
    assert np.abs(ours["m"] - 0.5).max() < np.abs(PARAMS["m"] - 0.5).max()


def test_adamw_update_equation():
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.1
    init, update, get_params = popt.adamw(lr, weight_decay=wd)
    state = init(PARAMS)
    x = {k: v.astype(np.float64) for k, v in PARAMS.items()}
    m = {k: np.zeros_like(v) for k, v in x.items()}
    v = {k: np.zeros_like(a) for k, a in x.items()}
    step = purejit.jit(lambda i, s: update(i, _grads(jnp, get_params(s)), s))
    for i in range(50):
        state = step(i, state)
        g = _grads(np, x)
        for k in x:
            m[k] = (1 - b1) * g[k] + b1 * m[k]
            v[k] = (1 - b2) * g[k] ** 2 + b2 * v[k]
            mhat, vhat = m[k] / (1 - b1 ** (i + 1)), v[k] / (1 - b2 ** (i + 1))
            x[k] = x[k] - lr * (mhat / (np.sqrt(vhat) + eps) + wd * x[k])
    for k, got in get_params(state).items():
        np.testing.assert_allclose(np.asarray(got), x[k], rtol=1e-4, atol=1e-5)


def test_utilities_match_jax():
    tree = {"a": np.arange(3.0, dtype=np.float32), "b": np.full((2, 2), 2.0, np.float32)}
    np.testing.assert_allclose(popt.l2_norm(tree), jopt.l2_norm(tree), rtol=1e-6)
    for max_norm in (1.0, 100.0):
        ours, ref = popt.clip_grads(tree, max_norm), jopt.clip_grads(tree, max_norm)
        for k in tree:
            np.testing.assert_allclose(ours[k], ref[k], rtol=1e-6)


def test_state_is_a_pytree_and_round_trips():
    init, update, get_params = popt.adam(0.01)
    state = init(PARAMS)
    leaves, treedef = purejit.tree_util.tree_flatten(state)
    assert len(leaves) == 3 * 2  # (x, m, v) per parameter
    packed = popt.pack_optimizer_state(popt.unpack_optimizer_state(state))
    for a, b in zip(purejit.tree_util.tree_leaves(packed), leaves):
        np.testing.assert_array_equal(a, b)


def test_mismatched_gradient_tree_names_both():
    init, update, _ = popt.sgd(0.1)
    state = init(PARAMS)
    with pytest.raises(TypeError, match="gradient tree does not match"):
        update(0, {"w": PARAMS["w"]}, state)


def test_bad_step_size():
    with pytest.raises(TypeError, match="scalar or a schedule"):
        popt.sgd(np.ones(3))
