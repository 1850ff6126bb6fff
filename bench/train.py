"""Training steps: purejit's `jit(value_and_grad)` with and without automatic
rematerialisation against `jax.jit(jax.value_and_grad(...))`, in the same process.

    python -m bench.train [--quick] [--out docs/benchmarks] [--budget 0.2] [--repeats 7]

Workloads (each written once against a NumPy-like namespace; one step is the loss's value
and gradient plus an SGD update of the parameters, which are donated):

    mlp          a 4-layer tanh MLP
    transformer  pre-LN decoder blocks: causal softmax attention, GELU MLP (4x width);
                 on GPU the 12-layer model of issue 13 (batch 8, sequence 1024, width 1024,
                 16 heads, bfloat16), small float32 sizes on CPU
    scan rnn     a tanh RNN over the sequence with `lax.scan`

Forms: purejit with remat off (`compiler_options={"remat": False}`: every residual saved, as
JAX), purejit's default (automatic remat), purejit with `remat_budget` in a sweep, `jax.jit`,
and `jax.jit` with each layer under `jax.checkpoint(policy=dots_saveable)` (transformer and
MLP). Per form: the step time (median over interleaved rounds: each round times every form,
n steps between two synchronisations), the first call (trace + compile + run of a new jit
object, in this process) and XLA's `temp_size_in_bytes` of the compiled step (purejit: the
executable's memory analysis; JAX: `.lower().compile().memory_analysis()`). Every form's
first loss is checked against JAX's. Writes `train_<platform>.md` and `train_<platform>.png`
(memory against step time) into `--out`. Speed and memory are reported, never asserted.

`--xla-keep-barriers` sets `XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander`: XLA's
CPU compiler removes optimization barriers before its last CSE and fusion passes, which
merge recomputation back into the forward pass (for `jax.checkpoint` as for purejit), so on
CPU memory only drops with the barriers kept, as XLA's GPU compiler keeps them until after
scheduling.
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import statistics
import sys
import time

import numpy as np

# ---- the models, written once against (xp, lax) -----------------------------------------------


def _ln(xp, x, g, b, eps=1e-5):
    m = xp.mean(x, axis=-1, keepdims=True)
    v = xp.mean((x - m) * (x - m), axis=-1, keepdims=True)
    return (x - m) * (1.0 / xp.sqrt(v + eps)) * g + b


def _gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


def block(xp, p, x, heads, attention=None):
    """One pre-LN decoder block: causal softmax attention, then a GELU MLP. `attention(q, k,
    v, scale)` (BTNH in, BTNH out) replaces the hand-written attention when given."""
    bsz, seq, d = x.shape
    hd = d // heads
    h = _ln(xp, x, p["ln1_g"], p["ln1_b"])
    qkv = xp.reshape(h @ p["qkv"], (bsz, seq, 3, heads, hd))
    if attention is not None:
        o = attention(qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], 1.0 / math.sqrt(hd))
        x = x + xp.reshape(o, (bsz, seq, d)) @ p["proj"]
        h = _ln(xp, x, p["ln2_g"], p["ln2_b"])
        return x + _gelu(xp, h @ p["up"]) @ p["down"]
    q = xp.transpose(qkv[:, :, 0], (0, 2, 1, 3))
    k = xp.transpose(qkv[:, :, 1], (0, 2, 3, 1))
    v = xp.transpose(qkv[:, :, 2], (0, 2, 1, 3))
    s = (q @ k) * (1.0 / math.sqrt(hd))
    causal = xp.arange(seq)[:, None] >= xp.arange(seq)[None, :]
    s = xp.where(causal, s, xp.asarray(-1e4, s.dtype))
    s = s - xp.max(s, axis=-1, keepdims=True)
    e = xp.exp(s)
    att = e / xp.sum(e, axis=-1, keepdims=True)
    o = xp.reshape(xp.transpose(att @ v, (0, 2, 1, 3)), (bsz, seq, d))
    x = x + o @ p["proj"]
    h = _ln(xp, x, p["ln2_g"], p["ln2_b"])
    return x + _gelu(xp, h @ p["up"]) @ p["down"]


def transformer_loss(xp, lax, checkpoint=None, heads=16):
    def loss(params, x, y):
        layer = (lambda p, x: block(xp, p, x, heads)) if checkpoint is None else checkpoint
        for p in params:
            x = layer(p, x)
        err = (x - y).astype(xp.float32)
        return xp.mean(err * err)

    return loss


def mlp_loss(xp, lax, checkpoint=None):
    def layer(p, h):
        return xp.tanh(h @ p["w"] + p["b"])

    def loss(params, x, y):
        h = x
        for p in params:
            h = (layer if checkpoint is None else checkpoint)(p, h)
        return xp.mean((h - y) ** 2)

    return loss


def rnn_loss(xp, lax, checkpoint=None):
    def loss(params, xs, y):
        def step(h, x):
            h = xp.tanh(h @ params["w"] + x @ params["u"] + params["b"])
            return h, xp.sum(h * h, axis=-1)

        h0 = xp.zeros((xs.shape[1], params["w"].shape[0]), xs.dtype)
        h, ys = lax.scan(step, h0, xs)
        return xp.mean((h - y) ** 2) + 1e-3 * xp.mean(ys)

    return loss


def _sizes(platform: str, quick: bool) -> dict:
    if quick:
        return {
            "mlp": dict(batch=32, widths=(64, 128, 128, 128, 64), dtype="float32"),
            "transformer": dict(layers=2, batch=2, seq=64, width=64, heads=4, dtype="float32"),
            "rnn": dict(hidden=64, batch=8, length=16, dtype="float32"),
        }
    if platform == "cpu":
        return {
            "mlp": dict(batch=256, widths=(256, 1024, 1024, 1024, 256), dtype="float32"),
            "transformer": dict(layers=4, batch=4, seq=256, width=256, heads=4, dtype="float32"),
            "rnn": dict(hidden=256, batch=32, length=64, dtype="float32"),
        }
    return {
        "mlp": dict(batch=2048, widths=(1024, 4096, 4096, 4096, 1024), dtype="bfloat16"),
        "transformer": dict(layers=12, batch=8, seq=1024, width=1024, heads=16, dtype="bfloat16"),
        "rnn": dict(hidden=1024, batch=64, length=256, dtype="float32"),
    }


def _dtype(name):
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def _workloads(platform: str, quick: bool):
    """(name, make_loss(xp, lax, checkpoint), layer_fn(xp) or None, params, x, y)."""
    rng = np.random.default_rng(0)
    s = _sizes(platform, quick)
    out = []

    m = s["mlp"]
    dt = _dtype(m["dtype"])
    ws = m["widths"]
    params = [
        {
            "w": (rng.standard_normal((a, b)) / math.sqrt(a)).astype(dt),
            "b": np.zeros(b, dt),
        }
        for a, b in zip(ws[:-1], ws[1:])
    ]
    x = rng.standard_normal((m["batch"], ws[0])).astype(dt)
    y = rng.standard_normal((m["batch"], ws[-1])).astype(dt)
    desc = f"mlp {'-'.join(map(str, ws))}, batch {m['batch']}, {m['dtype']}"

    def mlp_layer(xp):
        return lambda p, h: xp.tanh(h @ p["w"] + p["b"])

    out.append((desc, mlp_loss, mlp_layer, params, x, y))

    desc, tf_loss, params, x, y = transformer_workload(platform, quick)
    heads = s["transformer"]["heads"]

    def tf_layer(xp, heads=heads, attention=None):
        return lambda p, x: block(xp, p, x, heads, attention)

    out.append((desc, tf_loss, tf_layer, params, x, y))

    r = s["rnn"]
    dt = _dtype(r["dtype"])
    hdim = r["hidden"]
    params = {
        "w": (rng.standard_normal((hdim, hdim)) / math.sqrt(hdim)).astype(dt),
        "u": (rng.standard_normal((hdim, hdim)) / math.sqrt(hdim)).astype(dt),
        "b": np.zeros(hdim, dt),
    }
    xs = rng.standard_normal((r["length"], r["batch"], hdim)).astype(dt)
    y = rng.standard_normal((r["batch"], hdim)).astype(dt)
    desc = f"scan rnn hidden {hdim}, batch {r['batch']}, length {r['length']}, {r['dtype']}"
    out.append((desc, rnn_loss, None, params, xs, y))
    return out


def transformer_workload(platform: str, quick: bool, **overrides):
    """(description, make_loss, params, x, y) of the transformer `_workloads` measures, with
    any of its sizes (layers, batch, seq, width, heads, dtype) replaced by `overrides`."""
    t = dict(_sizes(platform, quick)["transformer"])
    t.update({k: v for k, v in overrides.items() if v is not None})
    rng = np.random.default_rng(0)
    dt = _dtype(t["dtype"])
    d, heads = t["width"], t["heads"]

    def w(*shape):
        return (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(dt)

    params = [
        {
            "ln1_g": np.ones(d, dt),
            "ln1_b": np.zeros(d, dt),
            "qkv": w(d, 3 * d),
            "proj": w(d, d),
            "ln2_g": np.ones(d, dt),
            "ln2_b": np.zeros(d, dt),
            "up": w(d, 4 * d),
            "down": w(4 * d, d),
        }
        for _ in range(t["layers"])
    ]
    x = rng.standard_normal((t["batch"], t["seq"], d)).astype(dt)
    y = rng.standard_normal((t["batch"], t["seq"], d)).astype(dt)
    desc = (
        f"transformer {t['layers']} layers, batch {t['batch']}, seq {t['seq']}, width {d}, "
        f"{heads} heads, MLP {4 * d}, {t['dtype']}"
    )

    def make_loss(xp, lax, checkpoint=None):
        return transformer_loss(xp, lax, checkpoint, heads)

    return desc, make_loss, params, x, y


# ---- the forms --------------------------------------------------------------------------------


def step_of(loss, vg, tmap, lr: float = 1e-3):
    """The training step: `vg(loss)` (value_and_grad) and an SGD update mapped by `tmap`."""

    def step(params, x, y):
        value, grads = vg(loss)(params, x, y)
        new = tmap(lambda p, g: (p - lr * g).astype(p.dtype), params, grads)
        return new, value

    return step


def _forms(make_loss, make_layer, params, x, y, budgets):
    """{form: (step function (params, x, y) -> (params, loss), params, x, y, kind)}."""
    import jax
    import jax.numpy as jjnp

    import purejit
    import purejit.numpy as pnp

    forms = {}
    pj_opts = {"purejit remat off": {"remat": False}, "purejit": {}}
    gpu = jax.default_backend() == "gpu"
    if gpu:  # where attention written by hand is fused: the same program left as written
        pj_opts["purejit fused_attention off"] = {"fused_attention": False}
    pj_opts.update({f"purejit budget={b:g}": {"remat_budget": b} for b in budgets})
    pj_loss = make_loss(pnp, purejit.lax)
    for name, opts in pj_opts.items():
        step = step_of(pj_loss, purejit.value_and_grad, purejit.tree_util.tree_map)

        def make(step=step, opts=opts):
            return purejit.jit(step, donate_argnums=0, compiler_options=opts)

        forms[name] = (make, "purejit")
    jx_loss = make_loss(jjnp, jax.lax)
    jstep = step_of(jx_loss, jax.value_and_grad, jax.tree_util.tree_map)
    forms["jax"] = (lambda: jax.jit(jstep, donate_argnums=0), "jax")
    if make_layer is not None:
        pol = jax.checkpoint_policies.dots_saveable
        layer = jax.checkpoint(make_layer(jjnp), policy=pol)
        cstep = step_of(make_loss(jjnp, jax.lax, layer), jax.value_and_grad, jax.tree_util.tree_map)
        forms["jax dots_saveable"] = (lambda: jax.jit(cstep, donate_argnums=0), "jax")
    if gpu and make_layer is not None and "attention" in inspect.signature(make_layer).parameters:

        def cudnn(q, k, v, scale):
            return jax.nn.dot_product_attention(
                q, k, v, scale=scale, is_causal=True, implementation="cudnn"
            )

        layer = make_layer(jjnp, attention=cudnn)
        dstep = step_of(make_loss(jjnp, jax.lax, layer), jax.value_and_grad, jax.tree_util.tree_map)
        forms["jax cudnn attention"] = (lambda: jax.jit(dstep, donate_argnums=0), "jax")
    return forms


def _block(out):
    import jax

    for leaf in jax.tree_util.tree_leaves(out):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def _put(kind, tree):
    import jax

    import purejit
    import purejit.numpy as pnp

    if kind == "jax":
        return jax.tree_util.tree_map(jax.device_put, tree)
    return purejit.tree_util.tree_map(lambda a: pnp.asarray(a) + 0, tree)


def _temp_bytes(kind, fn, params, x, y):
    if kind == "purejit":
        (compiled,) = list(fn.cache.values())[-1:]
        return compiled.memory_analysis().temp_size_in_bytes, compiled.lowered.residuals
    m = fn.lower(params, x, y).compile().memory_analysis()
    return m.temp_size_in_bytes, None


def measure(forms: dict, params, x, y, budget: float, repeats: int) -> dict:
    """Per form: first call, temp bytes, first loss, step time (interleaved medians)."""
    state = {}
    res = {}
    for name, (make, kind) in forms.items():
        fn = make()
        p, xx, yy = _put(kind, params), _put(kind, x), _put(kind, y)
        t0 = time.perf_counter()
        out = fn(p, xx, yy)
        _block(out)
        first = time.perf_counter() - t0
        p, loss = out
        temp, records = _temp_bytes(kind, fn, _put(kind, params), xx, yy)
        state[name] = [fn, p, xx, yy]
        res[name] = {"first": first, "temp": temp, "loss": float(np.asarray(loss)), "times": []}
        if records:
            res[name]["saved"] = sum(r.saved_bytes for r in records if not r.inner)
            res[name]["all"] = sum(r.all_bytes for r in records if not r.inner)
        print(f"#   {name}: first call {first:.2f} s, temp {temp / 2**20:.1f} MiB", flush=True)
    calls = {}
    for name, st in state.items():
        fn = st[0]
        for _ in range(2):
            st[1], loss = fn(st[1], st[2], st[3])
        _block(loss)
        t0 = time.perf_counter()
        st[1], loss = fn(st[1], st[2], st[3])
        _block(loss)
        one = max(time.perf_counter() - t0, 1e-7)
        calls[name] = int(min(max(budget / one, 1), 1 << 12))
    for _ in range(repeats):
        for name, st in state.items():
            fn = st[0]
            t0 = time.perf_counter()
            for _ in range(calls[name]):
                st[1], loss = fn(st[1], st[2], st[3])
            _block((st[1], loss))
            res[name]["times"].append((time.perf_counter() - t0) / calls[name])
    for r in res.values():
        r["step"] = statistics.median(r["times"])
    return res


def run(platform: str, quick: bool, budget: float, repeats: int, budgets, only=None) -> list:
    """Measure every workload (those whose description starts with one of `only`, if given)."""
    rows = []
    for desc, make_loss, make_layer, params, x, y in _workloads(platform, quick):
        if only and not any(desc.startswith(o) for o in only):
            continue
        print(f"# {desc}", flush=True)
        forms = _forms(make_loss, make_layer, params, x, y, budgets)
        res = measure(forms, params, x, y, budget, repeats)
        ref = res["jax"]["loss"]
        tol = 5e-2 if "bfloat16" in desc else 1e-3
        for name, r in res.items():
            if not math.isclose(r["loss"], ref, rel_tol=tol, abs_tol=tol):
                raise AssertionError(f"{desc}: {name} loss {r['loss']} != jax {ref}")
        rows.append((desc, res))
    return rows


# ---- report -------------------------------------------------------------------------------------


def _mib(n) -> str:
    return f"{n / 2**20:.1f}"


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def report(rows, platform: str, device: str, note: str) -> str:
    lines = [
        f"# Training steps on {platform} ({device})",
        "",
        "One step = `jit(value_and_grad(loss))` + an SGD update of the donated parameters. "
        "Step time: median over interleaved rounds; ratios are to `jax.jit` in the same "
        "process. temp: XLA's `temp_size_in_bytes` of the compiled step. saved: the bytes "
        "purejit's forward passes hand to the backward passes (inputs not counted; the remat "
        "off row is the save-everything figure). Reproduce with "
        "`python -m bench.train --out docs/benchmarks"
        + (" --quick" if "quick" in note else "")
        + (" --xla-keep-barriers" if "XLA_FLAGS" in note else "")
        + "`.",
    ]
    if note:
        lines += ["", note]
    lines += [""]
    goal_rows = []
    off_ratios = []
    for desc, res in rows:
        jx = res["jax"]
        lines += [
            f"## {desc}",
            "",
            "| form | step | step / jax | first call | temp MiB | temp / jax | saved MiB |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for name, r in res.items():
            saved = _mib(r["saved"]) if "saved" in r else ""
            lines.append(
                f"| {name} | {r['step'] * 1e3:.2f} ms | {r['step'] / jx['step']:.2f}x | "
                f"{r['first']:.2f} s | {_mib(r['temp'])} | {r['temp'] / jx['temp']:.2f}x | "
                f"{saved} |"
            )
        lines.append("")
        off_ratios.append(res["purejit remat off"]["step"] / jx["step"])
        goal_rows.append((desc, res))
    lines += ["## Goals", ""]
    for desc, res in goal_rows:
        jx, pj = res["jax"], res["purejit"]
        lines.append(
            f"- {desc.split(',')[0]}: default temp {pj['temp'] / jx['temp']:.2f}x of JAX's plain "
            f"step (goal for the transformer on GPU: <= 0.6x) at {pj['step'] / jx['step']:.2f}x "
            "its step time (goal <= 1.05x)"
        )
    lines.append(
        f"- remat off against jax.jit: geometric mean {geomean(off_ratios):.2f}x (goal <= "
        f"1.00x), worst {max(off_ratios):.2f}x (goal: none above 1.05x)"
    )
    return "\n".join(lines) + "\n"


def plot(rows, path: str, platform: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(5 * len(rows), 4.2))
    axes = np.atleast_1d(axes)
    for ax, (desc, res) in zip(axes, rows):
        for name, r in res.items():
            marker = "s" if name.startswith("jax") else "o"
            ax.scatter(r["step"] * 1e3, r["temp"] / 2**20, marker=marker)
            ax.annotate(name, (r["step"] * 1e3, r["temp"] / 2**20), fontsize=7)
        ax.set_xlabel("step time (ms)")
        ax.set_ylabel("XLA temp (MiB)")
        ax.set_title(desc.split(",")[0], fontsize=9)
    fig.suptitle(f"training step memory against time on {platform}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    p.add_argument("--out", default=None, help="folder for train_<platform>.md and .png")
    p.add_argument("--budget", type=float, default=0.2, help="seconds per timed batch")
    p.add_argument("--repeats", type=int, default=7, help="interleaved rounds")
    p.add_argument(
        "--remat-budgets", default="0.1,0.05,0.02", help="comma-separated remat_budget sweep"
    )
    p.add_argument(
        "--xla-keep-barriers",
        action="store_true",
        help="keep optimization barriers through XLA's CPU pipeline (see the docstring)",
    )
    p.add_argument(
        "--only", nargs="*", help="workloads to run, by the start of their name (mlp, ...)"
    )
    a = p.parse_args(argv)
    note = "quick sizes" if a.quick else ""
    if a.xla_keep_barriers:
        if "jax" in sys.modules:
            raise SystemExit("--xla-keep-barriers must be set before jax is imported")
        flag = "--xla_disable_hlo_passes=cse_barrier_expander"
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
        note = (note + "; " if note else "") + f"XLA_FLAGS={flag}"

    import jax

    dev = jax.devices()[0]
    platform = dev.platform
    budgets = [float(b) for b in a.remat_budgets.split(",") if b.strip()]
    rows = run(platform, a.quick, a.budget, a.repeats, budgets, a.only)
    text = report(rows, platform, dev.device_kind, note)
    print("\n" + text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        suffix = ("_quick" if a.quick else "") + ("_keep_barriers" if a.xla_keep_barriers else "")
        with open(os.path.join(a.out, f"train_{platform}{suffix}.md"), "w") as fh:
            fh.write(text)
        plot(rows, os.path.join(a.out, f"train_{platform}{suffix}.png"), platform)


if __name__ == "__main__":
    main()
