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
# # purejit quick start
#
# purejit compiles pure, shape-static NumPy-style Python functions: it traces them into its
# own IR, optimises that IR with its own passes, emits StableHLO and lets XLA compile it
# through PJRT. The API follows JAX: `purejit.jit`, `purejit.numpy`, pytrees, static
# arguments, `lower()` / `compile()`.
#
# This notebook runs on CPU; it uses whatever backend is present.

# %%
import numpy as np

import purejit
import purejit.numpy as jnp
from purejit.backend import pjrt

print("purejit", purejit.__version__, "on", pjrt.platform())

# %% [markdown]
# ## 1. `purejit.jit`
#
# Decorate a function; the first call traces and compiles it for the abstract signature of
# its arguments (shapes, dtypes, weak types); later calls with the same signature reuse the
# executable.


# %%
@purejit.jit
def predict(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"]


rng = np.random.default_rng(0)
params = {
    "w1": rng.standard_normal((4, 8)).astype(np.float32),
    "b1": np.zeros(8, np.float32),
    "w2": rng.standard_normal((8, 2)).astype(np.float32),
}
x = rng.standard_normal((3, 4)).astype(np.float32)

y = predict(params, x)
print(type(y).__name__, y.shape, y.dtype)
print(y)
np.testing.assert_allclose(y, np.tanh(x @ params["w1"]) @ params["w2"], rtol=1e-5)

# %%
predict(params, x * 2)  # same signature: a cache hit
predict(params, np.ones((5, 4), np.float32))  # new shape: traced and compiled again
print(predict.stats)

# %% [markdown]
# Python values that change the program (a loop count, an axis) are passed as static
# arguments; each value compiles its own executable.

# %%
from functools import partial


@partial(purejit.jit, static_argnames="n")
def power(x, n):
    out = x
    for _ in range(n - 1):
        out = out * x
    return out


print(power(np.float32(2.0), n=3), power(np.float32(2.0), n=10))

# %% [markdown]
# ## 2. `purejit.numpy`
#
# NumPy's API, with JAX's type promotion: Python scalars are *weakly typed*, so they do not
# widen arrays (`float16 array * 2.0` stays `float16`), and 64-bit types are off by default.

# %%
a = jnp.asarray(np.arange(6, dtype=np.float16).reshape(2, 3))
print((a * 2.0).dtype, (a + np.float32(1)).dtype)  # float16 float32
print(jnp.asarray(np.arange(3)).dtype)  # int64 input -> int32 (x64 off)
print(jnp.sum(a, axis=0), jnp.mean(a), jnp.max(a, axis=1, keepdims=True).shape)

# %% [markdown]
# ## 3. Eager mode
#
# Outside `jit`, the same functions run op by op on the device. Each primitive is compiled
# once per abstract signature and cached, like JAX's eager mode. Results are `purejit.Array`s,
# whose operators keep dispatching through purejit.

# %%
from purejit.runtime.eager import eval_trace

before = eval_trace.compiles
z = jnp.exp(jnp.asarray(np.linspace(0, 1, 5).astype(np.float32))) * 2 - 1
print(z, "| new eager compiles:", eval_trace.compiles - before)
before = eval_trace.compiles
z = jnp.exp(jnp.asarray(np.linspace(1, 2, 5).astype(np.float32))) * 2 - 1
print("same signatures again -> new eager compiles:", eval_trace.compiles - before)

# %% [markdown]
# Data-dependent Python control flow cannot be traced (the value is unknown at trace time);
# the error points to the line and suggests the fixes. `purejit.disable_jit()` runs a jitted
# function eagerly, which is handy for debugging with `print` and `pdb`.


# %%
@purejit.jit
def clip_positive(v):
    if v.sum() > 0:
        return jnp.maximum(v, 0)
    return v


try:
    clip_positive(np.array([1.0, -2.0, 3.0], np.float32))
except purejit.ConcretizationTypeError as e:
    print(type(e).__name__, ":", str(e)[:160], "...")

with purejit.disable_jit():
    print(clip_positive(np.array([1.0, -2.0, 3.0], np.float32)))

# %% [markdown]
# ## 4. Control flow
#
# Data-dependent choices and loops inside `jit` use `purejit.lax`, as in JAX: `cond` compiles
# both branches into the program, `fori_loop` / `scan` / `while_loop` compile the body once.

# %%
from purejit import lax


@purejit.jit
def clip_positive_jit(v):
    return lax.cond(v.sum() > 0, lambda u: jnp.maximum(u, 0), lambda u: u, v)


print(clip_positive_jit(np.array([1.0, -2.0, 3.0], np.float32)))
print(clip_positive_jit(np.array([-1.0, -2.0, 0.5], np.float32)))


@purejit.jit
def newton_sqrt(a):
    return lax.fori_loop(0, 8, lambda i, x: 0.5 * (x + a / x), a)


@purejit.jit
def running_sum(xs):
    def step(carry, x):
        carry = carry + x
        return carry, carry

    return lax.scan(step, jnp.zeros((), xs.dtype), xs)


print(newton_sqrt(np.array([2.0, 9.0], np.float32)))
print(running_sum(np.arange(5, dtype=np.float32)))

# %% [markdown]
# ## 5. Looking inside: `lower()`, `.ir()`, `.as_text()`, `.compile()`
#
# `lower` traces and optimises without running anything. `.ir()` is purejit's optimised IR,
# `.records` says what each pass did, `.as_text()` is the StableHLO module handed to XLA.

# %%
lowered = predict.lower(params, x)
print(lowered.ir())

# %%
for r in lowered.records:
    print(f"{r.name:<14} ops {r.ops_before:>3} -> {r.ops_after:>3}   {1e3 * r.seconds:.2f} ms")

# %%
print(lowered.as_text())

# %%
compiled = lowered.compile()
print("flops:", compiled.cost_analysis()["flops"])
print(compiled.memory_analysis())
np.testing.assert_allclose(compiled(params, x), y, rtol=1e-6)

# %% [markdown]
# `purejit.explain` puts it together: every pass with its report, the IR after each one,
# purejit's fusion plan and the kernels XLA actually produced.

# %%
print(purejit.explain(predict, params, x))

# %% [markdown]
# The compiled object only accepts the signature it was compiled for:

# %%
try:
    compiled(params, np.ones((7, 4), np.float32))
except TypeError as e:
    print(e)
