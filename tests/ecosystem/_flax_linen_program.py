"""A small Flax linen program (tests/ecosystem/test_flax_linen_dropin.py): an MLP and a
Transformer-ish model (Conv, LayerNorm, Dropout with rngs, MultiHeadDotProductAttention,
BatchNorm) initialised, applied and trained with optax under jax.jit, and the lifted
transformations nn.scan, nn.remat, nn.vmap, nn.cond.
`python _flax_linen_program.py OUT.npz` runs it on JAX, `python -m purejit run
_flax_linen_program.py OUT.npz` on purejit (drop-in mode)."""

import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax


class MLP(nn.Module):
    features: tuple = (16, 8, 2)

    @nn.compact
    def __call__(self, x):
        for f in self.features[:-1]:
            x = nn.relu(nn.Dense(f)(x))
        return nn.Dense(self.features[-1])(x)


class Block(nn.Module):
    """Conv stem, self-attention with a residual, LayerNorm, Dropout, BatchNorm head."""

    dim: int = 8

    @nn.compact
    def __call__(self, x, *, train: bool):
        x = nn.Conv(self.dim, kernel_size=(3,), padding="SAME")(x)  # (B, L, dim)
        x = nn.gelu(x)
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=self.dim)(h, h)
        h = nn.Dropout(rate=0.25, deterministic=not train)(h)
        x = x + h
        x = nn.BatchNorm(use_running_average=not train, momentum=0.9)(x)
        x = jnp.mean(x, axis=1)
        return nn.Dense(3)(x)


class Cell(nn.Module):
    @nn.compact
    def __call__(self, c, x):
        h = nn.tanh(nn.Dense(4)(c) + nn.Dense(4)(x))
        return h, h


class RNN(nn.Module):
    """A cell scanned over time with nn.scan (Flax traces its body with partial eval)."""

    @nn.compact
    def __call__(self, xs):
        scan = nn.scan(Cell, variable_broadcast="params", split_rngs={"params": False}, in_axes=0)
        return scan()(jnp.zeros(4), xs)


class CondBlock(nn.Module):
    @nn.compact
    def __call__(self, x):
        dense = nn.Dense(3)
        return nn.cond(x.sum() > 0, lambda m, x: m(x), lambda m, x: -m(x) * 2, dense, x)


def lifted_transforms(res, key):
    """nn.scan, nn.remat, nn.vmap and nn.cond (lifted transformations), nn.scan also under
    jit(grad)."""
    k1, k2, k3, k4 = jax.random.split(key, 4)
    xs = jax.random.normal(k1, (5, 3))
    rnn = RNN()
    v = rnn.init(k2, xs)
    res["lift_scan"] = np.asarray(rnn.apply(v, xs)[1])
    g = jax.jit(jax.grad(lambda v: rnn.apply(v, xs)[1].sum()))(v)
    for i, leaf in enumerate(jax.tree_util.tree_leaves(g)):
        res[f"lift_scan_grad{i}"] = np.asarray(leaf)
    remat = nn.remat(nn.Dense)(3)
    v = remat.init(k3, xs)
    res["lift_remat"] = np.asarray(remat.apply(v, xs))
    g = jax.grad(lambda v: remat.apply(v, xs).sum())(v)
    res["lift_remat_grad"] = np.asarray(g["params"]["kernel"])
    vmapped = nn.vmap(
        nn.Dense, variable_axes={"params": 0}, split_rngs={"params": True}, in_axes=0
    )(2)
    v = vmapped.init(k4, xs)
    res["lift_vmap"] = np.asarray(vmapped.apply(v, xs))
    # nn.cond: init traces both branches; their parameter draws follow the trace order
    cond = CondBlock()
    v = cond.init(k4, xs)
    res["lift_cond"] = np.asarray(cond.apply(v, xs))
    res["lift_cond_neg"] = np.asarray(cond.apply(v, -xs))


def train_mlp(res, key):
    k1, k2 = jax.random.split(key)
    x = jax.random.normal(k1, (32, 4))
    y = jnp.stack([jnp.sin(x[:, 0]), x[:, 1] * x[:, 2]], axis=1)
    model = MLP()
    params = model.init(k2, x)
    res["mlp_init_out"] = np.asarray(model.apply(params, x))
    opt = optax.adam(1e-2)
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        def loss_fn(p):
            return jnp.mean((model.apply(p, x) - y) ** 2)

        loss, g = jax.value_and_grad(loss_fn)(params)
        updates, state = opt.update(g, state, params)
        return optax.apply_updates(params, updates), state, loss

    losses = []
    for _ in range(6):
        params, state, loss = step(params, state)
        losses.append(np.asarray(loss))
    res["mlp_losses"] = np.stack(losses)
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        res["mlp/" + jax.tree_util.keystr(path)] = np.asarray(leaf)


def train_block(res, key):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    x = jax.random.normal(k1, (4, 6, 3))
    labels = jnp.array([0, 1, 2, 1])
    model = Block()
    variables = model.init({"params": k2, "dropout": k3}, x, train=False)
    params, stats = variables["params"], variables["batch_stats"]
    res["block_eval_init"] = np.asarray(model.apply(variables, x, train=False))
    opt = optax.sgd(0.05, momentum=0.9)
    state = opt.init(params)

    @jax.jit
    def step(params, stats, state, dkey):
        def loss_fn(p):
            logits, upd = model.apply(
                {"params": p, "batch_stats": stats},
                x,
                train=True,
                rngs={"dropout": dkey},
                mutable=["batch_stats"],
            )
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
            return loss, upd["batch_stats"]

        (loss, stats), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, state = opt.update(g, state, params)
        return optax.apply_updates(params, updates), stats, state, loss

    losses = []
    for i in range(4):
        params, stats, state, loss = step(params, stats, state, jax.random.fold_in(k4, i))
        losses.append(np.asarray(loss))
    res["block_losses"] = np.stack(losses)
    out = model.apply({"params": params, "batch_stats": stats}, x, train=False)
    res["block_eval_final"] = np.asarray(out)
    tree = {"params": params, "batch_stats": stats}
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        res["block/" + jax.tree_util.keystr(path)] = np.asarray(leaf)


def main(out):
    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    res = {}
    train_mlp(res, k1)
    train_block(res, k2)
    lifted_transforms(res, k3)
    np.savez(out, **res)


if __name__ == "__main__":
    main(sys.argv[1])
