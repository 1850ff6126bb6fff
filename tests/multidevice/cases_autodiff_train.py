"""Data- and tensor-parallel `value_and_grad` training steps of a small transformer under
shard_map on 8 forced CPU devices: equal to the single-device step and to JAX's same
program (the steps of `bench/tp_train.py`; run by _harness)."""

import jax
import numpy as np

import purejit
from bench import tp_train

DEVS = purejit.devices()
assert len(DEVS) == 8, DEVS
LAYERS, BATCH, SEQ, WIDTH, HEADS, MLP = 1, 8, 8, 32, 8, 64


def _meshes(lib):
    devs = np.array(lib.devices())
    return {a: lib.sharding.Mesh(devs, (a,)) for a in ("dp", "tp")}


def _close(a, b, tol):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=tol, atol=tol)


def case_dp_and_tp_steps_equal_single_device_and_jax():
    rng = np.random.default_rng(0)
    params = tp_train.init_params(LAYERS, WIDTH, MLP, rng)
    x = rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32)
    y = rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32)
    ours = tp_train.make_steps(purejit, _meshes(purejit), HEADS, LAYERS)
    theirs = tp_train.make_steps(jax, _meshes(jax), HEADS, LAYERS)
    want_params, want_loss = purejit.jit(ours["single"])(params, x, y)
    j_params, j_loss = jax.jit(theirs["single"])(params, x, y)
    _close((want_params, want_loss), (j_params, j_loss), 1e-4)
    for kind in ("dp", "tp"):
        new, loss = purejit.jit(ours[kind], donate_argnums=0)(params, x, y)
        jnew, jloss = jax.jit(theirs[kind])(params, x, y)
        _close((new, loss), (want_params, want_loss), 1e-4)
        _close((new, loss), (jnew, jloss), 1e-4)
        moved = max(
            float(np.abs(np.asarray(a) - b).max())
            for a, b in zip(jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(params))
        )
        assert moved > 1e-4, f"{kind}: the step did not change the parameters"
