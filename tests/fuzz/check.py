"""Run one program every way there is and compare.

The ways: `jax.jit` of the same program written with `jax.lax`/`jax.numpy` (the reference),
purejit's compiled program (CPU; and GPU when the default backend is one), purejit's
reference interpreter on the traced IR, and on the IR after the pass pipeline run with each
pass switched off in turn (and with all of them on).

Tolerances (tests/fuzz/README.md says the same):

- integer and bool results, and float results the generator knows are exact (only exact ops
  on exact inputs: data movement, max/min, comparisons, rounding, conversions, ...): equal
  bit for bit, NaN equal to NaN;
- other float results: |a - b| <= rtol * (1 + scale), with rtol 2e-5 (float32), 1e-2
  (float16), 6e-2 (bfloat16) for the least precise float dtype of any value of the program,
  per inexact op on the way (at most 6), and `scale` the largest
  finite magnitude any float value of the program reaches (cancellation makes error relative
  to the operands, not to the result); NaN and infinities must be in the same places;
- float16 and bfloat16 results, besides: against a float64 reference (the same program run
  by JAX on the inputs widened to float64), purejit's compiled error must be at most 1.5x
  JAX's error plus half a unit in the last place at the result's magnitude (`low_precision`).
  The bound is relative to JAX, so it cannot be met by widening a tolerance: a float16 sum
  accumulated in float16 where JAX accumulates in float32 fails it.
"""

from __future__ import annotations

import math

import jax
import ml_dtypes
import numpy as np

import purejit
from purejit.backend import pjrt
from purejit.ir import interpret
from purejit.passes import Pipeline

from .program import JX, PJ, Program, np_dtype, run

RTOL = {"float32": 2e-5, "float16": 1e-2, "bfloat16": 6e-2}
MATMUL_OPS = ("dot", "conv", "linalg")
TF32_TOL = 1e-2
PASSES = ("cleanup", "fold", "simplify", "cse", "dce", "layout", "fusion", "buffer_assignment")


LOW_PRECISION = ("float16", "bfloat16")
ERROR_RATIO = 1.5


class Mismatch(AssertionError):
    """Two ways of running one program disagree."""


def reference64(prog: Program, args) -> list | None:
    """The program's outputs as JAX computes them in float64 from the same inputs (float
    inputs widened), or None where the program does not run that way."""
    wide = [a.astype(np.float64) if _is_float(a) else a for a in args]
    try:
        with jax.enable_x64(True):
            return [np.asarray(o) for o in jax.jit(lambda *a: run(prog, JX, a))(*wide)]
    except Exception:  # noqa: BLE001 - an op whose float64 form JAX rejects: no reference
        return None


def _is_float(a) -> bool:
    a = np.asarray(a)
    return a.dtype.kind == "f" or a.dtype == np_dtype("bfloat16")


def low_precision(name: str, got, want, ref) -> None:
    """Raise `Mismatch` if `got`'s error against the float64 reference `ref` exceeds
    ERROR_RATIO times JAX's (`want`'s) error, plus one ulp at the result's magnitude."""
    g, w, r = (np.asarray(a).astype(np.float64) for a in (got, want, ref))
    if r.shape != w.shape:
        return
    fin = np.isfinite(g) & np.isfinite(w) & np.isfinite(r)
    if not fin.any():
        return
    err_pj, err_jax = float(np.abs(g - r)[fin].max()), float(np.abs(w - r)[fin].max())
    half_ulp = 0.5 * ulp(np.asarray(want).dtype, float(np.abs(r[fin]).max()))
    if err_pj > ERROR_RATIO * err_jax + half_ulp:
        raise Mismatch(
            f"{name}: error {err_pj:.3g} against a float64 reference, JAX's {err_jax:.3g} "
            f"(allowed {ERROR_RATIO} x JAX's + half an ulp {half_ulp:.3g})\n  got  {got!r}\n"
            f"  jax  {want!r}\n  f64  {ref!r}"
        )


def ulp(dtype, magnitude: float) -> float:
    """The spacing of `dtype`'s numbers at `magnitude` (the unavoidable rounding of a result
    there is half of it)."""
    info = ml_dtypes.finfo(dtype)
    if magnitude < float(info.smallest_normal):
        return float(info.smallest_subnormal)
    return 2.0 ** (math.floor(math.log2(magnitude)) - int(info.nmant))


def _scale(values) -> float:
    m = 0.0
    for v in values:
        a = np.asarray(v)
        if a.dtype.kind == "f" or a.dtype == np_dtype("bfloat16"):
            f = np.abs(a.astype(np.float64))
            f = f[np.isfinite(f)]
            if f.size:
                m = max(m, float(f.max()))
    return m


def _loosest(values) -> float:
    """The largest RTOL of the float dtypes the program's values take: a bfloat16 value on
    the way rounds as much as a bfloat16 result does."""
    names = {str(np.asarray(v).dtype) for v in values}
    return max([RTOL[n] for n in names if n in RTOL], default=0.0)


def _inexact_ops(prog: Program) -> int:
    """How many rounding steps the program takes: one per inexact op, and a `grad` or
    `vmap` op counts the ops of its chain (a grad twice: its forward and backward pass)."""
    from .ops import SPECS

    n = 0
    for name, _, params in prog.ops:
        if SPECS[name].exact is True:
            continue
        chain = params.get("chain", ()) if isinstance(params, dict) else ()
        n += max(1, len(chain) * (2 if name == "grad" else 1))
    return n


def compare(name: str, got, want, exact: bool, rtol: float, scale: float):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise Mismatch(
            f"{name}: {got.dtype}{list(got.shape)} vs jax {want.dtype}{list(want.shape)}"
        )
    if want.dtype.kind in "biu" or exact:
        if want.dtype.kind in "biu":
            ok = np.array_equal(got, want)
        else:
            g, w = got.astype(np.float64), want.astype(np.float64)
            ok = (
                np.array_equal(np.isnan(g), np.isnan(w))
                and np.array_equal(g[~np.isnan(g)], w[~np.isnan(w)])
                and np.array_equal(np.signbit(g[g == 0]), np.signbit(w[w == 0]))
            )
        if not ok:
            raise Mismatch(f"{name}: not bit-exact\n  got  {got!r}\n  jax  {want!r}")
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    same_special = np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(
        np.where(np.isinf(g), g, 0), np.where(np.isinf(w), w, 0)
    )
    fin = np.isfinite(g) & np.isfinite(w)
    err = np.abs(g[fin] - w[fin])
    tol = rtol * (1 + scale)
    if not same_special or (err.size and err.max() > tol):
        worst = float(err.max()) if err.size else math.nan
        raise Mismatch(
            f"{name}: differs by {worst:.3g} > {tol:.3g}\n  got  {got!r}\n  jax  {want!r}"
        )


def check(prog: Program, *, passes: bool = True) -> dict:
    """Run `prog` every way; raise `Mismatch` naming the first disagreement.

    Returns what ran (for statistics)."""
    args = prog.args()
    every = jax.jit(lambda *a: run(prog, JX, a, all_values=True))(*args)
    want = [np.asarray(every[j]) for j in prog.outputs]
    scale = _scale(every)
    exact = prog.exact or [False] * len(want)
    steps = max(1, min(_inexact_ops(prog), 6))
    loosest = _loosest([*args, *every])
    # float32 products run in TF32 on GPU (jax's and purejit's alike, but not the
    # interpreter's): 10 mantissa bits, see tests/tolerance.py
    tf32 = pjrt.is_gpu() and any(name in MATMUL_OPS for name, _, _ in prog.ops)

    def cmp(name, outs):
        if len(outs) != len(want):
            raise Mismatch(f"{name}: {len(outs)} results, jax {len(want)}")
        for k, (g, w, ex) in enumerate(zip(outs, want, exact)):
            rtol = max(RTOL.get(str(w.dtype), 0.0), loosest) * steps
            if tf32 and not ex:
                rtol = max(rtol, TF32_TOL)
            compare(f"{name} result {k}", g, w, ex, rtol, scale)

    f = purejit.jit(lambda *a: run(prog, PJ, a))
    lowered = f.lower(*args)
    cmp("interpreter (traced IR)", interpret(lowered.traced, *args))
    compiled = [np.asarray(o) for o in f(*args)]
    cmp("compiled", compiled)
    ran = ["jax", "interpreter", "compiled"]
    low = [k for k, w in enumerate(want) if str(w.dtype) in LOW_PRECISION and not exact[k]]
    ref = reference64(prog, args) if low else None
    if ref is not None:
        for k in low:
            low_precision(f"compiled result {k} (float64 reference)", compiled[k], want[k], ref[k])
        ran.append("float64 reference")
    if passes:
        cmp("interpreter (all passes)", interpret(lowered.fn, *args))
        for p in PASSES:
            fn, _ = Pipeline(disable=[p]).run(lowered.traced)
            cmp(f"interpreter (passes without {p})", interpret(fn, *args))
        ran.append("passes")
    return {"ran": ran}
