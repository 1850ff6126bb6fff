"""How the automatic remat plan's price of recomputation traffic trades memory for step time.

    python -m bench.tools.remat_weight_sweep [--weights 0.25,0.5,1,2,4] [--only transformer]

`passes.remat.TRAFFIC_WEIGHT` prices one byte of memory traffic a recomputation adds to the
backward pass against one byte held between the passes. This compiles `bench.train`'s
training step once per weight (the module global patched around each form's calls, so every
form plans with its own weight), next to remat off and `jax.jit` (with cuDNN attention on a
GPU), and times them interleaved with `bench.train.measure`. A diagnostic for choosing the
default, not a benchmark of record.
"""

from __future__ import annotations

import argparse

from bench import train
from purejit.passes import _remat_cost, remat
from purejit.transforms.autodiff import remat as ad_remat


def _no_arithmetic(op) -> bool:
    """`recomputable` without elementwise arithmetic: data movement and constants only."""
    t = op.opdef.traits
    return remat._RECOMPUTABLE(op) and not ("elementwise" in t and "cheap" not in t)


remat._RECOMPUTABLE = remat.recomputable

# --modes: name -> the module globals of passes.remat patched while that form plans
MODES = {
    "no-expensive": {"recomputable": _no_arithmetic},
    "weight=16": {"TRAFFIC_WEIGHT": 16.0},
    "barrier-inputs": {"BARRIER": "inputs"},
    "barrier-none": {"BARRIER": "none"},
}


class _Weighted:
    """A jitted step whose plans see `patch` (module globals of passes.remat, or BARRIER of
    transforms.autodiff.remat, set only while it runs)."""

    def __init__(self, fn, patch: dict):
        self.fn, self.patch = fn, patch

    @property
    def cache(self):
        return self.fn.cache

    def __call__(self, *args):
        # each name is set where it is read: the cost model's in passes/_remat_cost.py
        # (passes/remat.py reads them through it), the cut's in passes/remat.py
        holder = {
            k: ad_remat if k == "BARRIER" else _remat_cost if hasattr(_remat_cost, k) else remat
            for k in self.patch
        }
        old = {k: getattr(holder[k], k) for k in self.patch}
        for k, v in self.patch.items():
            setattr(holder[k], k, v)
        try:
            return self.fn(*args)
        finally:
            for k, v in old.items():
                setattr(holder[k], k, v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="0.25,0.5,1,2,4")
    ap.add_argument("--modes", default="", help=f"comma-separated, of {sorted(MODES)}")
    ap.add_argument("--only", default="transformer", help="workloads, comma-separated")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.2)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    import jax

    import purejit

    platform = jax.devices()[0].platform
    for desc, make_loss, make_layer, params, x, y in train._workloads(platform, a.quick):
        if not any(desc.startswith(o) for o in a.only.split(",")):
            continue
        forms = {
            k: v
            for k, v in train._forms(make_loss, make_layer, params, x, y, []).items()
            if k in ("purejit remat off", "jax", "jax cudnn attention")
        }
        import purejit.numpy as pnp

        loss = make_loss(pnp, purejit.lax)
        step = train.step_of(loss, purejit.value_and_grad, purejit.tree_util.tree_map)
        patches = {
            f"weight={float(w):g}": {"TRAFFIC_WEIGHT": float(w)} for w in a.weights.split(",") if w
        }
        patches.update({m: MODES[m] for m in a.modes.split(",") if m})
        for name, patch in patches.items():

            def make(patch=patch):
                return _Weighted(purejit.jit(step, donate_argnums=0), patch)

            forms[f"purejit {name}"] = (make, "purejit")
        res = train.measure(forms, params, x, y, a.budget, a.repeats)
        base = res.get("purejit remat off")
        print(f"\n## {desc} ({jax.devices()[0].device_kind})\n")
        print("| form | step | / remat off | temp MiB | saved MiB |")
        print("|---|---:|---:|---:|---:|")
        for name, r in res.items():
            rel = r["step"] / base["step"] if base else float("nan")
            saved = f"{r['saved'] / 2**20:.1f}" if "saved" in r else ""
            print(
                f"| {name} | {r['step'] * 1e3:.2f} ms | {rel:.3f}x | {r['temp'] / 2**20:.1f}"
                f" | {saved} |"
            )


if __name__ == "__main__":
    main()
