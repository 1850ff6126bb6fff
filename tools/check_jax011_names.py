"""Compare purejit's versions of names new in jax 0.11 with the installed jax's, bit for bit.

Names: lax.log2, lax.one_minus_square, numpy.minmax, numpy.top_k, Inline,
CompilerEffortLevel, custom_remat (and scipy.optimize.minimize, in both). The local jax
(0.10.2) lacks these names, so their tests compare with NumPy and JAX's
formulas; this script is the check against jax 0.11 itself. Run it where jax >= 0.11 is
installed (CPU is enough), from the repository root:

    JAX_PLATFORMS=cpu python3 tools/check_jax011_names.py

It prints one row per case (eager and jit results, values and gradients) and exits 1 if any
differs. Needs only jax, numpy and purejit; under a minute on CPU.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.scipy.optimize  # noqa: E402, F401
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import purejit  # noqa: E402
import purejit.numpy as pnp  # noqa: E402
from purejit import lax as plax  # noqa: E402
from purejit.scipy import optimize as popt  # noqa: E402

ROWS: list[tuple[str, str, str]] = []


def _leaves(x):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(x)]


def _equal(a, b) -> str:
    la, lb = _leaves(a), _leaves(b)
    nan_only = False
    if len(la) != len(lb):
        return f"{len(la)} leaves vs {len(lb)}"
    for x, y in zip(la, lb):
        if x.dtype != y.dtype or x.shape != y.shape:
            return f"{x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}"
        xb = x.reshape(-1).view(np.uint8) if x.dtype != np.bool_ else x
        yb = y.reshape(-1).view(np.uint8) if y.dtype != np.bool_ else y
        if not np.array_equal(xb, yb):
            if x.dtype.kind in "fcV" and np.array_equal(x, y, equal_nan=True):
                nan_only = True  # NaN payload or sign bits only (XLA's, not a value)
                continue
            return f"differs ({int(np.sum(x != y))} of {x.size} elements)"
    return "bit-equal except NaN payloads" if nan_only else ""


def case(name: str, label: str, ours, theirs) -> None:
    try:
        a = ours()
    except Exception as e:  # noqa: BLE001 - the table reports every failure
        ROWS.append((name, label, f"purejit raised {type(e).__name__}: {e}"[:120]))
        return
    try:
        b = theirs()
    except Exception as e:  # noqa: BLE001
        ROWS.append((name, label, f"jax raised {type(e).__name__}: {e}"[:120]))
        return
    ROWS.append((name, label, _equal(a, b) or "bit-equal"))


def both(name, label, pf, jf, *args):
    """Eager and jitted results of purejit's `pf` and jax's `jf`."""
    case(name, label + " eager", lambda: pf(*args), lambda: jf(*args))
    case(name, label + " jit", lambda: purejit.jit(pf)(*args), lambda: jax.jit(jf)(*args))


def grads(name, label, pf, jf, x):
    case(
        name,
        label + " grad",
        lambda: purejit.grad(lambda v: pf(v).sum())(x),
        lambda: jax.grad(lambda v: jf(v).sum())(x),
    )
    t = np.linspace(-1, 1, x.size).reshape(x.shape).astype(x.dtype)
    case(
        name,
        label + " jvp",
        lambda: purejit.jvp(pf, (x,), (t,)),
        lambda: jax.jvp(jf, (x,), (t,)),
    )


def _jlog2(v):
    return jax.lax.log2(v)


def _jomsq(v):
    return jax.lax.one_minus_square(v)


def check_log2(rng):
    n = "lax.log2"
    f32 = np.concatenate([rng.uniform(1e-3, 1e3, 200), [0, -1, 1, 2, 0.5, np.inf, np.nan]])
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16):
        both(n, np.dtype(dt).name, plax.log2, _jlog2, f32.astype(dt))
    c = (rng.normal(size=64) + 1j * rng.normal(size=64)).astype(np.complex64)
    both(n, "complex64", plax.log2, _jlog2, c)
    grads(n, "float32", plax.log2, _jlog2, rng.uniform(0.1, 10, 64).astype(np.float32))
    with jax.enable_x64(True), purejit.enable_x64(True):
        both(n, "float64", plax.log2, _jlog2, rng.uniform(1e-3, 1e3, 64))
        grads(n, "float64", plax.log2, _jlog2, rng.uniform(0.1, 10, 64))


def check_one_minus_square(rng):
    n = "lax.one_minus_square"
    x = np.concatenate([rng.uniform(-2, 2, 200), 1 - rng.uniform(0, 1e-3, 20), [1e-30, 0, -1]])
    for dt in (np.float32, np.float16, ml_dtypes.bfloat16):
        both(n, np.dtype(dt).name, plax.one_minus_square, _jomsq, x.astype(dt))
    for dt in (np.int32, np.uint8, np.int8):
        v = rng.integers(0, 100, 64).astype(dt)
        both(n, np.dtype(dt).name, plax.one_minus_square, _jomsq, v)
    c = (rng.normal(size=64) + 1j * rng.normal(size=64)).astype(np.complex64)
    both(n, "complex64", plax.one_minus_square, _jomsq, c)
    g = np.concatenate([rng.uniform(-2, 2, 60), [1e-30, 1e-8, 0, 1]]).astype(np.float32)
    grads(n, "float32", plax.one_minus_square, _jomsq, g)


def check_minmax(rng):
    n = "numpy.minmax"
    a = rng.integers(-50, 50, (4, 5)).astype(np.int32)
    f = np.where(rng.uniform(size=(4, 5)) < 0.1, np.nan, rng.normal(size=(4, 5))).astype(np.float32)
    for label, kw in (
        ("all", {}),
        ("axis=1", {"axis": 1}),
        ("axis=0 keepdims", {"axis": 0, "keepdims": True}),
        ("initial tuple", {"initial": (-3, 3)}),
        ("where+initial", {"axis": 1, "where": a > 0, "initial": 0}),
    ):
        for arr, dl in ((a, "int32"), (f, "float32")):
            both(n, f"{dl} {label}", lambda v, kw=kw: pnp.minmax(v, **kw),
                 lambda v, kw=kw: jnp.minmax(v, **kw), arr)  # fmt: skip


def check_top_k(rng):
    n = "numpy.top_k"
    arrays = {
        "float32+nan": np.where(rng.uniform(size=(3, 6)) < 0.15, np.nan, rng.normal(size=(3, 6)))
        .astype(np.float32)
        .round(1),
        "int32": rng.integers(-5, 5, (3, 6)).astype(np.int32),
        "uint8": rng.integers(0, 255, (3, 6)).astype(np.uint8),
        "bool": rng.uniform(size=(3, 6)) < 0.5,
        "int32 extremes": np.array([[-(2**31), 2**31 - 1, 0, -1, 5, -(2**31)]] * 3, np.int32),
    }
    for dl, arr in arrays.items():
        for mode in ("largest", "smallest"):
            for axis in (-1, 0):
                k = 2
                both(n, f"{dl} {mode} axis={axis}",
                     lambda v, m=mode, ax=axis: pnp.top_k(v, k, axis=ax, mode=m),
                     lambda v, m=mode, ax=axis: jnp.top_k(v, k, axis=ax, mode=m), arr)  # fmt: skip
    x = rng.normal(size=(3, 6)).astype(np.float32)
    for stable in (True, False):  # no ties: the order is the same either way
        both("lax.top_k", f"is_stable={stable} axis=0",
             lambda v, st=stable: plax.top_k(v, 2, axis=0, is_stable=st),
             lambda v, st=stable: jax.lax.top_k(v, 2, axis=0, is_stable=st), x)  # fmt: skip
    case(n, "float32 smallest grad",
         lambda: purejit.grad(lambda v: pnp.top_k(v, 2, mode="smallest")[0].sum())(x),
         lambda: jax.grad(lambda v: jnp.top_k(v, 2, mode="smallest")[0].sum())(x))  # fmt: skip


def check_enums():
    if not hasattr(jax, "Inline"):
        ROWS.append(("Inline, CompilerEffortLevel", "-", f"jax {jax.__version__} lacks them"))
        return
    for name in ("Inline", "CompilerEffortLevel"):
        ours = {m.name: m.value for m in getattr(purejit, name)}
        theirs = {m.name: m.value for m in getattr(jax, name)}
        ROWS.append(
            (name, "members and values", "equal" if ours == theirs else f"{ours} vs {theirs}")
        )
    for s in ("O0", "O3", "UNKNOWN"):
        same = purejit.CompilerEffortLevel(s).value == jax.CompilerEffortLevel(s).value
        ROWS.append(("CompilerEffortLevel", f"from name {s!r}", "equal" if same else "differs"))


def check_minimize():
    def rosen(np_):
        return lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)

    x0 = np.array([-1.2, 1.0, 0.5, 2.0], np.float32)
    jmin = jax.scipy.optimize.minimize

    def ours():
        return purejit.jit(lambda x: tuple(popt.minimize(rosen(pnp), x, method="BFGS")))(x0)

    def theirs():
        return jax.jit(lambda x: tuple(jmin(rosen(jnp), x, method="BFGS")))(x0)

    case("scipy.optimize.minimize", "BFGS rosenbrock float32 jit", ours, theirs)


def check_custom_remat():
    # with jax_remat3 off (JAX's default) JAX evaluates and differentiates f itself
    def f(np_):
        return lambda x: np_.sin(x) ** 3 * np_.exp(x)

    def rule(*_):
        raise AssertionError("a rule ran")

    x = np.linspace(-1.0, 2.0, 16).astype(np.float32)
    n = "custom_remat"

    def ours():
        g = purejit.custom_remat(f(pnp), rule, rule, rule)
        return g(x), purejit.grad(purejit.checkpoint(lambda v: g(v).sum()))(x)

    def theirs():
        g = jax.custom_remat(f(jnp), rule, rule, rule)
        return g(x), jax.grad(jax.checkpoint(lambda v: g(v).sum()))(x)

    case(n, "value, grad of checkpoint", ours, theirs)

    def ours_jit():
        g = purejit.custom_remat(f(pnp), rule, rule, rule)
        return purejit.jit(purejit.grad(lambda v: g(v).sum()))(x)

    def theirs_jit():
        g = jax.custom_remat(f(jnp), rule, rule, rule)
        return jax.jit(jax.grad(lambda v: g(v).sum()))(x)

    case(n, "jit(grad)", ours_jit, theirs_jit)


def main() -> int:
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    print(f"jax {jax.__version__} ({jax.default_backend()}), purejit from {purejit.__file__}")
    check_log2(rng)
    check_one_minus_square(rng)
    check_minmax(rng)
    check_top_k(rng)
    check_enums()
    check_minimize()
    check_custom_remat()
    w = max(len(r[0]) for r in ROWS)
    l2 = max(len(r[1]) for r in ROWS)
    print(f"{'name':<{w}}  {'case':<{l2}}  result")
    for name, label, res in ROWS:
        print(f"{name:<{w}}  {label:<{l2}}  {res}")
    bad = [r for r in ROWS if r[2] not in ("bit-equal", "equal", "bit-equal except NaN payloads")]
    print(f"{len(ROWS) - len(bad)} of {len(ROWS)} cases agree; {time.perf_counter() - start:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
