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
# # purejit on a TPU (Google Colab)
#
# In Colab: *Runtime → Change runtime type → TPU*. Upload purejit's wheel (`make wheel` in a
# checkout writes `dist/purejit-*.whl`; drag it into Colab's file pane) or set
# `PUREJIT_SOURCE` below to a git URL you can reach, then *Run all*. The first cell installs
# purejit from there (with `jax[tpu]` when a TPU is attached and no jax is installed); the
# rest prints the devices and the PJRT client in use, compiles a bfloat16 transformer block
# with purejit and times it against `jax.jit` on the same device.
#
# On a machine without a TPU the notebook runs on whatever backend JAX finds (GPU or CPU),
# with smaller sizes on CPU, and says so. Where purejit is already importable (a local
# checkout, CI) nothing is installed.

# %%
import glob
import importlib.util
import os
import subprocess
import sys

# where to install purejit from: "" finds an uploaded purejit-*.whl in the working folder or
# /content; otherwise a wheel's path or a pip-installable git URL ("git+https://...@branch")
PUREJIT_SOURCE = os.environ.get("PUREJIT_SOURCE", "")


def tpu_attached() -> bool:
    """Whether this machine has a TPU (TPU VM device files, or Colab's TPU variables)."""
    env = ("COLAB_TPU_ADDR", "TPU_NAME", "TPU_ACCELERATOR_TYPE")
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*")) or any(
        v in os.environ for v in env
    )


def pip_install(*packages: str) -> None:
    """`pip install` into this kernel's interpreter; stops the notebook if it fails."""
    cmd = [sys.executable, "-m", "pip", "install", "-q", *packages]
    print("$", " ".join(cmd))
    subprocess.run(cmd, check=True)


def purejit_source() -> str:
    if PUREJIT_SOURCE:
        return PUREJIT_SOURCE
    wheels = sorted(glob.glob("purejit-*.whl") + glob.glob("/content/purejit-*.whl"))
    if not wheels:
        raise RuntimeError(
            "purejit is not installed: upload dist/purejit-*.whl (built by `make wheel`) to "
            "this runtime, or set PUREJIT_SOURCE to a git URL, then run this cell again"
        )
    return wheels[-1]


if importlib.util.find_spec("purejit") is None:
    if tpu_attached() and importlib.util.find_spec("jax") is None:
        pip_install("jax[tpu]>=0.10,<0.13")  # jax[tpu] brings the matching libtpu
    pip_install(purejit_source())  # never replaces an installed jax (not a hard dependency)
else:
    print("purejit is already installed; nothing to install")

# %% [markdown]
# ## Versions and devices

# %%
import time

import jax
import jax.numpy as jxnp
import numpy as np

import purejit
import purejit.numpy as pnp
from purejit.__main__ import info
from purejit.backend import pjrt

info()
PLATFORM = pjrt.platform()
ON_TPU = PLATFORM == "tpu"
# one PJRT client per process: a TPU is owned by one client, so purejit uses the one JAX
# created (a notebook that imported JAX first keeps working)
client = purejit.devices()[0].client
shared = client is jax.devices()[0].client
print(f"PJRT client: {client.platform} {client.platform_version!r}, shared with JAX: {shared}")
if ON_TPU:
    print(f"\nRunning on {len(purejit.devices())} TPU device(s): {purejit.devices()[0]}")
else:
    print(
        f"\nNo TPU here: running on the {PLATFORM} backend instead "
        f"({purejit.devices()[0]}). In Colab, pick a TPU runtime to run on a TPU."
    )

# %% [markdown]
# ## A bfloat16 transformer block
#
# Written once against a NumPy-like namespace `xp`, so purejit (`purejit.numpy`) and JAX
# (`jax.numpy`) compile exactly the same program. Weights and activations are bfloat16, the
# TPU's native type; the layer norm and the softmax compute in float32.

# %%
import math


def layer_norm(xp, x, g, b, eps=1e-5):
    x32 = x.astype(xp.float32)
    m = xp.mean(x32, axis=-1, keepdims=True)
    v = xp.mean((x32 - m) * (x32 - m), axis=-1, keepdims=True)
    return ((x32 - m) / xp.sqrt(v + eps)).astype(x.dtype) * g + b


def gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def softmax(xp, x):
    x32 = x.astype(xp.float32)
    e = xp.exp(x32 - xp.max(x32, axis=-1, keepdims=True))
    return (e / xp.sum(e, axis=-1, keepdims=True)).astype(x.dtype)


def block(xp, x, p, heads):
    """One pre-LN transformer block; x is (batch, seq, d)."""
    bsz, seq, d = x.shape
    hd = d // heads
    h = layer_norm(xp, x, p["ln1_g"], p["ln1_b"])
    qkv = xp.reshape(h @ p["qkv"], (bsz, seq, 3, heads, hd))
    q = xp.transpose(qkv[:, :, 0], (0, 2, 1, 3))
    k = xp.transpose(qkv[:, :, 1], (0, 2, 3, 1))
    v = xp.transpose(qkv[:, :, 2], (0, 2, 1, 3))
    att = softmax(xp, (q @ k) * (1.0 / math.sqrt(hd)))
    o = xp.reshape(xp.transpose(att @ v, (0, 2, 1, 3)), (bsz, seq, d))
    x = x + o @ p["proj"]
    h = layer_norm(xp, x, p["ln2_g"], p["ln2_b"])
    return x + gelu(xp, h @ p["up"]) @ p["down"]


# sizes: a real block on an accelerator, a small one on CPU
if PLATFORM == "cpu":
    BATCH, SEQ, D, HEADS = 2, 32, 64, 4
else:
    BATCH, SEQ, D, HEADS = 8, 512, 1024, 16

bf16 = jxnp.bfloat16  # the ml_dtypes bfloat16 NumPy type, which both libraries accept
rng = np.random.default_rng(0)


def weight(*shape):
    return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(bf16)


params = {
    "ln1_g": np.ones(D, bf16),
    "ln1_b": np.zeros(D, bf16),
    "qkv": weight(D, 3 * D),
    "proj": weight(D, D),
    "ln2_g": np.ones(D, bf16),
    "ln2_b": np.zeros(D, bf16),
    "up": weight(D, 4 * D),
    "down": weight(4 * D, D),
}
x = rng.standard_normal((BATCH, SEQ, D)).astype(bf16)
print(f"block: batch {BATCH}, seq {SEQ}, d {D}, {HEADS} heads, bfloat16 on {PLATFORM}")

# %% [markdown]
# Compile with both, put the inputs on the device once, and check that the two agree (to
# bfloat16 precision: 8 bits of mantissa).

# %%
pj_block = purejit.jit(lambda x, p: block(pnp, x, p, HEADS))
jx_block = jax.jit(lambda x, p: block(jxnp, x, p, HEADS))

pj_args = purejit.tree_util.tree_map(purejit.device_put, (x, params))
jx_args = jax.tree_util.tree_map(jax.device_put, (x, params))


def first_call(fn, args):
    """Seconds of the first call (trace + compile + run) and its result."""
    t0 = time.perf_counter()
    out = fn(*args)
    out.block_until_ready()
    return time.perf_counter() - t0, out


pj_first, y_pj = first_call(pj_block, pj_args)
jx_first, y_jx = first_call(jx_block, jx_args)
print("result:", y_pj.shape, y_pj.dtype)
a, b = np.asarray(y_pj, np.float32), np.asarray(y_jx, np.float32)
err = np.abs(a - b).max() / np.abs(b).max()
print(f"max |purejit - jax| / max |jax| = {err:.2e}")
assert y_pj.dtype == y_jx.dtype and err < 5e-2, err

# %% [markdown]
# ## Benchmark: purejit vs `jax.jit`
#
# Steady state: warm up, then time many calls between two synchronisations, a few times,
# and keep the fastest. First call: trace, optimise and compile (measured above).


# %%
def steady(fn, args, budget=0.3 if PLATFORM == "cpu" else 1.0, repeats=3):
    """Seconds per call, the best of `repeats` timed runs of about `budget` seconds."""
    fn(*args).block_until_ready()
    t0 = time.perf_counter()
    fn(*args).block_until_ready()
    n = max(1, int(budget / max(time.perf_counter() - t0, 1e-6)))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            out = fn(*args)
        out.block_until_ready()
        best = min(best, (time.perf_counter() - t0) / n)
    return best


pj_t, jx_t = steady(pj_block, pj_args), steady(jx_block, jx_args)
flops = 2 * BATCH * SEQ * (12 * D * D + 2 * SEQ * D)  # the six matmuls of the block


def fmt(s):
    return f"{s * 1e6:9.1f} µs" if s < 1e-3 else f"{s * 1e3:9.2f} ms"


print(f"{'':<10}{'per call':>12}{'TFLOP/s':>10}{'first call':>13}")
for name, t, first in (("purejit", pj_t, pj_first), ("jax.jit", jx_t, jx_first)):
    print(f"{name:<10}{fmt(t):>12}{flops / t / 1e12:10.3f}{fmt(first):>13}")
print(
    f"\npurejit / jax.jit: steady state {pj_t / jx_t:.2f}x, first call {pj_first / jx_first:.2f}x"
)
if not ON_TPU:
    print(f"(measured on {PLATFORM}, not a TPU)")

# %% [markdown]
# ## What purejit did to it
#
# `purejit.explain` lists the passes, purejit's fusion groups and the kernels XLA built for
# this device. Its summary:

# %%
ex = purejit.explain(pj_block, *pj_args)
print(f"passes: {' -> '.join(r.name for r in ex.stages if r.iteration in (0, 1))}")
print(f"ops traced {ex.stages[0].ops_after}, after the passes {ex.stages[-1].ops_after}")
print(f"purejit's plan: {len(ex.groups)} fusion groups, {len(ex.kernels)} kernels")
print(f"XLA on {ex.platform}: {len(ex.xla_kernels)} kernels")

# %% [markdown]
# ## A bfloat16 training step with `grad`
#
# The block above as a tiny regression model: `purejit.value_and_grad` of a mean squared
# error, an SGD update with the parameters donated, all in one jitted program; the same step
# under `jax.jit(jax.value_and_grad(...))` must give the same loss (to bfloat16 precision).

# %%
target = rng.standard_normal((BATCH, SEQ, D)).astype(bf16)


def loss(xp, p, x, y):
    err = (block(xp, x, p, HEADS) - y).astype(xp.float32)
    return xp.mean(err * err)


def pj_train_step(p, x, y):
    value, grads = purejit.value_and_grad(lambda q: loss(pnp, q, x, y))(p)
    return value, purejit.tree.map(lambda w, g: w - (0.01 * g).astype(w.dtype), p, grads)


def jx_train_step(p, x, y):
    value, grads = jax.value_and_grad(lambda q: loss(jxnp, q, x, y))(p)
    return value, jax.tree.map(lambda w, g: w - (0.01 * g).astype(w.dtype), p, grads)


pj_step = purejit.jit(pj_train_step, donate_argnums=(0,))
jx_step = jax.jit(jx_train_step)
pj_params = {k: purejit.device_put(v) for k, v in params.items()}
jx_params = {k: jax.device_put(v) for k, v in params.items()}
for i in range(3):
    pj_loss, pj_params = pj_step(pj_params, x, target)
    jx_loss, jx_params = jx_step(jx_params, x, target)
    print(f"step {i}: loss purejit {float(pj_loss):.4f}, jax.jit {float(jx_loss):.4f}")
assert abs(float(pj_loss) - float(jx_loss)) <= 0.05 * abs(float(jx_loss)), "losses differ"
