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
# # A tour of the purejit compiler
#
# What happens to one transformer block between `purejit.jit` and the device:
#
# 1. tracing turns the Python function into purejit's IR;
# 2. the pass pipeline rewrites it (fold, simplify, CSE, DCE to a fixed point, layout,
#    fusion, buffer assignment), and we look at the IR after each pass;
# 3. the fusion pass plans the kernels;
# 4. XLA compiles the StableHLO that purejit emits, and we count the kernels it produced;
# 5. donation and the memory plan, next to XLA's own numbers;
# 6. why a function recompiles: cache-miss logs.
#
# Everything runs on whatever backend is present (CPU here), in a few seconds.

# %%
import collections
import difflib
import logging
import math
import os
import re
import sys
import tempfile

import numpy as np
from purejit.passes.liveness import memory_plan

import purejit
import purejit.numpy as jnp
from purejit.backend import pjrt

print("purejit", purejit.__version__, "on", pjrt.platform(), purejit.devices())

# %% [markdown]
# ## The program: a pre-LN transformer block
#
# Ordinary NumPy-style code: layer norm, multi-head self-attention, a GELU MLP, two
# residual connections. (It is the block that `bench/` runs 12 and 48 times.)


# %%
def layer_norm(x, g, b, eps=1e-5):
    m = jnp.mean(x, axis=-1, keepdims=True)
    v = jnp.mean((x - m) * (x - m), axis=-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps) * g + b


def gelu(x):
    return 0.5 * x * (1.0 + jnp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def softmax(x):
    z = x - jnp.max(x, axis=-1, keepdims=True)
    e = jnp.exp(z)
    return e / jnp.sum(e, axis=-1, keepdims=True)


def block(x, p, heads=2):
    """One pre-LN transformer block; x is (batch, seq, d)."""
    bsz, seq, d = x.shape
    hd = d // heads
    h = layer_norm(x, p["ln1_g"], p["ln1_b"])
    qkv = jnp.reshape(h @ p["qkv"], (bsz, seq, 3, heads, hd))
    q = jnp.transpose(qkv[:, :, 0], (0, 2, 1, 3))
    k = jnp.transpose(qkv[:, :, 1], (0, 2, 3, 1))
    v = jnp.transpose(qkv[:, :, 2], (0, 2, 1, 3))
    att = softmax((q @ k) * (1.0 / math.sqrt(hd)))
    o = jnp.reshape(jnp.transpose(att @ v, (0, 2, 1, 3)), (bsz, seq, d))
    x = x + o @ p["proj"]
    h = layer_norm(x, p["ln2_g"], p["ln2_b"])
    return x + gelu(h @ p["up"]) @ p["down"]


def init_params(d, rng):
    def w(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(np.float32)

    ones, zeros = np.ones(d, np.float32), np.zeros(d, np.float32)
    return {
        "ln1_g": ones,
        "ln1_b": zeros,
        "qkv": w(d, 3 * d),
        "proj": w(d, d),
        "ln2_g": ones,
        "ln2_b": zeros,
        "up": w(d, 4 * d),
        "down": w(4 * d, d),
    }


rng = np.random.default_rng(0)
D = 32
params = init_params(D, rng)
x = rng.standard_normal((2, 8, D)).astype(np.float32)

tblock = purejit.jit(block, static_argnames="heads")
y = tblock(x, params)
print(y.shape, y.dtype)

# %% [markdown]
# ## 1. Tracing: the program as purejit IR
#
# `lower()` traces with abstract values (shape + dtype, no data) and runs the passes,
# without compiling. `lowered.traced` is the function as traced: SSA in A-normal form, one
# op per line, StableHLO's op names, every value typed.

# %%
lowered = tblock.lower(x, params)


def op_histogram(fn):
    """How many ops of each name the top level of `fn` holds (regions count inside their op)."""
    return collections.Counter(op.name for op in fn.ops)


print(f"traced: {lowered.traced.op_count()} ops;", dict(op_histogram(lowered.traced)))
print("\n".join(lowered.records[0].ir.splitlines()[:24]))
print("  ...")

# %% [markdown]
# Every op has a NumPy reference rule, so `purejit.ir.interpret` runs any IR function
# without XLA: the oracle the tests compare against. The traced program and the optimised
# one (after all the passes below) both give the compiled result. The parameters are the
# flattened leaves of the arguments, in `tree_leaves` order (dict keys sorted).

# %%
leaves = purejit.tree_util.tree_leaves((x, params))
(ref_traced,) = purejit.ir.interpret(lowered.traced, *leaves)
(ref_optimised,) = purejit.ir.interpret(lowered.fn, *leaves)
np.testing.assert_allclose(y, ref_traced, rtol=1e-5, atol=1e-5)
np.testing.assert_allclose(y, ref_optimised, rtol=1e-5, atol=1e-5)
print(
    "compiled == interpreted (traced) == interpreted (optimised), max |diff|:",
    float(np.abs(np.asarray(y) - ref_optimised).max()),
)

# %% [markdown]
# ## 2. The pass pipeline, and the IR after each pass
#
# `lowered.records` has one `PassRecord` per pass run: op counts before and after, time,
# the pass's own report and the IR it produced. The cleanup group (fold, simplify, CSE, DCE)
# repeats until a round changes nothing.

# %%
print("pipeline:", purejit.passes.Pipeline().names())
print()
print(f"{'pass':<18}{'round':>5} {'ops':>13}  {'ms':>6}  report")
for r in lowered.records:
    report = {k: v for k, v in r.report.items() if not isinstance(v, (list, dict))}
    report.pop("plan", None)
    ops = f"{r.ops_before:>5} -> {r.ops_after:<5}" if r.name != "trace" else f"{r.ops_after:>13}"
    print(f"{r.name:<18}{r.iteration or '':>5} {ops}  {r.seconds * 1e3:6.2f}  {report}")

# %% [markdown]
# What each pass changed, as a diff of the printed IR against the stage before it. Value
# names are renumbered when ops disappear, so where the op count changed the diff compares
# the text with names blanked out (`%_`): what is left are the ops the pass removed or added.


# %%
def ir_diff(before, after, limit=24):
    """The lines `after` adds or removes, relative to `before` (names blanked if renumbered)."""
    a, b = before.splitlines(), after.splitlines()
    if len(a) != len(b):
        a = [re.sub(r"%\d+", "%_", line) for line in a]
        b = [re.sub(r"%\d+", "%_", line) for line in b]
    lines = [
        line
        for line in difflib.unified_diff(a, b, n=0, lineterm="")
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    more = f"\n   ... {len(lines) - limit} more changed lines" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more


prev = lowered.records[0]
for r in lowered.records[1:]:
    where = f" (round {r.iteration})" if r.iteration else ""
    if not r.changed:
        print(f"=== {r.name}{where}: unchanged")
        continue
    print(f"=== {r.name}{where}: {r.ops_before} -> {r.ops_after} ops")
    print(ir_diff(prev.ir, r.ir))
    prev = r

# %% [markdown]
# The optimised program, as the emitter receives it: the cleanup passes merged the repeated
# subexpressions of the two layer norms, and fusion wrapped the elementwise chains and the
# reductions into `fusion` ops.

# %%
print(lowered.ir())

# %% [markdown]
# The same stages can be written to disk on every compile with
# `compiler_options={"dump_dir": ...}` (one `NN_pass.pjir` file per stage), and passes can be
# switched off by name with `{"disable_passes": [...]}`:

# %%
with tempfile.TemporaryDirectory() as dump:
    purejit.jit(block, compiler_options={"dump_dir": dump}).lower(x, params)
    print(sorted(os.listdir(dump)))

no_cse = purejit.jit(block, compiler_options={"disable_passes": ["cse"]}).lower(x, params)
print("without cse:", no_cse.fn.op_count(), "ops; with it:", lowered.fn.op_count(), "ops")

# %% [markdown]
# ## 3. The fusion plan
#
# The fusion pass groups ops into `fusion` ops, each with a region that holds the fused
# computation: `loop` groups are elementwise chains, `input` groups end in a reduction.
# Matmuls, transposes and slices stay lone ops. Here is the GELU of the MLP as one group:

# %%
final_ir = lowered.ir()
start = next(i for i, line in enumerate(final_ir.splitlines()) if "tanh" in line)
lines = final_ir.splitlines()
first = max(i for i in range(start) if "= fusion(" in lines[i])
last = next(i for i in range(start, len(lines)) if lines[i].strip() == "}")
print("\n".join(lines[first : last + 1]))

# %% [markdown]
# `lowered.explain()` (or `purejit.explain(f, *args)`) puts the plan next to what XLA did.
# Its fields hold the plan: each kernel purejit predicts, with the bytes it reads and
# writes, against what the same ops would move if each ran as its own kernel.

# %%
ex = lowered.explain()
print(f"{'group':>5}  {'kind':<6} {'read':>8} {'write':>8} {'op by op':>9}  ops")
for k in ex.groups:
    names = collections.Counter(k.ops)
    print(
        f"{k.group:>5}  {k.op.attrs['kind']:<6} {k.bytes_read:>8} {k.bytes_written:>8} "
        f"{k.bytes_eager:>9}  {dict(names)}"
    )
lone = collections.Counter(k.op.name for k in ex.kernels if k.group is None)
print(f"\n{len(ex.groups)} fusion groups + lone ops {dict(lone)}")
print(f"memory traffic: {ex.eager_bytes} bytes op by op -> {ex.fused_bytes} bytes fused")

# %% [markdown]
# ## 4. The kernels XLA produced
#
# purejit emits StableHLO (`lowered.as_text()`); XLA compiles it, and
# `compiled.as_text()` is XLA's optimised HLO. Each instruction at the top level of the
# `ENTRY` computation that computes (a `fusion`, a `custom-call`, a lone op) is one kernel
# launch.

# %%
compiled = lowered.compile()
hlo = compiled.as_text()


def entry_kernels(hlo_text):
    """(name, opcode) of the kernels at the top level of the ENTRY computation."""
    entry = hlo_text[hlo_text.index("\nENTRY") :]
    entry = entry[: entry.index("\n}")]
    kernels = []
    for line in entry.splitlines()[1:]:
        m = re.match(r"\s*(?:ROOT )?%(\S+) = \S+(?: \S+)? ([\w-]+)\(", line)
        if m and m.group(2) not in (
            "parameter",
            "constant",
            "bitcast",
            "get-tuple-element",
            "tuple",
        ):
            kernels.append((m.group(1), m.group(2)))
    return kernels


kernels = entry_kernels(hlo)
print(f"StableHLO handed to XLA: {len(lowered.as_text().splitlines())} lines")
print(f"XLA's kernels: {len(kernels)}, of which fusions:", sum(op == "fusion" for _, op in kernels))
for name, op in kernels:
    print(f"  {op:<12} {name}")

# %% [markdown]
# By default (`fusion="xla"`) purejit inlines its groups and XLA fuses the flat program its
# own way; `explain` matches XLA's kernels to purejit's groups through the
# `purejit.fusion.N` locations on every fused op, and lists where the two plans differ.

# %%
print(f"purejit predicts {len(ex.kernels)} kernels, XLA made {len(ex.xla_kernels)}")
print("\n".join(ex.differences[:8]) or "no differences")

# %% [markdown]
# With `compiler_options={"fusion": "purejit"}`, purejit's groups become XLA's kernels where
# the back end allows it (a capability probe decides; on CPU each group is emitted as an
# `mhlo.fusion` region and XLA's own fusion pass is switched off). Elsewhere purejit warns
# once and falls back to the flat program.

# %%
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ours = purejit.jit(block, compiler_options={"fusion": "purejit"}).lower(x, params)
    ex_ours = ours.explain()
for w in caught:
    print("warning:", w.message)
print("fusion route:", ex_ours.fusion)
print(
    f"purejit predicts {len(ex_ours.kernels)} kernels, XLA made {len(ex_ours.xla_kernels)};",
    "plans match" if ex_ours.kernels_match else f"differences: {ex_ours.differences}",
)
np.testing.assert_allclose(ours.compile()(x, params), y, rtol=1e-5, atol=1e-5)

# %% [markdown]
# `print(purejit.explain(f, *args))` prints all of the above as one report. Its last part:

# %%
report = str(ex)
print(report[report.index("XLA (") :])

# %% [markdown]
# ## 5. Memory: the buffer plan and donation
#
# The last pass, `buffer_assignment`, computes every value's live range and assigns buffers,
# reusing a dead value's buffer and writing elementwise results in place. `memory_plan`
# gives the plan; `format_vs_xla` puts it next to XLA's `memory_analysis()` for the same
# program (purejit plans before XLA fuses further, so its temporaries are an upper estimate
# where XLA fuses more). XLA's CPU backend counts only arguments and outputs in its
# `peak_memory_in_bytes`, so there the rows to compare are temporaries, arguments, outputs
# and aliased bytes.

# %%
plan = memory_plan(lowered)
print(plan.format(max_buffers=12))
print()
print(plan.format_vs_xla(compiled.memory_analysis()))

# %% [markdown]
# Donating `x` (`donate_argnums=0`) lets XLA write the output into `x`'s buffer: purejit
# pairs it with the output of the same shape and dtype, marks the parameter with
# `tf.aliasing_output`, and deletes the donated array after the call, so that a later use
# fails loudly instead of reading overwritten memory.

# %%
step = purejit.jit(block, donate_argnums=0, static_argnames="heads")
lowered_d = step.lower(x, params)
print("aliasing marked in StableHLO:", "tf.aliasing_output" in lowered_d.as_text())
plan_d = memory_plan(lowered_d)
compiled_d = lowered_d.compile()
print(plan_d.format_vs_xla(compiled_d.memory_analysis()))
assert compiled_d.memory_analysis().alias_size_in_bytes == x.nbytes

xd = jnp.asarray(x) + 0  # a device array we are willing to give away
y_d = compiled_d(xd, params)  # the same as step(xd, params), without compiling again
np.testing.assert_allclose(y_d, y, rtol=1e-5, atol=1e-5)
print("donated input deleted:", xd.is_deleted())
try:
    xd + 1
except purejit.runtime.DeletedArrayError as e:
    print(type(e).__name__, ":", e)

# %% [markdown]
# ## 6. Why did it recompile? Cache-miss logs
#
# Every jitted function counts traces, compiles and cache hits; each miss after the first is
# explained against the closest signature seen before and logged on the `purejit` logger
# (INFO; WARNING with `purejit.config.update("jit_log_compiles", True)`).

# %%
log = logging.getLogger("purejit")
handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("[%(name)s %(levelname)s] %(message)s"))
log.addHandler(handler)
log.setLevel(logging.INFO)

# tblock was compiled above for (x, params)
tblock(x * 2, params)  # same signature: a hit
tblock(rng.standard_normal((2, 16, D)).astype(np.float32), params)  # seq 8 -> 16: a miss
tblock(x, params, heads=4)  # a new static value: a miss

log.removeHandler(handler)
stats = purejit.cache_stats(tblock)
print(
    f"traces {stats.traces}, compiles {stats.compiles}, hits {stats.hits}, "
    f"misses {stats.misses}, recompiles {stats.recompiles}"
)
for reason in stats.miss_reasons:
    print(" -", reason)
assert stats.recompiles == 2 and stats.hits >= 1
