# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Training with purejit
#
# Two small models trained end to end with `purejit.value_and_grad`, `purejit.random` and
# `purejit.example_libraries.optimizers`, each step one jitted program with its parameters
# donated:
#
# 1. a convolutional network on scikit-learn's 8×8 handwritten digits (real scans of digits,
#    1,797 images), scored on held-out images;
# 2. a character-level transformer on a text file shipped in the repository (purejit's own
#    README), which then writes a few lines.
#
# Each training step is also written with `jax.jit(jax.value_and_grad(...))`, to compare time
# per step, first call and the temporary memory XLA plans, with purejit's automatic
# rematerialisation on and off. Sizes are small so the notebook runs on a laptop CPU in about
# a minute; CI runs it.

# %%
import pathlib
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import purejit
import purejit.numpy as jnp
from purejit import lax, nn, random
from purejit.example_libraries import optimizers

print("purejit", purejit.__version__, "on", purejit.devices()[0].platform)

# %% [markdown]
# ## 1. A CNN on handwritten digits
#
# The images are 8×8 with values 0–16; we scale them to [0, 1] and hold out 20% for testing.
# Parameters are initialised from a `purejit.random` key (He initialisation), exactly as
# `jax.random` would give them for the same key.

# %%
digits = load_digits()
images = (digits.images / 16.0).astype(np.float32)[..., None]  # NHWC: (1797, 8, 8, 1)
labels = digits.target.astype(np.int32)
order = np.random.default_rng(0).permutation(len(labels))
n_test = len(labels) // 5
test_idx, train_idx = order[:n_test], order[n_test:]
x_train, y_train = images[train_idx], labels[train_idx]
x_test, y_test = images[test_idx], labels[test_idx]
print("train", x_train.shape, "test", x_test.shape)


def he(key, shape, fan_in):
    return random.normal(key, shape, jnp.float32) * np.sqrt(2.0 / fan_in)


def init_cnn(key):
    k1, k2, k3 = random.split(key, 3)
    return {
        "conv1": he(k1, (3, 3, 1, 16), 9),
        "b1": jnp.zeros(16),
        "conv2": he(k2, (3, 3, 16, 32), 9 * 16),
        "b2": jnp.zeros(32),
        "dense": he(k3, (4 * 4 * 32, 10), 4 * 4 * 32),
        "b3": jnp.zeros(10),
    }


def cnn(params, x):
    dn = ("NHWC", "HWIO", "NHWC")
    h = lax.conv_general_dilated(x, params["conv1"], (1, 1), "SAME", dimension_numbers=dn)
    h = nn.relu(h + params["b1"])
    h = lax.conv_general_dilated(h, params["conv2"], (1, 1), "SAME", dimension_numbers=dn)
    h = nn.relu(h + params["b2"])
    h = nn.max_pool(h, (2, 2), strides=(2, 2))  # (N, 4, 4, 32)
    return h.reshape(h.shape[0], -1) @ params["dense"] + params["b3"]


def cnn_loss(params, x, y):
    logp = nn.log_softmax(cnn(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


opt_init, opt_update, get_params = optimizers.adam(3e-3)


def train_step(step, opt_state, x, y):
    loss, grads = purejit.value_and_grad(cnn_loss)(get_params(opt_state), x, y)
    return loss, opt_update(step, grads, opt_state)


step_fn = purejit.jit(train_step, donate_argnums=(1,))
predict = purejit.jit(lambda p, x: jnp.argmax(cnn(p, x), axis=-1))

BATCH, STEPS = 128, 300
opt_state = opt_init(init_cnn(random.key(0)))
batches = np.random.default_rng(1)
losses = []
t0 = time.perf_counter()
for step in range(STEPS):
    idx = batches.integers(0, len(y_train), BATCH)
    loss, opt_state = step_fn(step, opt_state, x_train[idx], y_train[idx])
    losses.append(float(loss))
print(f"{STEPS} steps in {time.perf_counter() - t0:.1f} s, final loss {losses[-1]:.3f}")

accuracy = float(np.mean(np.asarray(predict(get_params(opt_state), x_test)) == y_test))
print(f"accuracy: {accuracy:.2f}")

# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(losses)
ax.set(xlabel="step", ylabel="cross-entropy", title="CNN on digits", yscale="log")
plt.show()

# %% [markdown]
# ## 2. A character-level transformer
#
# One pre-layer-norm transformer block stack with causal self-attention and GELU, trained to
# predict the next character of purejit's README.

# %%
ROOT = pathlib.Path.cwd()
while not (ROOT / "README.md").exists() and ROOT != ROOT.parent:
    ROOT = ROOT.parent
text = (ROOT / "README.md").read_text()
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = np.array([stoi[c] for c in text], np.int32)
VOCAB, SEQ, WIDTH, HEADS, LAYERS = len(chars), 64, 64, 4, 2
print(f"{len(text)} characters, vocabulary {VOCAB}")


def init_transformer(key):
    keys = iter(random.split(key, 4 + 4 * LAYERS))

    def dense(n_in, n_out):
        return random.normal(next(keys), (n_in, n_out)) * (1.0 / np.sqrt(n_in))

    layers = [
        {
            "ln1": jnp.ones(WIDTH),
            "qkv": dense(WIDTH, 3 * WIDTH),
            "proj": dense(WIDTH, WIDTH),
            "ln2": jnp.ones(WIDTH),
            "up": dense(WIDTH, 4 * WIDTH),
            "down": dense(4 * WIDTH, WIDTH),
        }
        for _ in range(LAYERS)
    ]
    return {
        "embed": random.normal(next(keys), (VOCAB, WIDTH)) * 0.1,
        "pos": random.normal(next(keys), (SEQ, WIDTH)) * 0.1,
        "layers": layers,
        "ln_f": jnp.ones(WIDTH),
        "out": dense(WIDTH, VOCAB),
    }


def layer_norm(x, scale):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + 1e-5) * scale


def attention(p, x):
    b, t, _ = x.shape
    q, k, v = jnp.split(x @ p["qkv"], 3, axis=-1)
    heads = lambda a: a.reshape(b, t, HEADS, WIDTH // HEADS).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(WIDTH // HEADS)
    causal = jnp.tril(jnp.ones((t, t), bool))
    weights = nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
    out = (weights @ v).transpose(0, 2, 1, 3).reshape(b, t, WIDTH)
    return out @ p["proj"]


def transformer(params, tokens):
    x = params["embed"][tokens] + params["pos"][: tokens.shape[1]]
    for p in params["layers"]:
        x = x + attention(p, layer_norm(x, p["ln1"]))
        x = x + nn.gelu(layer_norm(x, p["ln2"]) @ p["up"]) @ p["down"]
    return layer_norm(x, params["ln_f"]) @ params["out"]


def lm_loss(params, tokens):
    logp = nn.log_softmax(transformer(params, tokens[:, :-1]))
    return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1))


lm_init, lm_update, lm_params = optimizers.adam(3e-3)


def lm_step(step, state, tokens):
    loss, grads = purejit.value_and_grad(lm_loss)(lm_params(state), tokens)
    return loss, lm_update(step, grads, state)


lm_step_fn = purejit.jit(lm_step, donate_argnums=(1,))


def sample_batch(rng, batch=16):
    starts = rng.integers(0, len(data) - SEQ - 1, batch)
    return np.stack([data[s : s + SEQ + 1] for s in starts])


lm_state = lm_init(init_transformer(random.key(1)))
rng = np.random.default_rng(2)
lm_losses = []
t0 = time.perf_counter()
for step in range(200):
    loss, lm_state = lm_step_fn(step, lm_state, sample_batch(rng))
    lm_losses.append(float(loss))
print(
    f"200 steps in {time.perf_counter() - t0:.1f} s, loss {lm_losses[0]:.2f} -> {lm_losses[-1]:.2f}"
)

fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(lm_losses)
ax.set(xlabel="step", ylabel="cross-entropy (nats/char)", title="char transformer")
plt.show()

# %% [markdown]
# Sampling: feed the text so far, draw the next character from the model's distribution with
# `random.categorical`, repeat.

# %%
logits_fn = purejit.jit(lambda p, t: transformer(p, t)[:, -1])
key = random.key(3)
tokens = list(data[:SEQ])
for _ in range(120):
    key, sub = random.split(key)
    logits = logits_fn(lm_params(lm_state), np.array([tokens[-SEQ:]], np.int32))
    tokens.append(int(random.categorical(sub, logits[0] / 0.8)))
print("".join(chars[t] for t in tokens[SEQ:]))

# %% [markdown]
# ## 3. The same step under `jax.jit`
#
# The CNN step written with JAX (`jax.value_and_grad`, `jax.example_libraries.optimizers`),
# on the same batch: time per step (median of interleaved runs), first call (trace + compile),
# and XLA's planned temporary memory — for purejit with its automatic rematerialisation on
# (the default) and off.

# %%
import jax  # noqa: E402
import jax.numpy as jxnp  # noqa: E402
from jax.example_libraries import optimizers as jopt  # noqa: E402


def jax_cnn(params, x):
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.lax.conv_general_dilated(x, params["conv1"], (1, 1), "SAME", dimension_numbers=dn)
    h = jax.nn.relu(h + params["b1"])
    h = jax.lax.conv_general_dilated(h, params["conv2"], (1, 1), "SAME", dimension_numbers=dn)
    h = jax.nn.relu(h + params["b2"])
    h = jax.lax.reduce_window(h, -jxnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return h.reshape(h.shape[0], -1) @ params["dense"] + params["b3"]


def jax_loss(params, x, y):
    logp = jax.nn.log_softmax(jax_cnn(params, x))
    return -jxnp.mean(jxnp.take_along_axis(logp, y[:, None], axis=1))


j_init, j_update, j_get = jopt.adam(3e-3)


def jax_step(step, opt_state, x, y):
    loss, grads = jax.value_and_grad(jax_loss)(j_get(opt_state), x, y)
    return loss, j_update(step, grads, opt_state)


params0 = {k: np.asarray(v) for k, v in init_cnn(random.key(0)).items()}
xb, yb = x_train[:BATCH], y_train[:BATCH]


def measure(jitted, init, reps=30):
    """First call (trace + compile + run), median step time, XLA's temporary bytes."""
    state = init(params0)
    t = time.perf_counter()
    loss, state = jitted(0, state, xb, yb)
    np.asarray(loss)
    first = time.perf_counter() - t
    times = []
    for i in range(reps):
        t = time.perf_counter()
        loss, state = jitted(i, state, xb, yb)
        np.asarray(loss)
        times.append(time.perf_counter() - t)
    temp = jitted.lower(0, init(params0), xb, yb).compile().memory_analysis()
    return float(np.median(times)), first, temp.temp_size_in_bytes


rows = []
for name, remat in [("purejit", True), ("purejit, remat off", False)]:
    purejit.config.update("remat", remat)
    rows.append((name, *measure(purejit.jit(train_step), opt_init)))
purejit.config.update("remat", True)
rows.append(("jax.jit", *measure(jax.jit(jax_step), j_init)))
print(f"{'':20} {'step ms':>9} {'first call s':>13} {'temp KiB':>9}")
for name, step_s, first_s, temp in rows:
    print(f"{name:20} {step_s * 1e3:9.2f} {first_s:13.2f} {temp / 1024:9.0f}")

# %% [markdown]
# Absolute times on a shared CPU vary from run to run; `python -m bench.train` measures the
# same comparison with interleaved timed loops, on CPU and GPU, for larger models.
