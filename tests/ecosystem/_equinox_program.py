"""A small Equinox program (tests/ecosystem/test_equinox_dropin.py): an MLP trained 5 steps
with filter_jit + filter_value_and_grad, filter_vmap, Conv2d, LayerNorm, a GRUCell in a
scan, and error_if passing and raising. `python _equinox_program.py OUT.npz` runs it on JAX,
`python -m purejit run _equinox_program.py OUT.npz` on purejit (drop-in mode)."""

import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


def main(out):
    key = jax.random.PRNGKey(0)
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    res = {}
    # MLP trained with filter_jit + filter_value_and_grad
    mlp = eqx.nn.MLP(4, 2, width_size=8, depth=2, key=k1)
    x = jax.random.normal(k2, (16, 4))
    y = jnp.sin(x[:, :2])

    @eqx.filter_jit
    def step(model, x, y):
        def loss(m):
            pred = jax.vmap(m)(x)
            return jnp.mean((pred - y) ** 2)

        loss_value, g = eqx.filter_value_and_grad(loss)(model)
        model = eqx.apply_updates(model, jax.tree_util.tree_map(lambda d: -0.1 * d, g))
        return model, loss_value

    losses = []
    for _ in range(5):
        mlp, loss_value = step(mlp, x, y)
        losses.append(np.asarray(loss_value))
    res["mlp_losses"] = np.stack(losses)
    for i, leaf in enumerate(jax.tree_util.tree_leaves(eqx.filter(mlp, eqx.is_array))):
        res[f"mlp_param{i}"] = np.asarray(leaf)
    # filter_vmap over a batch
    res["vmap"] = np.asarray(eqx.filter_vmap(mlp)(x))
    # Conv2d and LayerNorm
    conv = eqx.nn.Conv2d(3, 4, kernel_size=3, padding=1, key=k3)
    img = jax.random.normal(k4, (3, 8, 8))
    res["conv"] = np.asarray(eqx.filter_jit(conv)(img))
    ln = eqx.nn.LayerNorm((4, 8, 8))
    res["layernorm"] = np.asarray(eqx.filter_jit(ln)(res["conv"]))
    # GRUCell in a scan
    cell = eqx.nn.GRUCell(4, 6, key=k5)

    @eqx.filter_jit
    def run_gru(cell, xs):
        def body(h, xt):
            h = cell(xt, h)
            return h, h

        return jax.lax.scan(body, jnp.zeros(6), xs)

    h, hs = run_gru(cell, x)
    res["gru_h"], res["gru_hs"] = np.asarray(h), np.asarray(hs)

    # error_if: passes when the predicate is false, raises when true
    @eqx.filter_jit
    def checked(v):
        return eqx.error_if(v, v < 0, "negative!")

    res["error_if_ok"] = np.asarray(checked(jnp.ones(3)))
    try:
        checked(-jnp.ones(3)).block_until_ready()
        res["error_if_raised"] = np.asarray(False)
        res["error_if_type"] = np.asarray("")
    except Exception as e:  # equinox's EquinoxRuntimeError
        res["error_if_raised"] = np.asarray("negative!" in str(e))
        res["error_if_type"] = np.asarray(type(e).__name__)
    np.savez(out, **res)


if __name__ == "__main__":
    main(sys.argv[1])
