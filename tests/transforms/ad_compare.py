"""Compare purejit's derivatives with JAX's.

`check_ad(f_pj, f_jax, *args)` computes, for purejit under one `jit` and for JAX, the value
and gradient of `sum(f(*args))`-style scalar functions, a `jvp` with fixed random tangents
and a `vjp` with a fixed random cotangent, and compares them leaf by leaf.
"""

from __future__ import annotations

import jax
import numpy as np

import purejit


def rand_like(x, seed):
    rng = np.random.default_rng(seed)
    x = np.asarray(x)
    if x.dtype.kind == "c":
        v = rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)
    else:
        v = rng.standard_normal(x.shape)
    return v.astype(x.dtype)


def _close(ref, got, rtol, atol, where):
    r, g = np.asarray(ref), np.asarray(got)
    assert r.shape == g.shape, f"{where}: shape {g.shape} != JAX's {r.shape}"
    assert r.dtype == g.dtype, f"{where}: dtype {g.dtype} != JAX's {r.dtype}"
    if r.dtype == jax.dtypes.float0:
        return
    np.testing.assert_allclose(
        g.astype(np.complex128 if r.dtype.kind == "c" else np.float64),
        r.astype(np.complex128 if r.dtype.kind == "c" else np.float64),
        rtol=rtol,
        atol=atol,
        err_msg=where,
    )


def assert_tree_close(ref, got, rtol=2e-5, atol=2e-5, where=""):
    rl, rt = jax.tree_util.tree_flatten(ref)
    gl, gt = purejit.tree_util.tree_flatten(got)
    assert len(rl) == len(gl), f"{where}: {len(gl)} leaves, JAX has {len(rl)}"
    for k, (r, g) in enumerate(zip(rl, gl)):
        _close(r, g, rtol, atol, f"{where} leaf {k}")


def check_ad(f_pj, f_jax, *args, rtol=2e-5, atol=2e-5, jit=True, modes=("jvp", "vjp")):
    """jvp and vjp of f against JAX's, with random tangents and cotangents."""
    tangents = tuple(rand_like(a, 10 + k) for k, a in enumerate(args))
    out_ref = jax.eval_shape(f_jax, *args)
    cts = jax.tree_util.tree_map(lambda o: rand_like(np.zeros(o.shape, o.dtype), 99), out_ref)

    def pj(*a):
        res = {}
        if "jvp" in modes:
            res["jvp"] = purejit.jvp(f_pj, a, tangents)
        if "vjp" in modes:
            out, vjp_fn = purejit.vjp(f_pj, *a)
            res["vjp"] = (out, vjp_fn(cts))
        return res

    def jx(*a):
        ref = {}
        if "jvp" in modes:
            ref["jvp"] = jax.jvp(f_jax, a, tangents)
        if "vjp" in modes:
            out, vjp_fn = jax.vjp(f_jax, *a)
            ref["vjp"] = (out, vjp_fn(cts))
        return ref

    ref = jax.jit(jx)(*args)  # JAX's eager dispatch compiles every op: slower than one jit
    got = (purejit.jit(pj) if jit else pj)(*args)
    for k in ref:
        assert_tree_close(ref[k], got[k], rtol, atol, where=k)
