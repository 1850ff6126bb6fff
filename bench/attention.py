"""Causal self-attention alone, forward and training step, across libraries and lengths.

    python -m bench.attention [--quick] [--out docs/benchmarks] [--rounds 7]

One attention layer (batch 8, 16 heads, head dim 64, bfloat16, causal; T = S in 512, 1024,
2048, 4096; --quick: tiny float32 sizes for the CPU) timed in forms:

    purejit nn.dot_product_attention   the fused op (cuDNN flash attention on NVIDIA GPUs)
    purejit hand-written               softmax(q kᵀ · s, causal where) v written with
                                       purejit.numpy and purejit.nn.softmax, default options
                                       (the attention rewrite fuses it where it is merged)
    purejit fused_attention off        the same with purejit.config.fused_attention False
    jax.jit hand-written               the same program in jax.numpy
    jax.jit cudnn                      jax.nn.dot_product_attention(implementation="cudnn")
    torch.compile hand-written / SDPA  where torch and a GPU are present

Forward: the layer's output. Training step: the loss sum(out · w) (w fixed) and its gradient
in q, k, v. Per form and length: the median time of interleaved rounds (each round times
every form), XLA's temp_size_in_bytes of the compiled program (torch: the peak allocation
above the inputs), TFLOP/s counting 4·B·N·T·S·H multiply-adds·2 for the forward with the
causal mask as half the T×S pairs, and 2.5x that for the backward; at the first length the
max / mean error of the output and of dq, dk, dv (batch element 0) against a float64 NumPy
reference. A form that runs out of memory is recorded as OOM. Writes attention_<platform>.md
into --out; speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback

import numpy as np


def hand_written(xp, softmax, q, k, v):
    """Causal attention as users write it: f32 logits and softmax, probabilities in v's
    dtype, BTNH in and out."""
    t, h = q.shape[1], q.shape[3]
    s = xp.einsum("btnh,bsnh->bnts", q, k).astype(np.float32) * (1.0 / np.sqrt(h))
    causal = xp.tril(xp.ones((t, t), dtype=bool))
    s = xp.where(causal, s, -1e30)
    p = softmax(s, axis=-1).astype(v.dtype)
    return xp.einsum("bnts,bsnh->btnh", p, v)


def _loss(forward, w):
    def loss(q, k, v):
        return (forward(q, k, v).astype(np.float32) * w).sum()

    return loss


def _jax_forms(w):
    import jax
    import jax.numpy as jjnp

    hw = lambda q, k, v: hand_written(jjnp, jax.nn.softmax, q, k, v)  # noqa: E731
    cud = lambda q, k, v: jax.nn.dot_product_attention(  # noqa: E731
        q, k, v, is_causal=True, implementation="cudnn"
    )
    forms = {"jax.jit hand-written": hw}
    if jax.default_backend() == "gpu":
        forms["jax.jit cudnn"] = cud
    out = {}
    for name, f in forms.items():
        wj = jax.device_put(w)
        out[name] = (
            "jax",
            lambda f=f: jax.jit(f),
            lambda f=f, wj=wj: jax.jit(jax.value_and_grad(_loss(f, wj), argnums=(0, 1, 2))),
        )
    return out


def _purejit_forms(w):
    import purejit
    import purejit.nn as pnn
    import purejit.numpy as pnp

    fused = lambda q, k, v: pnn.dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    hw = lambda q, k, v: hand_written(pnp, pnn.softmax, q, k, v)  # noqa: E731
    out = {}
    for name, f, on in (
        ("purejit nn.dot_product_attention", fused, True),
        ("purejit hand-written", hw, True),
        ("purejit fused_attention off", hw, False),
    ):
        out[name] = (
            "purejit" if on else "purejit-off",
            lambda f=f: purejit.jit(f),
            lambda f=f: purejit.jit(purejit.value_and_grad(_loss(f, w), argnums=(0, 1, 2))),
        )
    return out


def _torch_forms(w):
    try:
        import torch
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    import torch.nn.functional as F

    wt = torch.from_numpy(w.astype(np.float32)).cuda()

    def hw(q, k, v):
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))
        t, h = q.shape[2], q.shape[3]
        s = (q @ k.transpose(-1, -2)).float() * (1.0 / h**0.5)
        causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        p = s.masked_fill(~causal, -1e30).softmax(-1).to(v.dtype)
        return (p @ v).transpose(1, 2)

    def sdpa(q, k, v):
        q, k, v = (x.transpose(1, 2) for x in (q, k, v))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)

    def trainer(f):
        cf = torch.compile(f)

        def step(q, k, v):
            q, k, v = (x.detach().requires_grad_() for x in (q, k, v))
            loss = (cf(q, k, v).float() * wt).sum()
            loss.backward()
            return loss, (q.grad, k.grad, v.grad)

        return step

    return {
        name: ("torch", lambda f=f: torch.compile(f), lambda f=f: trainer(f))
        for name, f in (("torch.compile hand-written", hw), ("torch.compile SDPA", sdpa))
    }


def _sync(kind, out):
    if kind.startswith("torch"):
        import torch

        torch.cuda.synchronize()
        return
    import jax

    for leaf in jax.tree_util.tree_leaves(out):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def _args(kind, q, k, v):
    if kind == "torch":
        import torch

        return [torch.from_numpy(x.view(np.uint16).astype(np.int16)).view(torch.bfloat16).cuda()
                if x.dtype.name == "bfloat16" else torch.from_numpy(x).cuda()
                for x in (q, k, v)]  # fmt: skip
    if kind == "jax":
        import jax

        return [jax.device_put(x) for x in (q, k, v)]
    import purejit.numpy as pnp

    return [pnp.asarray(x) for x in (q, k, v)]


def _temp_bytes(kind, fn, args, ran):
    if kind.startswith("purejit"):
        (compiled,) = list(fn.cache.values())[-1:]
        return compiled.memory_analysis().temp_size_in_bytes
    if kind == "jax":
        return fn.lower(*args).compile().memory_analysis().temp_size_in_bytes
    return ran  # torch: the measured peak above the inputs


def _np(kind, x):
    if kind == "torch":
        return x.detach().float().cpu().numpy()
    return np.asarray(x).astype(np.float32)


def _prepare(forms, q, k, v):
    """Compile every form (first call); {(form, mode): state} or an error string."""
    import purejit

    state = {}
    for name, (kind, make_fwd, make_train) in forms.items():
        for mode, make in (("forward", make_fwd), ("train", make_train)):
            try:
                args = _args(kind.split("-")[0], q, k, v)
                fn = make()
                peak0 = _torch_peak_reset() if kind == "torch" else 0
                if kind == "purejit-off":
                    purejit.config.update("fused_attention", False)
                try:
                    out = fn(*args)
                    _sync(kind, out)
                finally:
                    purejit.config.update("fused_attention", True)
                ran = _torch_peak() - peak0 if kind == "torch" else 0
                state[name, mode] = (kind, fn, args, out, _temp_bytes(kind, fn, args, ran))
            except Exception as e:  # noqa: BLE001 - an OOM or a refusal is a table entry
                msg = str(e).lower()
                oom = "out of memory" in msg or "resource_exhausted" in msg or "oom" in msg
                state[name, mode] = "OOM" if oom else f"error: {type(e).__name__}"
                if not oom:
                    traceback.print_exc(limit=2)
    return state


def _torch_peak_reset():
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    return torch.cuda.memory_allocated()


def _torch_peak():
    import torch

    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()


def _time(state, rounds: int, budget_s: float = 0.05) -> dict:
    """Median seconds per call of each ready form, over interleaved rounds."""
    ready = {key: s for key, s in state.items() if not isinstance(s, str)}
    reps = {}
    for key, (kind, fn, args, _, _) in ready.items():  # calls per timing, ~budget_s each
        _sync(kind, fn(*args))  # the first call after compiling can be slow: not a measure
        t0 = time.perf_counter()
        for _ in range(3):
            out = fn(*args)
        _sync(kind, out)
        per_call = max((time.perf_counter() - t0) / 3, 1e-6)
        reps[key] = max(10, int(budget_s / per_call))
    times = {key: [] for key in ready}
    order = list(ready)
    shuffle = np.random.default_rng(0)
    for i in range(rounds):
        # each round runs the forms in a new order (a rotation would keep every form behind
        # the same neighbour, and a heavy neighbour can leave the clocks low), and each
        # timing follows an untimed call, so no form always pays for the previous one's tail
        for key in [order[j] for j in shuffle.permutation(len(order))]:
            kind, fn, args, _, _ = ready[key]
            _sync(kind, fn(*args))
            t0 = time.perf_counter()
            for _ in range(reps[key]):
                out = fn(*args)
            _sync(kind, out)
            times[key].append((time.perf_counter() - t0) / reps[key])
    return {key: statistics.median(ts) for key, ts in times.items()}


def _errors(state, q, k, v, w) -> dict:
    """Max / mean error of the output and dq, dk, dv (batch element 0) against float64."""
    from purejit.ir.ops.attention import attention_attrs, attention_grads, attention_reference

    attrs = attention_attrs(scale=1 / np.sqrt(q.shape[3]), mask="causal")
    args = [np.asarray(x[:1], np.float64) for x in (q, k, v)]
    (ref,) = attention_reference(args, attrs, acc=np.float64)
    ref_g = attention_grads(args, attrs, np.asarray(w[:1], np.float64), acc=np.float64)[:3]
    out = {}
    for (name, mode), s in state.items():
        if isinstance(s, str):
            continue
        kind, _, _, res = s[:4]
        if mode == "forward":
            got, want = [_np(kind, res)[:1]], [ref]
        else:
            got, want = [_np(kind, g)[:1] for g in res[1]], list(ref_g)
        errs = [np.abs(a - b) for a, b in zip(got, want)]
        out[name, mode] = (max(float(e.max()) for e in errs), max(float(e.mean()) for e in errs))
    return out


def run(quick: bool, rounds: int, only=None, done=None) -> tuple[list, dict, str]:
    """The table's rows, the errors against float64 (first length) and the device; `only`:
    the sequence lengths to run (default: all of the platform's); `done(rows, errors,
    device)` is called after each length (the caller writes what is measured so far)."""
    import jax

    dev = jax.devices()[0]
    kind = getattr(dev, "device_kind", dev.platform)
    gpu = jax.default_backend() == "gpu"
    if quick or not gpu:
        b, n, h, lengths, dt = 1, 2, 16, [64, 128], np.float32
    else:
        import ml_dtypes

        b, n, h, lengths, dt = 8, 16, 64, [512, 1024, 2048, 4096], ml_dtypes.bfloat16
    if only:
        lengths = list(only)
    rows, errors = [], {}
    for t in lengths:
        r = np.random.default_rng(t)
        q, k, v = (r.normal(size=(b, t, n, h)).astype(dt) for _ in range(3))
        w = r.normal(size=(b, t, n, h)).astype(np.float32)
        forms = {**_purejit_forms(w), **_jax_forms(w), **_torch_forms(w)}
        state = _prepare(forms, q, k, v)
        if t == lengths[0]:
            errors = _errors(state, q, k, v, w)
        times = _time(state, rounds)
        fwd_flops = 4 * b * n * t * t * h * 0.5
        for (name, mode), s in state.items():
            flops = fwd_flops * (1 if mode == "forward" else 3.5)
            if isinstance(s, str):
                rows.append((t, name, mode, s, None, None))
                continue
            sec = times[name, mode]
            rows.append((t, name, mode, sec, s[4], flops / sec / 1e12))
        print(f"T={t} done", file=sys.stderr, flush=True)
        if done is not None:
            done(rows, errors, kind)
    return rows, errors, kind


def report(rows, errors, device: str) -> str:
    lines = [
        f"# Causal attention: forward and training step ({device})",
        "",
        "`python -m bench.attention`: batch 8, 16 heads, head dim 64, bfloat16, causal, T = S. "
        "Median of interleaved rounds; temp: XLA's temp_size_in_bytes (torch: peak above the "
        "inputs); TFLOP/s counts the causal mask as half the T x S pairs, the backward as 2.5x "
        "the forward.",
        "",
    ]
    for mode in ("forward", "train"):
        head = ["| T | form | time | temp | TFLOP/s |", "|---:|---|---:|---:|---:|"]
        lines += [f"## {mode}", "", *head]
        for t, name, m, sec, temp, tf in rows:
            if m != mode:
                continue
            if isinstance(sec, str):
                lines.append(f"| {t} | {name} | {sec} | | |")
            else:
                lines.append(
                    f"| {t} | {name} | {sec * 1e3:.3f} ms | {temp / 2**20:.0f} MiB | {tf:.1f} |"
                )
        lines.append("")
    lines += ["## errors against float64 (first length, batch element 0; max / mean)", ""]
    lines += ["| form | mode | max | mean |", "|---|---|---:|---:|"]
    for (name, mode), (mx, mean) in sorted(errors.items()):
        lines.append(f"| {name} | {mode} | {mx:.2e} | {mean:.2e} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default="docs/benchmarks")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--lengths", default=None, help="sequence lengths to run, e.g. 4096")
    a = p.parse_args(argv)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    only = [int(x) for x in a.lengths.split(",")] if a.lengths else None
    import jax

    tail = "_" + a.lengths.replace(",", "-") if a.lengths else ""
    name = f"attention_{jax.default_backend()}{'_quick' if a.quick else ''}{tail}.md"
    os.makedirs(a.out, exist_ok=True)

    def write(rows, errors, device):  # after every length: a time limit keeps what ran
        with open(os.path.join(a.out, name), "w") as f:
            f.write(report(rows, errors, device))

    rows, errors, device = run(a.quick, a.rounds, only, write)
    print(report(rows, errors, device))


if __name__ == "__main__":
    main()
