"""Layout assignment on multi-head attention: transpose kernels and time, pass off vs on.

    python -m bench.attention_layout [--quick] [--seq 2048] [--heads 8] [--head-dim 64]
                                     [--batch 4]

One attention block per sequence, written with einsum as JAX users write it:

    q, k, v = einsum('sD,Dhd->shd', x, Wq|Wk|Wv)     # projections
    s = einsum('qhd,khd->hqk', q, k)                 # heads are a batch dim, not leading
    o = einsum('hqk,khd->qhd', softmax(s), v)
    out = einsum('qhd,hdD->qD', o, Wo)

and the same block over a batch, `einsum('bqhd,bkhd->bhqk', q, k)` with q, k, v projected
from x[b, s, D]. There the copies cannot all go: a projection is one GEMM whose result
keeps x's (b, s) together and W's (h, d) together, so no dimension order of x or W gives
q in any order with b and h leading; and the output projection needs (h, d) together again.
Without materialising W broadcast over b (as many bytes as the copy it saves; XLA
materialises it, measured on H200 and CPU), q, k, v and o each take one activation-sized
copy. The report prints that floor next to what each variant moves.

For each weight layout (`Dhd`: W[D, h, d]; `hdD`: W[h, d, D], PyTorch's Linear layout) the
block is compiled with purejit's default pipeline with the layout pass disabled, enabled
as `purejit.jit` builds it on this platform (operands in `[batch, rows, contracting]`;
on GPU the copies no order avoids are made explicit, `explicit_copies`), with
`explicit_copies` the other way, and with transposed left operands allowed
(`LayoutAssignment(transposed_lhs=True)`, what GPU GEMMs take for free), and with jax.jit.
It prints, from XLA's compiled HLO, the top-level kernels that transpose or copy
data (each with the bytes it writes) and the steady-state time per call as a ratio to
jax.jit. Runs on whatever device JAX picks (CPU or GPU). Speed is reported, not asserted.
"""

from __future__ import annotations

import argparse
import re

import numpy as np

from bench.run import steady


def attention(xp, x, wq, wk, wv, wo, layout: str):
    """The attention block above; `layout` names the weights' dimension order. `x` is
    [s, D] (one sequence) or [b, s, D] (a batch)."""
    b = "b" if x.ndim == 3 else ""
    proj = f"{b}sD,Dhd->{b}shd" if layout == "Dhd" else f"{b}sD,hdD->{b}shd"
    q = xp.einsum(proj, x, wq)
    k = xp.einsum(proj, x, wk)
    v = xp.einsum(proj, x, wv)
    s = xp.einsum(f"{b}qhd,{b}khd->{b}hqk", q, k) * (1.0 / np.sqrt(q.shape[-1]))
    e = xp.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    o = xp.einsum(f"{b}hqk,{b}khd->{b}qhd", p, v)
    return xp.einsum(f"{b}qhd,hdD->{b}qD", o, wo)


_ENTRY = re.compile(r"^ENTRY [^\n]*\{\n(.*?)\n\}", re.DOTALL | re.MULTILINE)
_COMP = re.compile(r"^%?([\w.\-]+) [^\n]*\{\n(.*?)\n\}", re.DOTALL | re.MULTILINE)
_INSTR = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (\w+)\[([\d,]*)\]\S* (\w[\w-]*)\(")
_CALLS = re.compile(r"calls=%?([\w.\-]+)")
_ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "s32": 4, "pred": 1}


def transpose_kernels(hlo: str) -> list[tuple[str, int]]:
    """Top-level kernels of compiled HLO that transpose or copy data: `transpose`/`copy`
    instructions and fusions whose computation contains one. Returns (name, bytes out)."""
    bodies = {m.group(1): m.group(2) for m in _COMP.finditer(hlo)}
    entry = _ENTRY.search(hlo)
    if entry is None:
        raise ValueError("no ENTRY computation in the HLO text")
    found = []
    for line in entry.group(1).splitlines():
        m = _INSTR.match(line)
        if m is None:
            continue
        name, dtype, dims, opcode = m.groups()
        size = int(np.prod([int(d) for d in dims.split(",") if d], dtype=np.int64))
        nbytes = size * _ITEMSIZE.get(dtype, 4)
        if opcode in ("transpose", "copy"):
            found.append((name, nbytes))
        elif opcode == "fusion":
            called = _CALLS.search(line)
            body = bodies.get(called.group(1), "") if called else ""
            if re.search(r"\b(transpose|copy)\(", body):
                found.append((name, nbytes))
    return found


def _time(fn, args, budget: float, repeats: int = 3) -> float:
    """Seconds per call: the best of `repeats` batches filling `budget / repeats` each."""
    return steady(fn, args, budget / repeats, repeats)


def run(seq: int, heads: int, head_dim: int, model: int, budget: float, batch: int = 0):
    import jax
    import jax.numpy as jnp
    from purejit.passes import Pipeline
    from purejit.passes.layout import LayoutAssignment
    from purejit.passes.pipeline import default_passes

    import purejit
    import purejit.numpy as pnp

    rng = np.random.default_rng(0)
    x = rng.standard_normal(((batch,) if batch else ()) + (seq, model), np.float32)
    print(
        f"device: {jax.devices()[0].device_kind} ({jax.devices()[0].platform}); "
        f"{'batch=%d ' % batch if batch else ''}seq={seq} heads={heads} "
        f"head_dim={head_dim} model={model}"
    )
    if batch:
        floor = 4 * batch * seq * heads * head_dim * 4 / 2**20
        print(f"floor for the batched block: 4 activation copies, {floor:.1f} MiB")
    for layout in ("Dhd", "hdD"):
        shape = (model, heads, head_dim) if layout == "Dhd" else (heads, head_dim, model)
        ws = [rng.standard_normal(shape, np.float32) / np.sqrt(model) for _ in range(3)]
        wo = rng.standard_normal((heads, head_dim, model), np.float32) / np.sqrt(model)
        args = (x, *ws, wo)

        def with_layout(lay):
            passes = [lay if getattr(p, "name", "") == "layout" else p for p in default_passes()]
            return Pipeline(passes=passes)

        from purejit.backend import pjrt

        gpu = pjrt.is_gpu()
        variants = {
            "layout off": Pipeline(disable=["layout"]),
            "layout on (default)": None,  # what purejit.jit builds on this platform
            f"layout on, explicit copies {'off' if gpu else 'on'}": with_layout(
                LayoutAssignment(explicit_copies=not gpu)
            ),
            "layout on, transposed lhs": with_layout(
                LayoutAssignment(transposed_lhs=True, explicit_copies=gpu)
            ),
        }
        jx = jax.jit(lambda *a, lay=layout: attention(jnp, *a, layout=lay))
        jx_args = [jax.device_put(a) for a in args]
        t_jax = _time(jx, jx_args, budget)
        jax_kernels = transpose_kernels(jx.lower(*jx_args).compile().as_text())
        print(f"\nweights {layout}:")
        print(f"  {'variant':<34}{'transposes':>11}{'MiB moved':>11}{'ms':>9}{'/ jax':>8}")
        ref = np.asarray(jx(*jx_args))
        for name, pipe in variants.items():
            f = purejit.jit(lambda *a, lay=layout: attention(pnp, *a, layout=lay), passes=pipe)
            compiled = f.lower(*args).compile()
            kernels = transpose_kernels(compiled.as_text())
            pj_args = [pnp.asarray(a) for a in args]
            err = np.abs(np.asarray(f(*pj_args)) - ref).max()
            t = _time(f, pj_args, budget)
            moved = sum(b for _, b in kernels) / 2**20
            print(
                f"  {name:<34}{len(kernels):>11}{moved:>11.1f}{t * 1e3:>9.2f}{t / t_jax:>8.2f}"
                f"   max|diff| vs jax {err:.1e}"
            )
        moved = sum(b for _, b in jax_kernels) / 2**20
        print(f"  {'jax.jit':<34}{len(jax_kernels):>11}{moved:>11.1f}{t_jax * 1e3:>9.2f}{1:>8.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--model", type=int, default=512)
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of timing per variant")
    ap.add_argument("--batch", type=int, default=0, help="also run the batched block (b > 0)")
    ap.add_argument("--quick", action="store_true", help="small sizes, short timing")
    a = ap.parse_args(argv)
    if a.quick:
        a.seq, a.model, a.budget = 512, 256, 0.2
    run(a.seq, a.heads, a.head_dim, a.model, a.budget)
    if a.batch:
        print()
        run(a.seq, a.heads, a.head_dim, a.model, a.budget, batch=a.batch)


if __name__ == "__main__":
    main()
