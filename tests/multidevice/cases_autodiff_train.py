"""Data-, tensor- and fully-sharded-data-parallel `value_and_grad` + Adam training steps of a
small transformer (shard_map, and jit with shardings for FSDP) on 8 forced CPU devices: equal
to the single-device step and to JAX's same program (the steps of `bench/tp_train.py`; run
by _harness)."""

import jax
import numpy as np

import purejit
from bench import tp_train_model

DEVS = purejit.devices()
assert len(DEVS) == 8, DEVS
LAYERS, BATCH, SEQ, WIDTH, HEADS, MLP = 1, 8, 8, 32, 8, 64


def _meshes(lib):
    devs = np.array(lib.devices())
    return {a: lib.sharding.Mesh(devs, (a,)) for a in ("dp", "tp", "fsdp")}


def _close(a, b, tol):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=tol, atol=tol)


def case_dp_tp_fsdp_steps_equal_single_device_and_jax():
    rng = np.random.default_rng(0)
    params = tp_train_model.init_params(LAYERS, WIDTH, MLP, rng)
    state = tp_train_model.init_state(params)
    x = rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32)
    y = rng.standard_normal((BATCH, SEQ, WIDTH)).astype(np.float32)
    ours = tp_train_model.make_steps(purejit, _meshes(purejit), HEADS, LAYERS)
    theirs = tp_train_model.make_steps(jax, _meshes(jax), HEADS, LAYERS)
    want_state, want_loss = purejit.jit(ours["single"])(state, x, y)
    j_state, j_loss = jax.jit(theirs["single"])(state, x, y)
    _close((want_state, want_loss), (j_state, j_loss), 1e-4)
    for kind in ("dp", "tp", "fsdp", "fsdp_jit"):
        f = ours[kind] if kind == "fsdp_jit" else purejit.jit(ours[kind], donate_argnums=0)
        jf = theirs[kind] if kind == "fsdp_jit" else jax.jit(theirs[kind])
        new, loss = f(state, x, y)
        jnew, jloss = jf(state, x, y)
        _close((new, loss), (want_state, want_loss), 1e-4)
        _close((new, loss), (jnew, jloss), 1e-4)
        moved = max(
            float(np.abs(np.asarray(a) - b).max())
            for a, b in zip(jax.tree_util.tree_leaves(new[0]), jax.tree_util.tree_leaves(params))
        )
        assert moved > 1e-4, f"{kind}: the step did not change the parameters"
        if kind.startswith("fsdp"):  # the new parameters stay split over the 8 devices
            leaf = purejit.tree_util.tree_leaves(new[0])[0]
            assert len({str(s.index) for s in leaf.buffer.addressable_shards}) == 8, kind
