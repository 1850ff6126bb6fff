"""What lineax, optimistix and diffrax needed from purejit (test_sci_dropin.py runs the
libraries), each checked against JAX directly: operators that defer to an operand they do
not know (Equinox's `ω`), `eval_shape` passing `ShapeDtypeStruct` outputs through,
`PyTreeDef.compose`, `make_jaxpr` of a function closing over an outer tracer (its consts),
a transformation's own tracers (`ad.JVPTracer`, `tracer._trace.main`) and the option
`jax_numpy_dtype_promotion`."""

from __future__ import annotations

import jax
import jax.extend.core
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.extend import ad as pad
from purejit.extend.jaxpr import jaxpr_as_fun
from purejit.tracing import find_top_trace


class _Reflected:
    """Answers `x ** self` and `x + self` itself, as Equinox's `ω` does."""

    def __rpow__(self, other):
        return ("rpow", np.asarray(other).tolist())

    def __radd__(self, other):
        return ("radd", np.asarray(other).tolist())


@pytest.mark.parametrize("np_mod", [jnp, jjnp], ids=["purejit", "jax"])
def test_operators_defer_to_an_operand_they_do_not_know(np_mod):
    x = np_mod.asarray([1.0, 2.0])
    assert x ** _Reflected() == ("rpow", [1.0, 2.0])
    assert x + _Reflected() == ("radd", [1.0, 2.0])
    with pytest.raises(TypeError):
        x + object()  # neither side knows the other


def test_operators_still_take_arrays_scalars_and_reject_lists_as_jax():
    x = jnp.asarray([1.0, 2.0])
    np.testing.assert_array_equal(x + np.float32(1), [2.0, 3.0])
    np.testing.assert_array_equal(x * np.array([2.0, 3.0]), [2.0, 6.0])
    np.testing.assert_array_equal(purejit.jit(lambda a: a**2.0 + a)(x), [2.0, 6.0])
    with pytest.raises(TypeError):
        x + [1.0, 2.0]
    with pytest.raises(TypeError):
        jjnp.asarray([1.0, 2.0]) + [1.0, 2.0]


def test_eval_shape_passes_shape_dtype_structs_through_as_jax():
    s = purejit.ShapeDtypeStruct((3,), np.float32)
    got = purejit.eval_shape(lambda: (s, 1.0, jnp.zeros(2, np.int32)))
    js = jax.ShapeDtypeStruct((3,), np.float32)
    want = jax.eval_shape(lambda: (js, 1.0, jjnp.zeros(2, np.int32)))
    assert got[0] is s
    for g, w in zip(got, want):
        assert (g.shape, g.dtype, g.weak_type) == (w.shape, w.dtype, w.weak_type)


def test_pytreedef_compose_as_jax():
    outer, inner = ({"a": 1, "b": (2, 3)}, [4, None, 5])
    got = purejit.tree_util.tree_structure(outer).compose(purejit.tree_util.tree_structure(inner))
    want = jax.tree_util.tree_structure(outer).compose(jax.tree_util.tree_structure(inner))
    assert got.num_leaves == want.num_leaves == 6
    assert got.num_nodes == want.num_nodes
    leaves = list(range(6))
    assert got.unflatten(leaves) == want.unflatten(leaves)


def test_make_jaxpr_of_a_closure_over_a_tracer_has_it_as_a_const():
    def outer(pj, y):
        closed = pj.make_jaxpr(lambda x: x * y + 1.0)(2.0)
        assert len(closed.jaxpr.constvars) == len(closed.consts) == 1
        assert len(closed.jaxpr.invars) == 1
        if pj is purejit:
            return jaxpr_as_fun(closed)(3.0)[0]
        return jax.extend.core.jaxpr_as_fun(closed)(3.0)[0]

    got = purejit.jit(lambda y: outer(purejit, y))(jnp.asarray(4.0))
    want = jax.jit(lambda y: outer(jax, y))(jjnp.asarray(4.0))
    assert float(got) == float(want) == 13.0


def test_a_jvp_tells_its_own_tracers():
    seen = {}

    def f(x):
        main = find_top_trace([x]).main
        y = x * 2.0
        seen["own"] = isinstance(y, pad.JVPTracer) and y._trace.main is main
        z = seen["outer_y"]  # a tracer of the enclosing jit, not of this jvp
        seen["outer"] = isinstance(z, pad.JVPTracer) and z._trace.main is main
        return y

    def g(z):
        seen["outer_y"] = z + 1.0
        return purejit.jvp(f, (jnp.asarray(1.0),), (jnp.asarray(1.0),))[1] + seen["outer_y"]

    assert float(purejit.jit(g)(jnp.asarray(0.0))) == 3.0
    assert (seen["own"], seen["outer"]) == (True, False)
    assert not isinstance(jnp.asarray(1.0), pad.JVPTracer)


def test_numpy_dtype_promotion_option_reads_standard_and_refuses_strict():
    assert purejit.config.jax_numpy_dtype_promotion == "standard"
    assert jax.config.jax_numpy_dtype_promotion == "standard"
    with pytest.raises(NotImplementedError, match="standard"):
        purejit.config.update("jax_numpy_dtype_promotion", "strict")
    assert purejit.config.read("numpy_dtype_promotion") == "standard"
    purejit.config.update("jax_numpy_dtype_promotion", "standard")


# what numpyro needed: jax.scipy.fft, jax.example_libraries.stax, the 5-argument lax.cond,
# trace_state_clean, and modules imported at load time whose use purejit refuses


@pytest.mark.parametrize("norm", [None, "ortho"])
@pytest.mark.parametrize("shape,axis,n", [((7,), -1, None), ((3, 8), 0, 5), ((4, 5), 1, 9)])
def test_dct_and_idct_match_jax(shape, axis, n, norm):
    import jax.scipy.fft as jfft

    import purejit.scipy.fft as pfft

    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    for name in ("dct", "idct"):
        got = np.asarray(getattr(pfft, name)(x, n=n, axis=axis, norm=norm))
        want = np.asarray(getattr(jfft, name)(x, n=n, axis=axis, norm=norm))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6 * np.abs(want).max())
    y = pfft.idct(pfft.dct(x, axis=axis, norm=norm), axis=axis, norm=norm)
    np.testing.assert_allclose(np.asarray(y), x, atol=2e-6)
    both = pfft.idctn(pfft.dctn(x, norm=norm), norm=norm)
    np.testing.assert_allclose(np.asarray(both), x, atol=3e-6)
    with pytest.raises(NotImplementedError, match="type=2"):
        pfft.dct(x, type=3)


def test_stax_serial_parallel_fanout_match_jax():
    from jax.example_libraries import stax as jstax

    from purejit.example_libraries import stax as pstax

    def net(s):
        return s.serial(
            s.Dense(6), s.Elu, s.FanOut(2), s.parallel(s.Dense(3), s.Identity), s.FanInConcat(),
            s.Dense(4), s.FanOut(2), s.parallel(s.Relu, s.Tanh), s.FanInSum,
        )  # fmt: skip

    x = np.random.default_rng(1).normal(size=(5, 2)).astype(np.float32)
    p_init, p_apply = net(pstax)
    j_init, j_apply = net(jstax)
    p_shape, p_params = p_init(purejit.random.PRNGKey(0), (5, 2))
    j_shape, j_params = j_init(jax.random.PRNGKey(0), (5, 2))
    assert tuple(p_shape) == tuple(j_shape) == (5, 4)
    p_leaves, j_leaves = jax.tree.leaves(p_params), jax.tree.leaves(j_params)
    assert [np.shape(a) for a in p_leaves] == [np.shape(a) for a in j_leaves]
    for a, b in zip(p_leaves, j_leaves):  # the same initializers and key splits
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    got = np.asarray(purejit.jit(p_apply)(p_params, x))
    want = np.asarray(j_apply(j_params, x))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_cond_with_per_branch_operands_as_jax():
    def f(lax, p):
        return lax.cond(p, 2.0, lambda a: a * 3.0, 5.0, lambda b: b - 1.0)

    for p in (True, False):
        got = purejit.jit(lambda p: f(purejit.lax, p))(p)
        want = jax.jit(lambda p: f(jax.lax, p))(p)
        assert float(got) == float(want) == (6.0 if p else 4.0)
    with pytest.raises(TypeError, match="callable"):
        purejit.lax.cond(True, 1.0, 2.0)


def test_trace_state_clean_only_outside_transformations():
    import jax._src.core

    from purejit.core import trace_state_clean

    assert trace_state_clean() and jax._src.core.trace_state_clean()
    seen = []
    purejit.jit(lambda x: seen.append(trace_state_clean()) or x)(1.0)
    purejit.vmap(lambda x: seen.append(trace_state_clean()) or x)(jnp.ones(2))
    assert seen == [False, False]


def test_refused_jax_modules_load_and_name_what_is_missing():
    from purejit.compat import _primitives, _sparse

    with pytest.raises(NotImplementedError, match="sparse"):
        _sparse.BCOO.fromdense(np.eye(2))
    assert not isinstance(jnp.eye(2), _sparse.BCOO)
    with pytest.raises(NotImplementedError, match="closed_call"):
        _primitives.closed_call_p.bind()
    # a nested jit is jit_p's equation, its callee in params["jaxpr"] as in JAX
    closed = purejit.make_jaxpr(lambda x: purejit.jit(lambda y: y * 2.0)(x) + 1.0)(1.0)
    (call,) = [e for e in closed.eqns if e.primitive is _primitives.jit_p]
    assert len(call.params["jaxpr"].jaxpr.eqns) >= 1
