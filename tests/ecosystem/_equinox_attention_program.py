"""Equinox beyond its basics (tests/ecosystem/test_equinox_attention_dropin.py): a small
attention classifier (eqx.nn.MultiheadAttention, Linear, LayerNorm, Dropout, an Embedding)
trained with eqx.filter_grad under eqx.filter_jit with optax, its batch through
eqx.filter_vmap with a key per example, eqx.nn.State-carrying BatchNorm under
filter_vmap(axis_name=...), eqx.internal.while_loop(kind="checkpointed") under jit(grad)
and filter_checkpoint under filter_grad. `python _equinox_attention_program.py OUT.npz`
runs it on JAX, `python -m purejit run _equinox_attention_program.py OUT.npz` on
purejit."""

import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax


class Classifier(eqx.Module):
    embed: eqx.nn.Embedding
    attn: eqx.nn.MultiheadAttention
    norm: eqx.nn.LayerNorm
    drop: eqx.nn.Dropout
    head: eqx.nn.Linear

    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.embed = eqx.nn.Embedding(10, 8, key=k1)
        self.attn = eqx.nn.MultiheadAttention(num_heads=2, query_size=8, key=k2)
        self.norm = eqx.nn.LayerNorm(8)
        self.drop = eqx.nn.Dropout(0.1)
        self.head = eqx.nn.Linear(8, 3, key=k3)

    def __call__(self, tokens, *, key=None):
        x = jax.vmap(self.embed)(tokens)  # (L, 8)
        h = self.attn(x, x, x)
        h = self.drop(h, key=key, inference=key is None)
        x = jax.vmap(self.norm)(x + h)
        return self.head(jnp.mean(x, axis=0))


def main(out):
    key = jax.random.PRNGKey(0)
    kmodel, kdata, kdrop = jax.random.split(key, 3)
    model = Classifier(kmodel)
    tokens = jax.random.randint(kdata, (6, 5), 0, 10)
    labels = jnp.array([0, 1, 2, 0, 1, 2])
    opt = optax.adam(5e-3)
    state = opt.init(eqx.filter(model, eqx.is_inexact_array))
    res = {}

    def loss_fn(model, key):
        keys = jax.random.split(key, tokens.shape[0])
        logits = eqx.filter_vmap(lambda t, k: model(t, key=k))(tokens, keys)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    @eqx.filter_jit
    def step(model, state, key):
        grads = eqx.filter_grad(loss_fn)(model, key)
        updates, state = opt.update(grads, state, eqx.filter(model, eqx.is_inexact_array))
        return eqx.apply_updates(model, updates), state

    losses = []
    for i in range(5):
        k = jax.random.fold_in(kdrop, i)
        losses.append(np.asarray(eqx.filter_jit(loss_fn)(model, k)))
        model, state = step(model, state, k)
    res["losses"] = np.stack(losses)
    res["logits"] = np.asarray(eqx.filter_vmap(model)(tokens))
    for i, leaf in enumerate(jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array))):
        res[f"param{i}"] = np.asarray(leaf)

    # stateful BatchNorm under filter_vmap with a named axis
    bn, bn_state = eqx.nn.make_with_state(eqx.nn.BatchNorm)(4, axis_name="batch", mode="ema")
    x = jax.random.normal(kdata, (8, 4))
    batched = eqx.filter_vmap(bn, in_axes=(0, None), out_axes=(0, None), axis_name="batch")
    y, bn_state = batched(x, bn_state)
    y, bn_state = batched(x * 2 + 1, bn_state)
    res["bn_out"] = np.asarray(y)
    for i, leaf in enumerate(jax.tree_util.tree_leaves(bn_state)):
        res[f"bn_state{i}"] = np.asarray(leaf)

    # Equinox's checkpointed while loop (a custom_vjp whose residuals hold Python bools)
    # under jit(grad), and filter_checkpoint under filter_grad
    def body(c):
        return c[0] + 1, c[1] * 1.5 + jnp.sin(c[1])

    def loop(x):
        _, y = eqx.internal.while_loop(
            lambda c: c[0] < 5, body, (0, x), max_steps=8, kind="checkpointed"
        )
        return y.sum()

    res["loop_grad"] = np.asarray(jax.jit(jax.grad(loop))(x))
    mlp = eqx.nn.MLP(4, 2, 8, 2, key=kmodel)
    ckpt = eqx.filter_checkpoint(lambda m, x: jax.vmap(m)(x).sum())
    for i, leaf in enumerate(jax.tree_util.tree_leaves(eqx.filter_grad(ckpt)(mlp, x))):
        res[f"ckpt_grad{i}"] = np.asarray(leaf)
    np.savez(out, **res)


if __name__ == "__main__":
    main(sys.argv[1])
