"""User-defined primitives (purejit.extend), written the way Equinox writes its own
(`unvmap_any`, a linear primitive with a transpose rule, a multiple-results primitive with a
JVP, lowerings via `lower_fun`), checked against the same primitives defined in JAX under
jit, grad, vmap, scan, cond, checkpoint, the IR interpreter and the passes."""

from __future__ import annotations

import types

import jax
import jax.core
import jax.extend.core
import jax.interpreters.ad
import jax.interpreters.batching
import jax.interpreters.mlir
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.core
import purejit.numpy as jnp
from purejit import ir
from purejit.extend import ad, batching, core, mlir

X = np.array([0.3, -1.2, 0.5, 2.0], np.float32)


def assert_tree_close(want, got):
    w, g = jax.tree_util.tree_leaves(want), jax.tree_util.tree_leaves(got)
    assert len(w) == len(g)
    for a, b in zip(w, g):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=2e-6, atol=2e-6)


def _build(lib, core_, ad_, batching_, mlir_, xnp, ShapedArray):
    """The primitives, written once against a library's extension modules."""
    # unvmap_any: any() over the whole batch, as Equinox's (an unbatched result under vmap)
    unvmap_any_p = core_.Primitive("unvmap_any")
    unvmap_any_p.def_impl(lambda x: xnp.any(x))
    unvmap_any_p.def_abstract_eval(lambda x: ShapedArray((), np.dtype(bool)))
    batching_.primitive_batchers[unvmap_any_p] = lambda xs, dims: (
        unvmap_any_p.bind(xs[0]),
        None,  # not mapped
    )
    mlir_.register_lowering(unvmap_any_p, mlir_.lower_fun(lambda x: xnp.any(x), False))

    # scale: x -> k * x, linear; its JVP applies it to the tangent, its transpose to the
    # cotangent, so reverse mode transposes the primitive itself
    scale_p = core_.Primitive("scale")

    def scale_impl(x, *, k):
        return x * k

    scale_p.def_impl(scale_impl)
    scale_p.def_abstract_eval(lambda x, *, k: ShapedArray(x.shape, x.dtype))

    def scale_jvp(primals, tangents, *, k):
        (x,), (t,) = primals, tangents
        out = scale_p.bind(x, k=k)
        return out, t if type(t) is ad_.Zero else scale_p.bind(t, k=k)

    def scale_t(ct, x, *, k):
        assert ad_.is_undefined_primal(x)
        return [None if type(ct) is ad_.Zero else scale_p.bind(ct, k=k)]

    def scale_batch(xs, dims, *, k):
        return scale_p.bind(xs[0], k=k), dims[0]

    ad_.primitive_jvps[scale_p] = scale_jvp
    ad_.primitive_transposes[scale_p] = scale_t
    batching_.primitive_batchers[scale_p] = scale_batch
    mlir_.register_lowering(scale_p, mlir_.lower_fun(scale_impl, multiple_results=False))

    # sincos: multiple results, a JVP written with array ops
    sincos_p = core_.Primitive("sincos")
    sincos_p.multiple_results = True

    def sincos_impl(x):
        return [xnp.sin(x), xnp.cos(x)]

    sincos_p.def_impl(sincos_impl)
    sincos_p.def_abstract_eval(lambda x: [ShapedArray(x.shape, x.dtype)] * 2)

    def sincos_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        s, c = sincos_p.bind(x)
        return [s, c], [c * t, -s * t]

    def sincos_batch(xs, dims):
        return sincos_p.bind(xs[0]), [dims[0], dims[0]]

    ad_.primitive_jvps[sincos_p] = sincos_jvp
    batching_.primitive_batchers[sincos_p] = sincos_batch
    mlir_.register_lowering(sincos_p, mlir_.lower_fun(sincos_impl, multiple_results=True))

    def f(x):
        s, c = sincos_p.bind(scale_p.bind(x, k=3.0))
        return xnp.sum(s * c + scale_p.bind(c, k=0.5))

    return types.SimpleNamespace(
        unvmap_any=lambda x: unvmap_any_p.bind(x),
        scale=lambda x, k: scale_p.bind(x, k=k),
        sincos=lambda x: sincos_p.bind(x),
        f=f,
        prims=(unvmap_any_p, scale_p, sincos_p),
    )


P = _build(purejit, core, ad, batching, mlir, jnp, purejit.core.ShapedArray)
J = _build(
    jax,
    jax.extend.core,
    jax.interpreters.ad,
    jax.interpreters.batching,
    jax.interpreters.mlir,
    jjnp,
    jax.core.ShapedArray,
)


def _pair(build_fn):
    return build_fn(purejit, P, jnp), build_fn(jax, J, jjnp)


@pytest.mark.parametrize(
    "name",
    ["eager", "jit", "grad", "jit_grad", "vmap_grad", "grad_vmap", "scan", "cond", "remat"],
)
def test_primitives_match_jax(name):
    def build(lib, ns, xnp):
        f = ns.f
        if name == "eager":
            return f
        if name == "jit":
            return lib.jit(f)
        if name == "grad":
            return lib.grad(f)
        if name == "jit_grad":
            return lib.jit(lib.grad(f))
        if name == "vmap_grad":
            return lambda x: lib.vmap(lib.grad(f))(xnp.stack([x, 2 * x]))
        if name == "grad_vmap":
            return lib.grad(lambda x: lib.vmap(f)(xnp.stack([x, -x])).sum())
        if name == "scan":

            def body(c, x):
                y = ns.scale(ns.sincos(c)[0], 1.5) + x
                return y, ns.sincos(y)[1]

            return lib.jit(lib.grad(lambda x: lib.lax.scan(body, x, xnp.stack([x, x]))[1].sum()))
        if name == "cond":

            def g(x):
                return lib.lax.cond(
                    x.sum() > 0, lambda v: ns.scale(v, 2.0), lambda v: ns.sincos(v)[0], x
                )

            return lib.jit(lib.grad(lambda x: g(x).sum() + g(-x).sum()))
        if name == "remat":
            return lib.jit(lib.grad(lib.checkpoint(f)))
        raise AssertionError(name)

    fp, fj = _pair(build)
    assert_tree_close(fj(X), fp(X))


def test_unvmap_any_ignores_the_batch_as_in_jax():
    xs = np.array([[False, False], [False, True]])
    for lib, ns in ((purejit, P), (jax, J)):
        # one answer for all lanes (lane 0 alone has none True), broadcast over the batch
        got = lib.vmap(ns.unvmap_any)(xs)
        np.testing.assert_array_equal(np.asarray(got), [True, True])
        inside = lib.jit(lib.vmap(lambda x: ns.unvmap_any(x) & x[0]))(xs)
        np.testing.assert_array_equal(np.asarray(inside), [False, False])
    # a float input it does not differentiate: grad flows around it
    g = purejit.grad(lambda x: jnp.where(P.unvmap_any(x > 1.0), x * x, x).sum())(X)
    gj = jax.grad(lambda x: jjnp.where(J.unvmap_any(x > 1.0), x * x, x).sum())(X)
    assert_tree_close(gj, g)


def test_the_op_in_ir_interpreter_text_and_passes():
    fn = purejit.jit(P.f).lower(X).traced
    text = ir.print_function(fn)
    assert 'user_primitive(%0) {primitive="scale#' in text
    assert ir.print_function(ir.parse(text)) == text  # prints, parses back
    ir.verify(fn)
    # the interpreter runs each primitive's impl: the NumPy oracle agrees with compiled code
    (want,) = ir.interpret(fn, X)
    assert_tree_close(np.asarray(purejit.jit(P.f)(X)), want)

    # pure by default: an unused use is removed, two identical uses are merged
    def two(x):
        a = P.scale(x, 3.0)
        b = P.scale(x, 3.0)
        P.scale(x, 7.0)  # unused
        return a + b

    lowered = purejit.jit(two).lower(X)
    ops = [op.name for op in lowered.emitted.walk() if op.name.startswith("user_primitive")]
    assert len([o for o in lowered.traced.ops if o.name == "user_primitive"]) == 3
    assert ops.count("user_primitive") == 1, ir.print_function(lowered.emitted)
    # on constants it is not folded with its impl: the lowering computes it, as on arguments
    const = purejit.jit(lambda: P.scale(np.ones(3, np.float32), 2.0)).lower()
    assert any(op.name == "user_primitive" for op in const.emitted.walk())


def test_effectful_primitive_is_kept():
    log_p = core.Primitive("log_effect")
    log_p.def_impl(lambda x: x)
    log_p.def_effectful_abstract_eval(lambda x: (core.ShapedArray(x.shape, x.dtype), {"io"}))
    mlir.register_lowering(log_p, mlir.lower_fun(lambda x: x + 0, multiple_results=False))

    def f(x):
        log_p.bind(x)  # unused, but it has an effect
        return x * 2

    lowered = purejit.jit(f).lower(X)
    names = [op.name for op in lowered.emitted.walk()]
    assert "user_primitive_effect" in names
    assert_tree_close(X * 2, purejit.jit(f)(X))


def test_missing_rules_name_the_primitive():
    p = core.Primitive("bare")
    with pytest.raises(NotImplementedError, match="Evaluation rule for 'bare'"):
        p.bind(X)
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match=r"'bare#\d+': the primitive has no lowering"):
        purejit.jit(lambda x: p.bind(x))(X)
    mlir.register_lowering(p, mlir.lower_fun(lambda x: x * 1.0, multiple_results=False))
    assert_tree_close(X, purejit.jit(lambda x: p.bind(x))(X))
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'bare'"):
        purejit.grad(lambda x: p.bind(x).sum())(X)
    with pytest.raises(NotImplementedError, match="Batching rule for 'bare'"):
        purejit.vmap(lambda x: p.bind(x))(X)
    bad = core.Primitive("bad_lowering")
    bad.def_abstract_eval(lambda x: core.ShapedArray((), x.dtype))
    mlir.register_lowering(bad, mlir.lower_fun(lambda x: x, multiple_results=False))
    with pytest.raises(TypeError, match="'bad_lowering': its lowering returns"):
        purejit.jit(lambda x: bad.bind(x))(X)


def test_defjvp_per_operand_rules():
    p = core.Primitive("mulxy")
    p.def_impl(lambda x, y: x * y)
    p.def_abstract_eval(lambda x, y: core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(p, mlir.lower_fun(lambda x, y: x * y, multiple_results=False))
    ad.defjvp(p, lambda t, x, y: t * y, lambda t, x, y: x * t)
    g = purejit.jit(purejit.grad(lambda x, y: p.bind(x, y).sum(), argnums=(0, 1)))(X, X + 1)
    assert_tree_close((X + 1, X), g)


def test_checkpoint_policy_sees_the_primitive():
    seen = set()

    def policy(prim, *_, **params):
        seen.add(getattr(prim, "name", None))
        return prim is P.prims[2]  # save sincos' results only

    g = purejit.jit(purejit.grad(purejit.checkpoint(P.f, policy=policy)))
    gj = jax.jit(jax.grad(jax.checkpoint(J.f, policy=lambda prim, *_, **__: prim is J.prims[2])))
    assert_tree_close(gj(X), g(X))
    assert {"sincos", "scale"} <= seen
    saved = purejit.ad_checkpoint.saved_residuals(purejit.checkpoint(P.f, policy=policy), X)
    assert sum(src.startswith("output of user_primitive") for _, src in saved) == 2, saved
