"""A small Flax nnx program (tests/ecosystem/test_flax_nnx_dropin.py): an MLP with
Dropout and BatchNorm trained with nnx.Optimizer under nnx.jit, the nnx MNIST tutorial's CNN
and train step, a Linear model trained
through nnx.split/merge under jax.jit, nnx.MultiHeadAttention, nnx.vmap/scan/grad/remat/cond,
and the error nnx raises when
a jitted function mutates a Variable of an outer trace. `python _flax_nnx_program.py
OUT.npz` runs it on JAX, `python -m purejit run _flax_nnx_program.py OUT.npz` on purejit."""

import sys
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, din, dhidden, dout, *, rngs: nnx.Rngs):
        # no bias before BatchNorm: its gradient is zero in exact arithmetic, and adam
        # would turn the rounding noise there into steps of the learning rate's size
        self.linear1 = nnx.Linear(din, dhidden, use_bias=False, rngs=rngs)
        self.bn = nnx.BatchNorm(dhidden, rngs=rngs)
        self.dropout = nnx.Dropout(0.2, rngs=rngs)
        self.linear2 = nnx.Linear(dhidden, dout, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.dropout(self.bn(self.linear1(x))))
        return self.linear2(x)


class CNN(nnx.Module):
    """The Flax nnx MNIST tutorial's model, narrower."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(8, 16, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(16 * 7 * 7, 32, rngs=rngs)
        self.linear2 = nnx.Linear(32, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        return self.linear2(nnx.relu(self.linear1(x)))


def save_state(res, prefix, module):
    state = nnx.state(module)
    for path, leaf in jax.tree_util.tree_leaves_with_path(state):
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        res[prefix + jax.tree_util.keystr(path)] = np.asarray(leaf)


def train_mlp(res):
    model = MLP(4, 16, 3, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-2), wrt=nnx.Param)
    key = jax.random.PRNGKey(1)
    x = jax.random.normal(key, (32, 4))
    labels = (x[:, 0] > 0).astype(jnp.int32) + (x[:, 1] > 0).astype(jnp.int32)

    @nnx.jit
    def train_step(model, optimizer, x, labels):
        def loss_fn(model):
            logits = model(x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    losses = []
    model.train()
    for _ in range(6):
        losses.append(np.asarray(train_step(model, optimizer, x, labels)))
    res["mlp_losses"] = np.stack(losses)
    model.eval()
    res["mlp_eval"] = np.asarray(nnx.jit(lambda m, x: m(x))(model, x))
    save_state(res, "mlp", model)


def train_cnn(res):
    """The tutorial's train step (nnx.MultiMetric, value_and_grad with aux, adamw) on random
    28x28 images."""
    model = CNN(rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(5e-3, 0.9), wrt=nnx.Param)
    metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"))
    x = jax.random.normal(jax.random.PRNGKey(1), (16, 28, 28, 1))
    y = jax.random.randint(jax.random.PRNGKey(2), (16,), 0, 10)

    @nnx.jit
    def train_step(model, optimizer, metrics, x, y):
        def loss_fn(model):
            logits = model(x)
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
            return loss, logits

        (loss, logits), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
        metrics.update(loss=loss, logits=logits, labels=y)
        optimizer.update(model, grads)

    for _ in range(3):
        train_step(model, optimizer, metrics, x, y)
    for k, v in metrics.compute().items():
        res[f"cnn_{k}"] = np.asarray(v)
    save_state(res, "cnn", nnx.state(model, nnx.Param))


def train_linear_split_merge(res):
    model = nnx.Linear(3, 2, rngs=nnx.Rngs(params=7))
    x = jnp.linspace(-1.0, 1.0, 24).reshape(8, 3)
    y = jnp.stack([x.sum(1), x[:, 0] - x[:, 2]], axis=1)
    graphdef, params = nnx.split(model)

    @jax.jit
    def step(params):
        def loss_fn(p):
            m = nnx.merge(graphdef, p)
            return jnp.mean((m(x) - y) ** 2)

        loss, g = jax.value_and_grad(loss_fn)(params)
        return jax.tree.map(lambda p, d: p - 0.1 * d, params, g), loss

    losses = []
    for _ in range(5):
        params, loss = step(params)
        losses.append(np.asarray(loss))
    res["linear_losses"] = np.stack(losses)
    save_state(res, "linear", nnx.merge(graphdef, params))


def attention(res):
    mha = nnx.MultiHeadAttention(
        num_heads=2, in_features=8, qkv_features=8, decode=False, rngs=nnx.Rngs(3)
    )
    x = jax.random.normal(jax.random.PRNGKey(4), (2, 5, 8))
    res["mha_eager"] = np.asarray(mha(x))
    res["mha_jit"] = np.asarray(nnx.jit(lambda m, x: m(x))(mha, x))


def transforms(res):
    """nnx.vmap making a stack of modules, nnx.scan over it, nnx.grad through the scan,
    nnx.remat, and nnx.cond under nnx.jit."""

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(3, 3, rngs=rngs)

        def __call__(self, x):
            return nnx.relu(self.lin(x))

    @nnx.vmap(in_axes=0, out_axes=0)
    def make(key):
        return Block(nnx.Rngs(key))

    blocks = make(jax.random.split(jax.random.PRNGKey(4), 4))
    xs = jax.random.normal(jax.random.PRNGKey(5), (5, 3))

    @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
    def forward(block, x):
        return block(x)

    res["tr_scan"] = np.asarray(forward(blocks, xs))
    grads = nnx.grad(lambda b: forward(b, xs).sum())(blocks)
    save_state(res, "tr_scan_grad", grads)
    lin = nnx.Linear(3, 3, rngs=nnx.Rngs(5))
    res["tr_remat"] = np.asarray(nnx.remat(lambda m, x: m(x))(lin, xs))

    @nnx.jit
    def branch(m, x):
        return nnx.cond(x.sum() > 0, lambda m, x: m(x), lambda m, x: -x, m, x)

    res["tr_cond"] = np.stack([np.asarray(branch(lin, xs[i])) for i in range(3)])


def leak_check(res):
    count = nnx.Variable(jnp.zeros(()))

    @jax.jit
    def bump(x):
        count[...] = count[...] + x  # an outer Variable mutated inside jit
        return x

    try:
        bump(jnp.ones(()))
        res["leak_error"] = np.array("")
    except Exception as e:  # nnx raises flax.errors.TraceContextError, as JAX's tracer checks
        res["leak_error"] = np.array(type(e).__name__)


def main(out):
    res = {}
    train_mlp(res)
    train_cnn(res)
    train_linear_split_merge(res)
    attention(res)
    transforms(res)
    leak_check(res)
    np.savez(out, **res)


if __name__ == "__main__":
    main(sys.argv[1])
