"""purejit.lax control flow against jax.lax: each test writes one function against a `lax`
and `jnp` module pair, runs it through purejit.jit (and eagerly) and through jax.jit, and
compares structure, dtypes and values."""

from __future__ import annotations

import os
import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pjnp
from purejit import lax as plax
from purejit.tree_util import tree_flatten

HERE = os.path.basename(__file__)
PJ = (plax, pjnp)
JX = (jax.lax, jjnp)


def assert_same(got, want, rtol=1e-5):
    """Same tree structure, dtypes and values (as nested Python containers)."""
    g_leaves, g_tree = tree_flatten(got)
    w_leaves, w_def = jax.tree_util.tree_flatten(want)
    assert len(g_leaves) == len(w_leaves), (g_tree, w_def)
    assert repr(g_tree).replace(" ", "") == _jax_tree_repr(want), (g_tree, w_def)
    for g, w in zip(g_leaves, w_leaves):
        assert g.weak_type == w.weak_type, ("weak type", g, w)
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6)


def _jax_tree_repr(tree) -> str:
    """The purejit.tree_util repr of a pytree's structure, computed from the JAX side."""
    if isinstance(tree, tuple) and not hasattr(tree, "_fields"):
        inner = ",".join(_jax_tree_repr(t) for t in tree)
        return f"({inner}{',' if len(tree) == 1 else ''})"
    if isinstance(tree, list):
        return "[" + ",".join(_jax_tree_repr(t) for t in tree) + "]"
    if isinstance(tree, dict):
        return "{" + ",".join(f"{k!r}:{_jax_tree_repr(tree[k])}" for k in sorted(tree)) + "}"
    if tree is None:
        return "None"
    return "*"


def check(make, *cases, eager=(0,), rtol=1e-5):
    """make(lax, jnp) -> f; purejit.jit(f) and jax.jit(f) agree on every tuple of arguments
    in `cases`, and so does f run eagerly on the cases numbered in `eager`."""
    jax_f, jit_f, eager_f = jax.jit(make(*JX)), purejit.jit(make(*PJ)), make(*PJ)
    for k, args in enumerate(cases):
        want = jax_f(*args)
        assert_same(jit_f(*args), want, rtol)
        if k in eager:
            out = eager_f(*args)
            assert all(isinstance(x, purejit.Array) for x in tree_flatten(out)[0])
            assert_same(out, want, rtol)


def f32(*xs):
    return np.array(xs, np.float32)


# ---- cond and switch -----------------------------------------------------------------------


def test_cond_pytrees_and_closures():
    def make(lax, jnp):
        def f(x):
            w = x * 3.0  # a traced value the branches close over

            def yes(a, d):
                return {"s": a.sum() + w[0], "v": (a * d["k"], jnp.zeros(2, jnp.int32))}

            def no(a, d):
                return {"s": w.sum(), "v": (a - d["k"], jnp.ones(2, jnp.int32))}

            return lax.cond(x.sum() > 0, yes, no, x, {"k": x[1]})

        return f

    check(make, (f32(1, 2, 3),), (f32(-1, -2, 0),), eager=(0, 1))


def test_cond_numeric_and_python_predicates():
    def make(lax, jnp):
        return lambda p, x: lax.cond(p, lambda v: v + 1, lambda v: v - 1, x)

    preds = [np.int32(0), np.int32(3), np.uint8(1), np.bool_(True)]
    check(make, *[(p, f32(1, 2)) for p in preds], eager=())
    # JAX also accepts float predicates; purejit rejects them with a clear error
    with pytest.raises(TypeError, match=r"cond: pred must be a boolean \(or integer\) scalar"):
        purejit.jit(make(plax, None))(np.float32(2.5), f32(1, 2))
    for p in (0, True):  # Python scalars, eagerly
        assert_same(
            plax.cond(p, lambda v: v * 2, lambda v: v, f32(3)),
            jax.lax.cond(p, lambda v: v * 2, lambda v: v, f32(3)),
        )


def test_cond_operand_keyword_and_no_operands():
    def make(lax, jnp):
        def f(x):
            a = lax.cond(x[0] > 0, lambda: x * 2, lambda: x * 3)
            b = lax.cond(x[0] < 0, lambda o: o + 1, lambda o: o, operand=x)
            return a, b

        return f

    check(make, (f32(1, 2),), (f32(-1, 2),))


def test_switch_clamps_index():
    def make(lax, jnp):
        branches = [lambda x: x + 1, lambda x: x * 10, lambda x: -x]
        return lambda i, x: lax.switch(i, branches, x)

    check(make, *[(np.int32(i), f32(1, 2)) for i in (-3, 0, 1, 2, 7)], eager=(0, 3))


def test_switch_single_branch_and_uint_index():
    def make(lax, jnp):
        def f(i, x):
            return lax.switch(i, [lambda x: x * 2], x), lax.switch(i, [jnp.sin, jnp.cos], x)

        return f

    check(make, (np.uint8(1), f32(0.5)), (np.uint8(0), f32(0.5)), eager=())


# ---- while_loop and fori_loop ------------------------------------------------------------------


def test_while_loop_data_dependent_trip_count():
    def make(lax, jnp):
        def collatz_steps(n):
            def body(c):
                k, steps = c
                k = jnp.where(k % 2 == 0, k // 2, 3 * k + 1)
                return k, steps + 1

            return lax.while_loop(lambda c: c[0] != 1, body, (n, 0))

        return collatz_steps

    check(make, *[(np.int32(n),) for n in (27, 1, 6)])


def test_while_loop_pytree_carry_and_closure():
    def make(lax, jnp):
        def f(x, limit):
            scale = x.sum()  # closed over by both cond and body

            def cond(c):
                return c["i"] < limit

            def body(c):
                return {"i": c["i"] + 1, "acc": [c["acc"][0] * 0.5 + scale, c["acc"][1]]}

            return lax.while_loop(cond, body, {"i": 0, "acc": [x, jnp.int32(4)]})

        return f

    check(make, (f32(1, 2, 3), np.int32(5)), (f32(1, 2, 3), np.int32(0)))


def test_while_weak_carry_is_promoted_like_jax():
    def make(lax, jnp):
        return lambda x: lax.while_loop(lambda c: c < 10, lambda c: c + x, 0)

    check(make, (np.float32(1.5),))  # init 0 (weak int) becomes f32, as in JAX


def test_fori_loop_static_bounds():
    def make(lax, jnp):
        def body(i, c):
            return c * 1.5 + i

        def f(x):
            return [lax.fori_loop(lo, hi, body, x) for lo, hi in [(0, 10), (3, 7), (5, 2)]]

        return f

    check(make, (f32(1, 2),))


def test_fori_loop_traced_bounds_and_unroll():
    def make(lax, jnp):
        def f(n, x):
            a = lax.fori_loop(0, n, lambda i, c: c + i, x)
            b = lax.fori_loop(2, 11, lambda i, c: c * 2 - i, x, unroll=4)
            return a, b

        return f

    check(make, (np.int32(6), f32(1, 2)), (np.int32(-1), f32(1, 2)), eager=())
    with pytest.raises(ValueError, match="unroll"):
        purejit.jit(lambda n: plax.fori_loop(0, n, lambda i, c: c, 1.0, unroll=2))(3)


def test_fori_loop_1000_steps_is_one_while():
    def f(x):
        return plax.fori_loop(0, 1000, lambda i, c: jnp_tanh_plus(c, i), x)

    def jnp_tanh_plus(c, i):
        return pjnp.tanh(c) + i.astype(pjnp.float32) * 1e-3

    text = purejit.jit(f).lower(f32(0.5, 1)).as_text()
    assert text.count('"stablehlo.while"') == 1
    assert text.count('"stablehlo.tanh"') == 1  # the body once, not 1000 times
    want = jax.jit(
        lambda x: jax.lax.fori_loop(
            0, 1000, lambda i, c: jjnp.tanh(c) + i.astype(jjnp.float32) * 1e-3, x
        )
    )(f32(0.5, 1))
    assert_same(purejit.jit(f)(f32(0.5, 1)), want, rtol=1e-4)


# ---- scan and map ------------------------------------------------------------------------------


@pytest.mark.parametrize("reverse,unroll", [(False, 1), (True, 3), (False, True)])
def test_scan_pytrees_reverse_unroll(reverse, unroll):
    def make(lax, jnp):
        def f(h0, xs, w):
            def step(carry, x):
                h, n = carry
                h = jnp.tanh(h @ w + x["a"]) * x["b"]
                return (h, n + 1), {"h": h, "n": n, "s": h.sum()}

            return lax.scan(step, (h0, 0), xs, reverse=reverse, unroll=unroll)

        return f

    rng = np.random.default_rng(0)
    h0 = rng.normal(size=3).astype(np.float32)
    xs = {"a": rng.normal(size=(5, 3)).astype(np.float32), "b": f32(*range(1, 6))}
    w = rng.normal(size=(3, 3)).astype(np.float32)
    check(make, (h0, xs, w), eager=(0,) if unroll == 1 else (), rtol=1e-4)


def test_scan_without_xs_and_zero_length():
    def make(lax, jnp):
        def f(x):
            c, ys = lax.scan(lambda c, _: (c * 2, c), x, None, length=4)
            c0, ys0 = lax.scan(lambda c, x: (c + x, c * x), x, jnp.zeros((0, 2), jnp.float32))
            c1, ys1 = lax.scan(lambda c, _: (c + 1, (c, c > 0)), x, None, length=0)
            return c, ys, c0, ys0, c1, ys1

        return f

    check(make, (f32(1, -2),))


def test_scan_ys_none_and_empty_carry():
    def make(lax, jnp):
        def f(xs):
            c, none = lax.scan(lambda c, x: (c + x, None), jnp.float32(0), xs)
            _, ys = lax.scan(lambda c, x: (c, x * 2), (), xs)
            return c, none, ys

        return f

    check(make, (f32(1, 2, 3),), eager=())


def test_map():
    def make(lax, jnp):
        return lambda xs, ys: lax.map(lambda p: (p[0] @ p[1], p[0].sum()), (xs, ys))

    rng = np.random.default_rng(1)
    xs, ys = rng.normal(size=(5, 2, 3)), rng.normal(size=(5, 3, 4))
    check(make, (xs.astype(np.float32), ys.astype(np.float32)), eager=(), rtol=1e-4)


def test_nested_cond_in_scan_in_while_with_closures():
    def make(lax, jnp):
        def f(x, xs):
            outer = x * 2  # read three levels down

            def while_body(c):
                i, acc = c

                def scan_step(carry, xi):
                    def yes(v):
                        return v + outer.sum() + xi

                    def no(v):
                        return lax.fori_loop(0, 3, lambda j, u: u * 0.5 + j, v) - i

                    carry = lax.cond(xi > carry.sum(), yes, no, carry)
                    return carry, carry[0]

                acc, ys = lax.scan(scan_step, acc, xs)
                return i + 1, acc + ys.mean()

            return lax.while_loop(lambda c: c[0] < 3, while_body, (0, x))

        return f

    check(make, (f32(0.1, 0.2), f32(0.5, -1, 2, 0.3)), rtol=1e-4)


# ---- purejit.disable_jit: Python control flow on concrete values, as in JAX ---------------


def test_disable_jit_runs_python_control_flow():
    calls = []

    def body(c):
        calls.append(type(c).__name__)
        return c + 1

    with purejit.disable_jit():
        out = plax.while_loop(lambda c: c < 3, body, 0)
        c, ys = plax.scan(lambda c, x: (c + x, c), 0.0, f32(1, 2))
        s = plax.switch(5, [lambda: 1, lambda: 2])
    assert int(out) == 3 and calls == ["Array"] * 3  # the body ran on concrete values
    assert float(c) == 3.0 and np.asarray(ys).tolist() == [0.0, 1.0]
    assert int(s) == 2


# ---- errors: both sides shown, the user's line named -----------------------------------------


def _line(fn, offset: int) -> str:
    return f"{HERE}:{fn.__code__.co_firstlineno + offset}"


def test_cond_branch_tree_mismatch():
    def f(x):
        return plax.cond(x[0] > 0, lambda: (x, x), lambda: [x, x])

    with pytest.raises(TypeError) as e:
        purejit.jit(f)(f32(1))
    msg = str(e.value)
    assert _line(f, 1) in msg
    assert "tree structure" in msg and "(*, *)" in msg and "[*, *]" in msg


def test_cond_branch_dtype_and_shape_mismatch_side_by_side():
    def f(x):
        return plax.cond(x[0] > 0, lambda: {"a": x, "b": x}, lambda: {"a": x[:1], "b": x > 0})

    with pytest.raises(TypeError) as e:
        purejit.jit(f)(f32(1, 2))
    msg = str(e.value)
    assert _line(f, 1) in msg
    rows = {ln.split()[0]: ln for ln in msg.splitlines() if ln.startswith("  [")}
    assert re.search(r"\['a'\]\s+f32\[2\]\s+f32\[1\]\s+<-- differs", rows["['a']"])
    assert re.search(r"\['b'\]\s+f32\[2\]\s+pred\[2\]\s+<-- differs", rows["['b']"])
    assert "true_fun" in msg and "false_fun" in msg


def test_switch_branch_mismatch_names_branches():
    def f(i, x):
        return plax.switch(i, [lambda v: v, lambda v: v.astype(pjnp.int32)], x)

    with pytest.raises(TypeError, match=r"branch 0.*branch 1") as e:
        purejit.jit(f)(1, f32(1))
    assert _line(f, 1) in str(e.value)


def test_scan_carry_type_change():
    def f(xs):
        return plax.scan(lambda c, x: (c * x[None], x), pjnp.float32(0), xs)

    with pytest.raises(TypeError) as e:
        purejit.jit(f)(f32(1, 2))
    msg = str(e.value)
    assert _line(f, 1) in msg
    assert re.search(r"f32\[\]\s+f32\[1\]\s+<-- differs", msg)
    assert "carry input" in msg and "carry output" in msg


def test_while_carry_structure_change():
    def f(x):
        return plax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1], c[1]), (0, x))

    with pytest.raises(TypeError) as e:
        purejit.jit(f)(f32(1))
    assert _line(f, 1) in str(e.value) and "(*, *, *)" in str(e.value)


@pytest.mark.parametrize(
    "pred,needle", [(np.ones(2, bool), "must be a scalar"), (np.complex64(1), "boolean")]
)
def test_bad_predicates(pred, needle):
    def f(p, x):
        return plax.cond(p, lambda: x, lambda: -x)

    with pytest.raises(TypeError, match=needle) as e:
        purejit.jit(f)(pred, f32(1))
    assert _line(f, 1) in str(e.value)


def test_while_cond_must_return_bool_scalar():
    def f(x):
        return plax.while_loop(lambda c: c, lambda c: c - 1, x)

    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar") as e:
        purejit.jit(f)(np.int32(3))
    assert _line(f, 1) in str(e.value)


def test_scan_body_must_return_a_pair_and_lengths_must_agree():
    with pytest.raises(TypeError, match="must return a pair"):
        purejit.jit(lambda xs: plax.scan(lambda c, x: c + x, 0.0, xs))(f32(1, 2))
    with pytest.raises(ValueError, match="length"):
        plax.scan(lambda c, x: (c, x), 0.0, f32(1, 2), length=3)
    with pytest.raises(ValueError, match="no values to scan"):
        plax.scan(lambda c, x: (c, x), 0.0, None)
