"""The model and the steps `bench.tp_train` times: the transformer written once for purejit and
JAX (`xp` is the numpy module of either), its parameter specs for tensor parallelism and
FSDP, and the `single`, `dp`, `tp`, `fsdp` and `fsdp_jit` steps (`value_and_grad` + Adam, the
state donated) as `bench/tp_train.py`'s docstring describes them. Tests of the many-device
paths and `bench.tp_train_mp` build the same steps from here."""

from __future__ import annotations

import math

import numpy as np

LR = 1e-3
B1, B2, EPS = 0.9, 0.999, 1e-8

# ---- the model, written once for purejit and JAX ---------------------------------------------


def layer_norm(xp, x, g, b, eps=1e-5):
    m = xp.mean(x, axis=-1, keepdims=True)
    v = xp.mean((x - m) * (x - m), axis=-1, keepdims=True)
    return (x - m) / xp.sqrt(v + eps) * g + b


def gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def init_params(layers, d, f, rng, dtype=np.float32):
    """One dict per layer; `qkv` is (d, 3, d) so that its last dimension splits by heads."""

    def w(*shape, fan_in):
        return (rng.standard_normal(shape) / math.sqrt(fan_in)).astype(np.float32).astype(dtype)

    return [
        {
            "ln1_g": np.ones(d, dtype),
            "ln1_b": np.zeros(d, dtype),
            "qkv": w(d, 3, d, fan_in=d),
            "proj": w(d, d, fan_in=d),
            "ln2_g": np.ones(d, dtype),
            "ln2_b": np.zeros(d, dtype),
            "up": w(d, f, fan_in=d),
            "down": w(f, d, fan_in=f),
        }
        for _ in range(layers)
    ]


def tp_specs(P, axis="tp"):
    """The PartitionSpec of each parameter of a layer under tensor parallelism."""
    rep = P()
    return {
        "ln1_g": rep,
        "ln1_b": rep,
        "qkv": P(None, None, axis),
        "proj": P(axis, None),
        "ln2_g": rep,
        "ln2_b": rep,
        "up": P(None, axis),
        "down": P(axis, None),
    }


def transformer(xp, params, x, heads, reduce=lambda v: v, attention=None):
    """Causal pre-LN transformer on x (batch, seq, width). `heads` is the number of heads
    this device holds; `reduce` sums the partial results of the row-split projections over
    the devices that hold the other heads and hidden units (the identity on one device);
    `attention(q, k, v, scale)` on (batch, seq, heads, head dim) arrays replaces the
    attention written by hand (JAX's cuDNN call)."""
    b, s, d = x.shape
    causal = xp.arange(s)[:, None] >= xp.arange(s)[None, :]
    for p in params:
        dl = p["qkv"].shape[2]
        hd = dl // heads
        h = layer_norm(xp, x, p["ln1_g"], p["ln1_b"])
        qkv = xp.reshape(h @ xp.reshape(p["qkv"], (d, 3 * dl)), (b, s, 3, heads, hd))
        if attention is not None:
            o = attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], 1.0 / math.sqrt(hd))
        else:
            o = _attention_by_hand(xp, qkv, causal)
        x = x + reduce(xp.reshape(o, (b, s, dl)) @ p["proj"])
        h = layer_norm(xp, x, p["ln2_g"], p["ln2_b"])
        x = x + reduce(gelu(xp, h @ p["up"]) @ p["down"])
    return x


def _attention_by_hand(xp, qkv, causal):
    """Causal softmax attention of qkv (batch, seq, 3, heads, head dim), written out;
    the result is (batch, seq, heads, head dim)."""
    hd = qkv.shape[-1]
    q = xp.transpose(qkv[:, :, 0], (0, 2, 1, 3))
    k = xp.transpose(qkv[:, :, 1], (0, 2, 3, 1))
    v = xp.transpose(qkv[:, :, 2], (0, 2, 1, 3))
    scores = (q @ k) * (1.0 / math.sqrt(hd))
    scores = xp.where(causal, scores, xp.asarray(-1e9, scores.dtype))
    scores = scores - xp.max(scores, axis=-1, keepdims=True)
    e = xp.exp(scores)
    att = e / xp.sum(e, axis=-1, keepdims=True)
    return xp.transpose(att @ v, (0, 2, 1, 3))


def loss_fn(xp, params, x, y, heads, reduce=lambda v: v, attention=None):
    out = transformer(xp, params, x, heads, reduce, attention)
    err = (out - y).astype(np.float32)
    return xp.mean(err * err)


def fsdp_specs(P, axis="fsdp"):
    """Every parameter of a layer split along its first dimension."""
    return {k: P(axis) for k in ("ln1_g", "ln1_b", "qkv", "proj", "ln2_g", "ln2_b", "up", "down")}


def make_inputs(layers, batch, seq, d, f, dtype, seed=0):
    """The start every step and library begins from: Adam's state of freshly drawn
    parameters, a batch x and a target y (batch, seq, d), all drawn from one seed."""
    rng = np.random.default_rng(seed)
    params = init_params(layers, d, f, rng, dtype)
    x = rng.standard_normal((batch, seq, d)).astype(np.float32).astype(dtype)
    y = rng.standard_normal((batch, seq, d)).astype(np.float32).astype(dtype)
    return init_state(params), x, y


def init_state(params):
    """Adam's state: (parameters, first moments, second moments, step count)."""
    zeros = [{k: np.zeros(v.shape, np.float32) for k, v in p.items()} for p in params]
    return params, zeros, [dict(z) for z in zeros], np.zeros((), np.float32)


def state_specs(P, kind, layers):
    """The PartitionSpecs of the state, the batch and the target for a step (None: one
    device)."""
    per_layer = {"dp": lambda: {k: P() for k in tp_specs(P)}, "tp": lambda: tp_specs(P)}
    per_layer["fsdp"] = per_layer["fsdp_jit"] = lambda: fsdp_specs(P)
    if kind == "single":
        return None
    w = [per_layer[kind]()] * layers
    batch = P() if kind == "tp" else P(kind.removesuffix("_jit"))
    return (w, w, w, P()), batch, batch


def make_steps(lib, meshes, heads, layers, attention=None, jit_options=None):
    """The steps of the step kinds for `lib` (the purejit or the jax module), each
    `step(state, x, y) -> (new state, loss)`; all but `fsdp_jit` not yet jitted.

    Args:
        lib: `purejit` or `jax`.
        meshes: {"dp": a mesh with the axis "dp", "tp": ... "tp", "fsdp": ... "fsdp"}; a
            step whose mesh is missing is left out.
        heads: attention heads of the whole model.
        layers: number of layers (for the parameters' specs).
        attention: what replaces the attention written by hand (see `transformer`).
        jit_options: more keywords of `lib.jit` for `fsdp_jit` (purejit's compiler_options).
    """
    xp, lax = lib.numpy, lib.lax
    P = lib.sharding.PartitionSpec
    vag, tree_map = lib.value_and_grad, lib.tree_util.tree_map
    if lib.__name__ == "jax":

        def pvary(x, axis):
            return lax.pcast(x, axis, to="varying")
    else:
        pvary = lax.pvary

    def adam(state, grads):
        params, m, v, t = state
        t = t + 1.0
        f32 = np.float32
        m = tree_map(lambda a, g: B1 * a + (1 - B1) * g.astype(f32), m, grads)
        v = tree_map(lambda a, g: B2 * a + (1 - B2) * (g.astype(f32) * g.astype(f32)), v, grads)
        c1, c2 = 1.0 - xp.power(f32(B1), t), 1.0 - xp.power(f32(B2), t)

        def update(w, a, b):
            return (w.astype(f32) - LR * (a / c1) / (xp.sqrt(b / c2) + EPS)).astype(w.dtype)

        return tree_map(update, params, m, v), m, v, t

    def single(state, x, y):
        loss, g = vag(lambda p: loss_fn(xp, p, x, y, heads, attention=attention))(state[0])
        return adam(state, g), loss

    def dp_body(state, x, y):
        loss, g = vag(lambda p: loss_fn(xp, p, x, y, heads, attention=attention))(
            pvary(state[0], "dp")
        )
        return adam(state, lax.pmean(g, "dp")), lax.pmean(loss, "dp")

    n_tp = meshes["tp"].shape["tp"] if "tp" in meshes else 1
    if heads % n_tp:
        raise ValueError(f"{heads} heads do not split over {n_tp} devices")

    def tp_body(state, x, y):
        def reduce(v):
            return lax.psum(v, "tp")

        loss, g = vag(lambda p: loss_fn(xp, p, x, y, heads // n_tp, reduce, attention))(state[0])
        return adam(state, g), loss

    n_fsdp = meshes["fsdp"].shape["fsdp"] if "fsdp" in meshes else 1

    def fsdp_body(state, x, y):
        def local_loss(shards):  # this device's batch, over 1/n of the global mean
            full = tree_map(lambda w: lax.all_gather(w, "fsdp", axis=0, tiled=True), shards)
            return loss_fn(xp, full, x, y, heads, attention=attention) / n_fsdp

        loss, g = vag(local_loss)(state[0])  # g: reduce-scattered, summed over devices
        return adam(state, g), lax.psum(loss, "fsdp")

    steps = {"single": single}
    bodies = {"dp": dp_body, "tp": tp_body, "fsdp": fsdp_body}
    for kind, body in bodies.items():
        if kind in meshes:
            st, xs, ys = state_specs(P, kind, layers)
            specs = dict(in_specs=(st, xs, ys), out_specs=(st, P()))
            steps[kind] = lib.shard_map(body, mesh=meshes[kind], **specs)
    if "fsdp" in meshes:
        st, xs, ys = state_specs(P, "fsdp_jit", layers)
        sh = shardings(lib, meshes["fsdp"], (st, xs, ys, P()))
        steps["fsdp_jit"] = lib.jit(
            single,
            in_shardings=sh[:3],
            out_shardings=(sh[0], sh[3]),
            donate_argnums=0,
            **(jit_options or {}),
        )
    return steps


def shardings(lib, mesh, specs):
    """NamedShardings of a tree of PartitionSpecs (lists, tuples and dicts are nodes)."""
    P, NS = lib.sharding.PartitionSpec, lib.sharding.NamedSharding
    if isinstance(specs, P):
        return NS(mesh, specs)
    if isinstance(specs, dict):
        return {k: shardings(lib, mesh, v) for k, v in specs.items()}
    return type(specs)(shardings(lib, mesh, v) for v in specs)
