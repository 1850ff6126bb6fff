"""Compare a purejit.numpy program with the same program written against jax.numpy.

`check(fn, *args)` runs `fn(jax.numpy, *args)` as the reference and `fn(purejit.numpy, ...)`
twice: eagerly (arguments wrapped as purejit arrays) and under `purejit.jit`. Every output
leaf must agree in shape, dtype, weak type (for non-bool results) and values.
"""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np

import purejit
import purejit.numpy as jnp

_NARROW = {np.dtype(ml_dtypes.bfloat16): 2e-2, np.dtype(np.float16): 2e-3}

# Functions whose result's weak type changed in jax 0.11 (purejit follows the newer JAX): with
# an older jax installed, the reference's weak type is not compared for these case names.
_JAX_VERSION = tuple(int(p) for p in jax.__version__.split(".")[:2])
WEAK_TYPE_CHANGED_IN_JAX_0_11 = {"log2"}


def _weak_checked(name: str, weak: bool) -> bool:
    return weak and not (_JAX_VERSION < (0, 11) and name in WEAK_TYPE_CHANGED_IN_JAX_0_11)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def _as_float(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) if a.dtype in _NARROW else a


def assert_same(ref, got, *, rtol=2e-6, atol=1e-6, weak=True, where=""):
    """One result against JAX's: shape, dtype, weak type (non-bool) and values."""
    r, g = np.asarray(ref), np.asarray(got)
    assert r.shape == g.shape, f"{where}: shape {g.shape} != JAX's {r.shape}"
    assert r.dtype == g.dtype, f"{where}: dtype {g.dtype} != JAX's {r.dtype}"
    if weak and r.dtype != np.bool_:
        assert bool(ref.weak_type) == bool(got.weak_type), f"{where}: weak type differs"
    if r.dtype.kind in "biu":
        np.testing.assert_array_equal(g, r, err_msg=where)
    else:
        tol = _NARROW.get(r.dtype, 0)
        np.testing.assert_allclose(_as_float(g), _as_float(r), rtol=max(rtol, tol),
                                   atol=max(atol, tol), equal_nan=True, err_msg=where)  # fmt: skip


def check_cases(cases: dict, *args, eager=(), rtol=2e-6, atol=1e-6, weak=True, case_tol=None):
    """Many programs over the same arguments, each `fn(m, *args)`, in one compile per side.

    The JAX reference runs under jax.jit and purejit's under purejit.jit, one program holding
    every case (compiles are the slow part of these tests). The cases named in `eager` (or
    all of them when eager is True) also run eagerly, op by op. `case_tol` maps case names to
    their own `{"rtol": .., "atol": ..}` (e.g. `tolerance.dot_tol(...)` for cases whose
    products run at the default precision, TF32 on GPU).
    """
    case_tol = case_tol or {}
    names = list(cases)
    jax_args = [jjnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    refs = jax.jit(lambda *a: [cases[n](jjnp, *a) for n in names])(*jax_args)
    outs = purejit.jit(lambda *a: [cases[n](jnp, *a) for n in names])(*args)

    def tol(n):
        t = case_tol.get(n, {})
        return t.get("rtol", rtol), t.get("atol", atol)

    for n, r, g in zip(names, refs, outs):
        _compare(r, g, *tol(n), _weak_checked(n, weak), f"jit {n!r}")
    for n in names if eager is True else eager:
        g = cases[n](jnp, *[jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        _compare(refs[names.index(n)], g, *tol(n), _weak_checked(n, weak), f"eager {n!r}")
    return dict(zip(names, refs))


def _compare(ref, got, rtol, atol, weak, where):
    ref_leaves, leaves = _leaves(ref), _leaves(got)
    assert len(leaves) == len(ref_leaves), f"{where}: {len(leaves)} outputs, not {len(ref_leaves)}"
    for i, (r, g) in enumerate(zip(ref_leaves, leaves)):
        assert_same(r, g, rtol=rtol, atol=atol, weak=weak, where=f"{where} output {i}")


def check(fn, *args, rtol=2e-6, atol=1e-6, weak=True, eager=True, jit=True):
    """Run fn(m, *args) with m = jax.numpy (reference) and purejit.numpy, eager and jitted.

    Args are NumPy arrays or Python scalars; JAX gets jax arrays, eager purejit gets
    purejit arrays, the jitted function gets them as they are.
    Returns the reference result.
    """
    ref = fn(jjnp, *[jjnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
    runs = []
    if eager:
        runs.append(("eager", fn(jnp, *[jnp.asarray(a) if isinstance(a, np.ndarray) else a
                                        for a in args])))  # fmt: skip
    if jit:
        runs.append(("jit", purejit.jit(lambda *a: fn(jnp, *a))(*args)))
    for mode, out in runs:
        _compare(ref, out, rtol, atol, weak, mode)
    return ref


__all__ = ["assert_same", "check", "check_cases"]
