"""`make_jaxpr` read through JAX's jaxpr API (`purejit.extend.jaxpr`): the walks libraries
do over `eqns`, `invars`, `outvars`, `constvars`, `consts`, `Literal`, checked against what
`jax.make_jaxpr` answers for the same function, and `eval_jaxpr` / `jaxpr_as_fun` checked
against the function itself and JAX under jit, grad and vmap."""

from __future__ import annotations

import jax
import jax.extend.core
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.core
import purejit.numpy as jnp
from purejit.extend import core as pcore
from purejit.extend import jaxpr as pjaxpr

X = np.array([0.3, -1.2, 0.5], np.float32)
C = np.array([1.0, 2.0, 3.0], np.float32)


def _f(np_, lax):
    def f(x, y):
        z = np_.sin(x) * 2.0 + np_.asarray(C) + y
        w = lax.fori_loop(0, 3, lambda i, a: a * 0.5 + 1.0, x)
        return {"z": z, "w": w}

    return f


def _walk(closed, seen):
    """Every variable and literal a library's walk meets (recursing into sub-jaxprs)."""
    jaxpr = closed.jaxpr
    for v in [*jaxpr.constvars, *jaxpr.invars]:
        seen["vars"].add(v)
    for eqn in jaxpr.eqns:
        for v in eqn.invars:
            if isinstance(v, (pjaxpr.Literal, jax.extend.core.Literal)):
                seen["literals"].append(v.val)
            else:
                assert v in seen["vars"], f"{v} read before it is defined"
        seen["vars"].update(eqn.outvars)
        assert isinstance(eqn.primitive.name, str) and isinstance(eqn.params, dict)
        for p in eqn.params.values():
            for sub in p if isinstance(p, tuple) else (p,):
                if isinstance(sub, (pjaxpr.ClosedJaxpr, jax.extend.core.ClosedJaxpr)):
                    _walk(sub, {"vars": set(), "literals": seen["literals"]})
    for v in jaxpr.outvars:
        assert isinstance(v, (pjaxpr.Literal, jax.extend.core.Literal)) or v in seen["vars"]
    return seen


def test_make_jaxpr_reads_like_jax():
    want = jax.make_jaxpr(_f(jjnp, jax.lax))(X, 1.0)
    got = purejit.make_jaxpr(_f(jnp, purejit.lax))(X, 1.0)
    assert isinstance(got, purejit.core.ClosedJaxpr) and isinstance(got.jaxpr, pcore.Jaxpr)
    assert got.in_avals == [purejit.core.ShapedArray(a.shape, a.dtype, a.weak_type)
                            for a in want.in_avals]  # fmt: skip
    assert [(a.shape, a.dtype) for a in got.out_avals] == [
        (a.shape, a.dtype) for a in want.out_avals
    ]
    assert [v.aval for v in got.jaxpr.invars] == got.in_avals
    assert [v.aval for v in got.jaxpr.outvars] == got.out_avals
    # the captured array is a constant variable with its value, as in JAX
    assert len(got.consts) == len(got.jaxpr.constvars) == 1
    np.testing.assert_array_equal(got.consts[0], C)
    assert got.jaxpr.constvars[0].aval.shape == (3,)
    # every variable is defined before it is read; the scalars are literals
    seen = _walk(got, {"vars": set(), "literals": []})
    assert 2.0 in seen["literals"] and 0.5 in seen["literals"] and 0 in seen["literals"]
    names = [e.primitive.name for e in got.eqns]
    assert "sine" in names and "scan" in names  # the IR's op names, not JAX's
    (loop,) = [e for e in got.eqns if e.primitive.name == "scan"]
    assert isinstance(loop.params["jaxpr"], pjaxpr.ClosedJaxpr) and loop.params["length"] == 3
    assert loop.primitive is pjaxpr.get_primitive("scan")
    subs = list(pcore.subjaxprs(got.jaxpr))
    assert len(subs) == len(list(jax.extend.core.subjaxprs(want.jaxpr))) == 1
    assert str(got).startswith("func @f(")  # the IR text, as before
    assert got.out_tree.unflatten(got.out_avals)["z"].shape == (3,)


def test_while_and_cond_regions_are_named_like_jax():
    def f(x):
        x = purejit.lax.while_loop(lambda c: c.sum() < 10.0, lambda c: c + 1.0, x)
        return purejit.lax.cond(x[0] > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)

    closed = purejit.make_jaxpr(f)(X)
    (w,) = [e for e in closed.eqns if e.primitive.name == "while"]
    assert {"cond_jaxpr", "body_jaxpr"} <= set(w.params)
    assert w.params["cond_jaxpr"].out_avals[0].dtype == np.dtype(bool)
    (c,) = [e for e in closed.eqns if e.primitive.name == "case"]
    assert len(c.params["branches"]) == 2
    _walk(closed, {"vars": set(), "literals": []})
    run = purejit.core.jaxpr_as_fun(closed)
    np.testing.assert_allclose(np.asarray(run(X)[0]), np.asarray(f(X)), rtol=1e-6)
    # the region views evaluate too
    body = w.params["body_jaxpr"]
    np.testing.assert_allclose(np.asarray(purejit.core.jaxpr_as_fun(body)(X)[0]), X + 1.0)


@pytest.mark.parametrize("how", ["eager", "jit", "grad", "vmap"])
def test_eval_jaxpr_matches_the_function_and_jax(how):
    closed = purejit.make_jaxpr(_f(jnp, purejit.lax))(X, 1.0)
    jclosed = jax.make_jaxpr(_f(jjnp, jax.lax))(X, 1.0)

    def run(lib, core_, c):
        def g(x):
            z, w = core_.jaxpr_as_fun(c)(x, 1.0)  # outputs flattened in key order
            return (w * z).sum()

        if how == "eager":
            return g(X)
        if how == "jit":
            return lib.jit(g)(X)
        if how == "grad":
            return lib.grad(g)(X)
        return lib.vmap(lambda r: g(r * X))(np.array([1.0, -2.0], np.float32))

    want = run(jax, jax.extend.core, jclosed)
    got = run(purejit, pcore, closed)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-6, atol=1e-6)
    outs = purejit.core.eval_jaxpr(closed.jaxpr, closed.consts, X, 1.0)
    jouts = jax.core.eval_jaxpr(jclosed.jaxpr, jclosed.consts, X, 1.0)
    for a, b in zip(outs, jouts):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=1e-6)


def test_user_primitive_equations_carry_the_primitive():
    double_p = pcore.Primitive("double_for_jaxpr_test")
    double_p.def_impl(lambda x, *, k: x * k)
    double_p.def_abstract_eval(lambda x, *, k: x)
    purejit.extend.mlir.register_lowering(
        double_p, purejit.extend.mlir.lower_fun(lambda x, *, k: x * k, False)
    )
    closed = purejit.make_jaxpr(lambda x: double_p.bind(jnp.cos(x), k=2.0))(X)
    (eqn,) = [e for e in closed.eqns if e.primitive is double_p]
    assert eqn.params == {"k": 2.0} and eqn.effects == set()
    assert eqn.invars[0] is closed.eqns[0].outvars[0]
    got = purejit.jit(purejit.core.jaxpr_as_fun(closed))(X)[0]
    np.testing.assert_allclose(np.asarray(got), np.cos(X) * 2.0, rtol=1e-6)


def test_eval_jaxpr_checks_its_arity():
    closed = purejit.make_jaxpr(jnp.sin)(X)
    with pytest.raises(TypeError, match="takes 0 constants and 1 inputs, got 0 and 2"):
        purejit.core.eval_jaxpr(closed.jaxpr, [], X, X)


def test_builtin_primitive_objects_match_equations():
    @purejit.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda p, t: (jnp.sin(p[0]), 3.0 * t[0]))
    closed = purejit.make_jaxpr(lambda x: purejit.lax.stop_gradient(x) + f(x))(X)
    prims = [e.primitive for e in closed.eqns]
    assert purejit.lax.stop_gradient_p in prims
    assert purejit.custom_derivatives.custom_jvp_call_p in prims
    assert purejit.lax.stop_gradient_p.name == jax.lax.stop_gradient_p.name == "stop_gradient"
    # a library re-binding an equation from its view (as Equinox's jaxpr finalising does)
    (call,) = [e for e in closed.eqns if e.primitive.name == "custom_jvp_call"]
    out = call.primitive.bind(X, **call.params)
    np.testing.assert_allclose(np.asarray(out[0]), np.sin(X), rtol=1e-6)
    g = purejit.grad(lambda x: purejit.core.jaxpr_as_fun(closed)(x)[0].sum())(X)
    np.testing.assert_allclose(np.asarray(g), np.full_like(X, 3.0))


def test_dropin_names_of_the_jaxpr_api():
    import purejit.compat

    with purejit.compat.dropin() as pjax:
        import jax.core as vcore
        import jax.custom_derivatives as vcd
        import jax.extend.core as vext
        import jax.lax as vlax

        dispatch = __import__("jax._src.dispatch", fromlist=["*"])
        closed = pjax.make_jaxpr(lambda x: vlax.stop_gradient(x) * 2.0)(X)
    assert isinstance(closed, vext.ClosedJaxpr) and vext.ClosedJaxpr is pjaxpr.ClosedJaxpr
    assert vext.Jaxpr is pjaxpr.Jaxpr and vext.Var is pjaxpr.Var
    assert vext.Literal is pjaxpr.Literal and vext.JaxprEqn is pjaxpr.JaxprEqn
    assert vcore.eval_jaxpr is pjaxpr.eval_jaxpr and vext.jaxpr_as_fun is pjaxpr.jaxpr_as_fun
    assert closed.eqns[0].primitive is vlax.stop_gradient_p
    assert vcd.custom_jvp_call_p is pjaxpr.get_primitive("custom_jvp_call")
    # eager dispatch maps to purejit's runtime; what it lacks is an AttributeError
    assert dispatch.__name__ == "jax._src.dispatch"
    assert not hasattr(dispatch, "wait_for_tokens")


def test_include_frame_answers_like_jax(tmp_path):
    import sys

    from jax._src import traceback_util as jtb

    from purejit import traceback_util as ptb

    lib = tmp_path / "_a_library_file.py"
    lib.write_text("import sys\n\ndef frame():\n    return sys._getframe()\n")
    ns: dict = {}
    exec(compile(lib.read_text(), str(lib), "exec"), ns)
    for mod in (jtb, ptb):
        mod.register_exclusion(str(lib))
    here, there = sys._getframe(), ns["frame"]()
    assert ptb.include_frame(here) == jtb.include_frame(here) is True
    assert ptb.include_frame(there) == jtb.include_frame(there) is False
