"""custom_jvp, custom_vjp, checkpoint and its policies, linearize, linear_transpose,
closure_convert, jax.nn's kinks, check_grads, errors, and the autodiff tutorial's patterns
(regressions trained with a jitted step that donates its parameters)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from ad_compare import assert_tree_close, rand_like

import purejit
import purejit.numpy as jnp
from purejit import lax
from purejit.test_util import check_grads

X = np.array([-1.0, 0.0, 0.5, 6.0], np.float32)


def test_custom_jvp_defjvp_defjvps_and_nondiff_argnums():
    @purejit.custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), 2.0 * tx * y + jnp.sin(x) * ty

    @functools.partial(purejit.custom_jvp, nondiff_argnums=(0,))
    def g(n, x):
        return x**n

    g.defjvp(lambda n, p, t: (g(n, p[0]), 10.0 * t[0]))

    @purejit.custom_jvp
    def h(x):
        return jnp.exp(x)

    h.defjvps(lambda t, ans, x: 3.0 * t)

    def loss(x):
        return jnp.sum(f(x, x + 1.0)) + jnp.sum(g(3, x)) + jnp.sum(h(x))

    want = 2.0 * (X + 1.0) + np.sin(X) + 10.0 + 3.0
    assert_tree_close(want, purejit.grad(loss)(X))
    assert_tree_close(want, purejit.jit(purejit.grad(loss))(X))
    _, t = purejit.jvp(loss, (X,), (np.ones_like(X),))
    assert_tree_close(np.float32(want.sum()), t)
    assert_tree_close(np.sin(X) * (X + 1), f(X, X + 1.0))  # eager: just the function


def test_custom_vjp_and_its_errors():
    @purejit.custom_vjp
    def clip_gradient(lo, hi, x):
        return x

    def fwd(lo, hi, x):
        return x, (lo, hi)

    def bwd(res, g):
        lo, hi = res
        return (None, None, jnp.clip(g, lo, hi))

    clip_gradient.defvjp(fwd, bwd)
    loss = lambda x: jnp.sum(clip_gradient(-0.5, 0.5, x) * 3.0)  # noqa: E731
    assert_tree_close(np.full(4, 0.5, np.float32), purejit.grad(loss)(X))
    assert_tree_close(np.full(4, 0.5, np.float32), purejit.jit(purejit.grad(loss))(X))
    with pytest.raises(purejit.PurejitTypeError, match="forward-mode"):
        purejit.jvp(lambda x: clip_gradient(-0.5, 0.5, x), (X,), (X,))

    @purejit.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1],))  # one cotangent short
    with pytest.raises(TypeError, match="same container.*structure"):
        purejit.grad(lambda x: f(x, x).sum())(X)
    f.defvjp(lambda x, y: (x * y, (x, y)), lambda r, g: (g * r[1], g[:2]))  # wrong shape
    with pytest.raises(ValueError, match=r"shape/dtype.*f32\[2\].*f32\[4\]"):
        purejit.grad(lambda x: f(x, x).sum())(X)


def test_checkpoint_policies_give_the_same_numbers_and_recompute():
    w = rand_like(np.zeros((4, 4), np.float32), 1) * 0.5

    def block(x, w):
        h = jnp.tanh(x @ w)
        h = purejit.ad_checkpoint.checkpoint_name(h, "h")
        return jnp.sin(h @ w)

    def block_j(x, w):
        return jjnp.sin(jjnp.tanh(x @ w) @ w)

    want = jax.grad(lambda x, w: block_j(block_j(x, w), w).sum(), argnums=(0, 1))(X, w)
    pols = purejit.checkpoint_policies
    for policy in (None, pols.dots_saveable, pols.everything_saveable,
                   pols.save_only_these_names("h"), pols.dots_with_no_batch_dims_saveable):  # fmt: skip
        b = purejit.checkpoint(block, policy=policy)
        g = purejit.jit(purejit.grad(lambda x, w: b(b(x, w), w).sum(), argnums=(0, 1)))
        assert_tree_close(want, g(X, w), where=str(policy))
    # eager, and inside a scan body (prevent_cse=False, as JAX recommends there)
    b = purejit.checkpoint(block)
    assert_tree_close(want, purejit.grad(lambda x, w: b(b(x, w), w).sum(), argnums=(0, 1))(X, w))
    bs = purejit.checkpoint(block, prevent_cse=False)

    def scanned(x, w):
        return lax.scan(lambda c, _: (bs(c, w), None), x, None, length=2)[0].sum()

    assert_tree_close(want, purejit.jit(purejit.grad(scanned, argnums=(0, 1)))(X, w))
    # nothing saved: the backward pass recomputes tanh behind an optimization barrier
    vg = purejit.value_and_grad(lambda x: purejit.checkpoint(block)(x, w).sum())
    text = purejit.jit(vg).lower(X)
    ir = str(text.ir())
    assert "optimization_barrier" in ir and ir.count("tanh") >= 2


def test_linearize_linear_transpose_closure_convert_match_jax():
    def f(x):
        return jnp.sin(x) * x

    y, f_jvp = purejit.linearize(f, X)
    yj, fj_jvp = jax.linearize(lambda x: jjnp.sin(x) * x, X)
    assert_tree_close((yj, fj_jvp(X)), (y, f_jvp(X)))
    m = rand_like(np.zeros((3, 4), np.float32), 2)
    ft = purejit.linear_transpose(lambda v: jnp.asarray(m) @ v * 2.0, X)
    fjt = jax.linear_transpose(lambda v: m @ v * 2.0, X)
    ct = np.arange(3, dtype=np.float32)
    assert_tree_close(fjt(ct), ft(ct))

    def outer(c):
        conv, consts = purejit.closure_convert(lambda x: jnp.sin(x * c), X)
        assert len(consts) == 1
        return jnp.sum(conv(X, *consts))

    assert_tree_close(jax.grad(lambda c: jjnp.sum(jjnp.sin(X * c)))(2.0), purejit.grad(outer)(2.0))


def test_nn_kinks_and_check_grads():
    for name in ("relu", "relu6", "softplus", "silu", "gelu", "elu", "leaky_relu"):
        got = purejit.grad(lambda x: getattr(purejit.nn, name)(x).sum())(X)
        want = jax.grad(lambda x: getattr(jax.nn, name)(x).sum())(X)
        assert_tree_close(want, got, where=name)
    for name in ("softmax", "log_softmax", "logsumexp"):
        got = purejit.grad(lambda x: (getattr(purejit.nn, name)(x) * x).sum())(X)
        want = jax.grad(lambda x: (getattr(jax.nn, name)(x) * x).sum())(X)
        assert_tree_close(want, got, where=name)
    x64 = np.array([0.3, -0.7, 1.1], np.float32)
    check_grads(lambda x: jnp.tanh(x) * jnp.exp(x), (x64,), order=2)
    check_grads(lambda x: lax.cumprod(x) + jnp.sort(x * x), (x64,), order=1)

    @purejit.custom_jvp
    def wrong(x):
        return jnp.sin(x)

    wrong.defjvps(lambda g, ans, x: g)  # not cos(x)
    with pytest.raises(AssertionError, match="finite differences"):
        check_grads(wrong, (x64,), order=1, modes=("fwd",))


def test_errors_name_the_op_and_the_line():
    def f(x):
        return lax.reduce(x, np.float32(1), lambda a, b: a * b + 0.0, (0,))  # region: custom

    with pytest.raises(purejit.PurejitTypeError, match=r"reduce.*test_ad_custom.py:\d+"):
        purejit.grad(f)(X)
    assert_tree_close(  # forward mode reduces (value, tangent) pairs with the region's JVP
        jax.jvp(lambda x: jax.lax.reduce(x, 1.0, lambda a, b: a * b + 0.0, (0,)), (X,), (X,)),
        purejit.jvp(f, (X,), (X,)),
    )


def test_tutorial_regressions_trained_with_donated_parameters():
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((16, 3)).astype(np.float32)
    targets = (inputs @ np.array([0.5, -1.0, 2.0], np.float32) > 0).astype(np.float32)

    def predict(mod, w, b, x):
        return 0.5 * (mod.tanh((x @ w + b) / 2) + 1)

    def loss(mod, params, x, y):
        p = predict(mod, params["w"], params["b"], x)
        return -mod.sum(mod.log(p * y + (1 - p) * (1 - y)))

    def step(mod, grad, params, x, y):
        g = grad(functools.partial(loss, mod))(params, x, y)
        return {k: params[k] - 0.01 * g[k] for k in params}

    p = {"w": np.zeros(3, np.float32), "b": np.float32(0.0)}
    pj = dict(p)
    train = purejit.jit(functools.partial(step, jnp, purejit.grad), donate_argnums=0)
    train_j = jax.jit(functools.partial(step, jjnp, jax.grad))
    p = {k: jnp.asarray(v) for k, v in p.items()}
    for _ in range(3):
        old = p["w"]
        p = train(p, inputs, targets)
        pj = train_j(pj, inputs, targets)
        assert old.is_deleted()  # the parameters' buffers were donated
    assert_tree_close(pj, p, rtol=1e-5)
    # per-argument gradients of linear regression
    lin = lambda w, b, x: jnp.sum((x @ w + b - targets) ** 2)  # noqa: E731
    lin_j = lambda w, b, x: jjnp.sum((x @ w + b - targets) ** 2)  # noqa: E731
    w0 = np.ones(3, np.float32)
    for argnums in (0, 1, (0, 1)):
        assert_tree_close(
            jax.grad(lin_j, argnums)(w0, 0.5, inputs), purejit.grad(lin, argnums)(w0, 0.5, inputs)
        )


def test_custom_jvp_with_an_integer_argument_under_vmap_inside_grad():
    # the integer argument's tangent is float0; batching the rule must not read its aval
    def build(cj, n):
        @cj
        def f(k, x):
            return x * n.sin(x) + k.astype(x.dtype)

        @f.defjvp
        def f_jvp(primals, tangents):
            k, x = primals
            return f(k, x), 2.0 * tangents[1]

        return lambda x, ks: n.sum(jax.vmap(lambda k: f(k, x))(ks) if n is jjnp else
                                   purejit.vmap(lambda k: f(k, x))(ks))  # fmt: skip

    x, ks = np.float32(0.7), np.arange(3, dtype=np.int32)
    got = purejit.grad(build(purejit.custom_jvp, jnp))(x, ks)
    want = jax.grad(build(jax.custom_jvp, jjnp))(x, ks)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
