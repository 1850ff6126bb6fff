"""custom_jvp / custom_vjp with symbolic_zeros (SymbolicZero, CustomVJPPrimal), linear_call,
zero_from_primal, and the ad_checkpoint names (Saveable, Recompute, Offloadable,
print_saved_residuals), each against JAX under grad, jit(grad), eager grad, jvp and vmap."""

from __future__ import annotations

import jax
import jax.ad_checkpoint
import jax.custom_derivatives as jcd
import jax.numpy as jjnp
import numpy as np
import pytest
from ad_compare import assert_tree_close

import purejit
import purejit.numpy as jnp
from purejit import ad_checkpoint as pad
from purejit import custom_derivatives as pcd

X = np.array([-1.0, 0.0, 0.5, 2.0], np.float32)
Y = np.array([0.3, -0.7, 1.5, 2.5], np.float32)


def _both(build):
    """`build(lib, np_module, cd)` for purejit and for JAX."""
    return build(purejit, jnp, pcd), build(jax, jjnp, jcd)


def _jvp_pair(lib, xnp, cd, seen):
    @lib.custom_jvp
    def f(x, y):
        return xnp.sin(x) * y

    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        seen.append((type(tx).__name__, type(ty).__name__))
        out = f(x, y)
        t = xnp.zeros_like(out)
        if type(tx) is not cd.SymbolicZero:
            t = t + 3.0 * tx * y
        if type(ty) is not cd.SymbolicZero:
            t = t + xnp.sin(x) * ty
        return out, t

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


@pytest.mark.parametrize("mode", ["eager", "jit", "vmap"])
def test_custom_jvp_symbolic_zeros_matches_jax(mode):
    seen_p, seen_j = [], []
    fp = _jvp_pair(purejit, jnp, pcd, seen_p)
    fj = _jvp_pair(jax, jjnp, jcd, seen_j)

    def run(lib, f):
        g = lib.grad(lambda x, y: (f(x, y) ** 2).sum(), argnums=0)
        if mode == "jit":
            g = lib.jit(g)
        if mode == "vmap":
            return lib.vmap(lambda x, y: lib.grad(lambda a: f(a, y).sum())(x))(X, Y)
        return g(X, Y)

    assert_tree_close(run(jax, fj), run(purejit, fp))
    # the rule sees a SymbolicZero for y, which is not differentiated, as in JAX
    assert seen_p and seen_j
    assert ("ndarray" not in seen_p[-1][0]) and seen_p[-1][1] == "SymbolicZero"
    assert seen_j[-1][1] == "SymbolicZero"
    # forward mode in y only: x's tangent is the symbolic one
    seen_p.clear()
    _, tp = purejit.jvp(lambda y: fp(X, y), (Y,), (np.ones_like(Y),))
    _, tj = jax.jvp(lambda y: fj(X, y), (Y,), (np.ones_like(Y),))
    assert_tree_close(tj, tp)
    assert seen_p[-1][0] == "SymbolicZero"


def test_custom_jvp_rule_may_return_a_symbolic_zero():
    def build(lib, xnp, cd):
        @lib.custom_jvp
        def f(x):
            return xnp.cos(x)

        @lambda r: f.defjvp(r, symbolic_zeros=True)
        def _(primals, tangents):
            return f(*primals), cd.SymbolicZero.from_primal_value(primals[0])

        return lambda x: (f(x) + x * x).sum()

    fp, fj = _both(build)
    assert_tree_close(jax.grad(fj)(X), purejit.grad(fp)(X))
    assert_tree_close(jax.grad(fj)(X), purejit.jit(purejit.grad(fp))(X))


def _vjp_pair(lib, xnp, cd, log):
    @lib.custom_vjp
    def f(x, y):
        return xnp.sin(x) * y, x * 2.0

    def fwd(x, y):
        log.append(("fwd", x.perturbed, y.perturbed))
        xv, yv = cd.custom_vjp_primal_tree_values((x, y))
        return f(xv, yv), (xv, yv)

    def bwd(res, cts):
        x, y = res
        c1, c2 = cts
        log.append(("bwd", *[type(c) is cd.SymbolicZero for c in cts]))
        gx = 5.0 * x if type(c1) is cd.SymbolicZero else xnp.cos(x) * y * c1
        if type(c2) is not cd.SymbolicZero:
            gx = gx + 2.0 * c2
        return gx, None

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    return f


@pytest.mark.parametrize("mode", ["eager", "jit", "vmap"])
def test_custom_vjp_symbolic_zeros_matches_jax(mode):
    log_p, log_j = [], []
    fp = _vjp_pair(purejit, jnp, pcd, log_p)
    fj = _vjp_pair(jax, jjnp, jcd, log_j)

    def run(lib, f, which):
        def loss(x, y):
            a, b = f(x, y)
            return (a**2).sum() if which == 0 else (a.sum() + b.sum())

        if mode == "vmap":
            return lib.vmap(lambda x, y: lib.grad(lambda u: loss(u, y))(x))(X, Y)
        g = lib.grad(loss)
        return (lib.jit(g) if mode == "jit" else g)(X, Y)

    for which in (0, 1):
        log_p.clear()
        log_j.clear()
        assert_tree_close(run(jax, fj, which), run(purejit, fp, which))
        # fwd sees x perturbed and y not; bwd sees the unused output's cotangent as a
        # SymbolicZero, exactly where JAX does
        assert log_p == log_j, (log_p, log_j)


def test_custom_vjp_symbolic_zeros_bwd_may_return_symbolic_zero():
    def build(lib, xnp, cd):
        @lib.custom_vjp
        def f(x, y):
            return x * y

        def fwd(x, y):
            return f(x.value, y.value), y.value

        def bwd(y, ct):
            return ct * y, cd.SymbolicZero.from_primal_value(y)

        f.defvjp(fwd, bwd, symbolic_zeros=True)
        return lambda x, y: f(x, y).sum()

    fp, fj = _both(build)
    want = jax.grad(fj, argnums=(0, 1))(X, Y)
    assert_tree_close(want, purejit.grad(fp, argnums=(0, 1))(X, Y))
    assert_tree_close(want, purejit.jit(purejit.grad(fp, argnums=(0, 1)))(X, Y))


def test_zero_from_primal_and_primal_tree_values():
    tree = {"a": X, "b": np.arange(3, dtype=np.int32)}
    z = pcd.zero_from_primal(tree, symbolic_zeros=True)
    zj = jcd.zero_from_primal(tree, symbolic_zeros=True)
    assert type(z["a"]) is pcd.SymbolicZero and type(zj["a"]) is jcd.SymbolicZero
    assert (z["a"].shape, z["a"].dtype) == (zj["a"].shape, zj["a"].dtype)
    assert (z["b"].shape, z["b"].dtype) == (zj["b"].shape, zj["b"].dtype)  # float0
    dense = pcd.zero_from_primal(tree)
    dense_j = jcd.zero_from_primal(tree)
    np.testing.assert_array_equal(np.asarray(dense["a"]), np.asarray(dense_j["a"]))
    assert dense["b"].dtype == dense_j["b"].dtype
    prim = (pcd.CustomVJPPrimal(X, True), [pcd.CustomVJPPrimal(Y, False)])
    got = pcd.custom_vjp_primal_tree_values(prim)
    assert got[0] is X and got[1][0] is Y
    with pytest.raises(TypeError, match="unexpected leaf type"):
        pcd.custom_vjp_primal_tree_values((X,))


def _linear_pair(lib, xnp, cd):
    def f(r, x):
        return x / r

    def t(r, ct):
        return 2.0 * ct / r  # deliberately not f's transpose: reverse mode must use it

    def loss(r, x):
        return (xnp.sin(cd.linear_call(f, t, r, x * x)) * r).sum()

    return loss


@pytest.mark.parametrize("mode", ["eager", "jit", "vmap"])
def test_linear_call_uses_the_given_transpose(mode):
    lp, lj = _both(_linear_pair)
    r = Y + 3.0

    rs, xs = np.stack([r, r + 1]), np.stack([X, X * 2])

    def run(lib, loss):
        g = lib.grad(loss, argnums=1)
        if mode == "vmap":
            if lib is jax:  # JAX has no batching rule for linear_call: one example at a time
                return np.stack([g(a, b) for a, b in zip(rs, xs)])
            return lib.vmap(g)(rs, xs)
        return (lib.jit(g) if mode == "jit" else g)(r, X)

    assert_tree_close(run(jax, lj), run(purejit, lp))
    _, tp = purejit.jvp(lambda x: lp(r, x), (X,), (Y,))
    _, tj = jax.jvp(lambda x: lj(r, x), (X,), (Y,))
    assert_tree_close(tj, tp)
    # outside any transformation it is just the call
    assert_tree_close(X / r, pcd.linear_call(lambda a, b: b / a, None, r, X))


def test_linear_call_residual_must_not_be_differentiated():
    loss = _linear_pair(purejit, jnp, pcd)
    with pytest.raises(NotImplementedError, match="residual argument"):
        purejit.grad(loss, argnums=0)(Y + 3.0, X)


def _policy_fn(lib, xnp, policy):
    def f(x):
        y = xnp.sin(x)
        z = lib.ad_checkpoint.checkpoint_name(xnp.exp(y), "z")
        return (z * xnp.cos(z)).sum()

    return lib.checkpoint(f, policy=policy)


def test_policies_may_answer_saveable_recompute():
    def policy_of(ns):
        def policy(prim, *_, **params):
            return ns.Saveable if params.get("name") == "z" else ns.Recompute

        return policy

    gp = purejit.jit(purejit.grad(_policy_fn(purejit, jnp, policy_of(pad))))(X)
    gj = jax.jit(jax.grad(_policy_fn(jax, jjnp, policy_of(jax.ad_checkpoint))))(X)
    assert_tree_close(gj, gp)
    # the policy's answer is read as JAX reads it: what it saves is a residual
    saved = pad.saved_residuals(_policy_fn(purejit, jnp, policy_of(pad)), X)
    assert any(src.startswith("output of checkpoint_name") for _, src in saved), saved


def test_offloadable_policy_raises_clearly():
    off = pad.Offloadable(src="device", dst="pinned_host")
    assert off.src == "device" and repr(pad.Recompute) == "Recompute"
    f = _policy_fn(purejit, jnp, lambda *_, **__: off)
    with pytest.raises(NotImplementedError, match="does not offload"):
        purejit.jit(purejit.grad(f))(X)


def test_print_saved_residuals(capsys):
    def f(x, w):
        return jnp.sum(jnp.sin(jnp.dot(x, w)))

    x, w = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    pad.print_saved_residuals(f, x, w)
    lines = capsys.readouterr().out.splitlines()
    # JAX keeps the same three: both arguments and the cosine of the product
    assert sorted(lines[:2]) == ["f32[3,4] from the argument args[0]",
                                 "f32[4,5] from the argument args[1]"]  # fmt: skip
    assert len(lines) == 3 and lines[2].startswith("f32[3,5] output of cosine from "), lines
