"""`lax.scan`, `fori_loop` (static bounds) and `lax.map` build the IR op `scan`: the traced
program shows it, and the reference interpreter, the compiled program and `jax.lax.scan`
give the same numbers."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from purejit.ir import interpret, parse, print_function, verify

import purejit
import purejit.numpy as pjnp
from purejit import lax as plax
from purejit.passes.batch_axes import BucketError
from purejit.tree_util import tree_flatten

PJ = (plax, pjnp)
JX = (jax.lax, jjnp)
RNG = np.random.default_rng(0)


def _f32(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _agree(make, *args, rtol=1e-5):
    """The traced IR holds a scan; interpreter, purejit.jit and jax.jit agree on `args`."""
    lowered = purejit.jit(make(*PJ)).lower(*args)
    text = print_function(lowered.traced)
    assert print_function(verify(parse(text))) == text
    flat = [np.asarray(a) for a in tree_flatten(args)[0]]
    ref = interpret(lowered.traced, *flat)
    got = tree_flatten(purejit.jit(make(*PJ))(*args))[0]
    want = jax.tree_util.tree_leaves(jax.jit(make(*JX))(*args))
    assert len(ref) == len(got) == len(want)
    for r, g, w in zip(ref, got, want):
        w = np.asarray(w)
        assert np.asarray(g).dtype == w.dtype and np.asarray(g).shape == w.shape
        np.testing.assert_allclose(r, w, rtol=rtol, atol=1e-6)
        np.testing.assert_allclose(np.asarray(g), w, rtol=rtol, atol=1e-6)
    return text


def _rnn(reverse=False, unroll=1):
    def make(lax, jnp):
        def f(h0, xs, w):
            def step(h, x):
                h = jnp.tanh(h @ w + x)
                return h, h.sum()

            return lax.scan(step, h0, xs, reverse=reverse, unroll=unroll)

        return f

    return make


@pytest.mark.parametrize(
    "reverse,unroll", [(False, 1), (True, 1), (False, 2), (True, 3), (False, 7), (True, True)]
)
def test_scan_forward_reverse_unroll(reverse, unroll):
    text = _agree(_rnn(reverse, unroll), _f32(3), _f32(7, 3), _f32(3, 3), rtol=1e-4)
    assert text.count(" = scan(") == 1 and "while(" not in text
    assert f"reverse={'true' if reverse else 'false'}" in text
    want = 7 if unroll is True else unroll
    assert f"unroll={want}," in text


def test_scan_unroll_is_one_loop_with_copies_and_a_straight_remainder():
    module = purejit.jit(_rnn(False, 3)(*PJ)).lower(_f32(3), _f32(7, 3), _f32(3, 3)).as_text()
    assert module.count('"stablehlo.while"') == 1
    # 3 copies in the loop (2 trips), then the 7th step after it
    assert module.count('"stablehlo.tanh"') == 4


def test_several_carries_pytrees_and_captured_consts():
    def make(lax, jnp):
        def f(init, xs, scale):
            def step(carry, x):
                a, (b, n) = carry["a"], carry["bn"]
                a = a * scale + x["u"]
                b = b + jnp.sin(x["v"]) * a[0]
                out = {"a": a, "bn": (b, n + 1)}
                return out, (a * 2.0, {"n": n, "b": b})

            return lax.scan(step, init, xs)

        return f

    init = {"a": _f32(2), "bn": (np.float32(0.5), np.int32(3))}
    xs = {"u": _f32(6, 2), "v": _f32(6)}
    text = _agree(make, init, xs, np.float32(0.9))
    assert "num_consts=1, num_carry=3" in text


def test_zero_length_scan():
    def make(lax, jnp):
        def f(c, xs):
            return lax.scan(lambda c, x: (c + x.sum(), (c * x, x > 0)), c, xs)

        return f

    text = _agree(make, np.float32(2.0), np.zeros((0, 4), np.float32))
    assert "length=0" in text


def test_nested_scan_and_fori_loop_with_static_bounds():
    def make(lax, jnp):
        def f(x, xs):
            def outer(c, row):
                inner = lax.fori_loop(1, 4, lambda i, v: v * 0.5 + row * i, c)
                return inner, lax.scan(lambda s, r: (s + r, s * r), c.sum(), row)[1]

            return lax.scan(outer, x, xs)

        return f

    text = _agree(make, _f32(3), _f32(4, 3))
    assert text.count(" = scan(") == 3 and "while(" not in text


def test_fori_loop_static_bounds_and_map_print_a_scan():
    def fori(lax, jnp):
        return lambda x: lax.fori_loop(2, 9, lambda i, c: c * 1.5 - i, x)

    text = _agree(fori, _f32(3))
    assert text.count(" = scan(") == 1 and "length=7" in text and "while(" not in text

    def traced_bounds(lax, jnp):
        return lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 1.5 - i, x)

    text = print_function(purejit.jit(traced_bounds(*PJ)).lower(_f32(3), np.int32(4)).traced)
    assert "while(" in text and "scan(" not in text

    def mapped(lax, jnp):
        return lambda xs: lax.map(lambda r: (jnp.cumsum(r), r.max()), xs)

    text = _agree(mapped, _f32(5, 4))
    assert text.count(" = scan(") == 1 and "num_carry=0" in text


def test_optimised_ir_keeps_the_scan_op():
    lowered = purejit.jit(_rnn()(*PJ)).lower(_f32(3), _f32(5, 3), _f32(3, 3))
    assert " = scan(" in lowered.ir() and "while(" not in lowered.ir()


def test_unused_carry_and_ys_are_dropped_by_the_pipeline():
    def f(x, xs):
        def step(c, xi):
            a, b = c
            return (a + xi, b * 2.0), (a * xi, b)

        (a, _), (ya, _) = plax.scan(step, (x, x), xs)
        return a, ya

    x, xs = _f32(2), _f32(4, 2)
    lowered = purejit.jit(f).lower(x, xs)
    assert "num_carry=2" in print_function(lowered.traced)
    assert "num_carry=1" in lowered.ir()
    a, ya = purejit.jit(f)(x, xs)
    np.testing.assert_allclose(np.asarray(a), x + xs.sum(0), rtol=1e-5)
    prefix = x + np.concatenate([np.zeros((1, 2), np.float32), np.cumsum(xs, 0)[:-1]])
    np.testing.assert_allclose(np.asarray(ya), prefix * xs, rtol=1e-5, atol=1e-6)


def test_scan_runs_eagerly_outside_jit():
    h0, xs, w = _f32(3), _f32(4, 3), _f32(3, 3)
    got = _rnn()(*PJ)(h0, xs, w)
    want = jax.jit(_rnn()(*JX))(h0, xs, w)
    for g, w_ in zip(tree_flatten(got)[0], jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w_), rtol=1e-4, atol=1e-6)


def test_buckets_refuse_a_scan_along_the_bucketed_axis_or_over_its_length():
    def along(x):
        return plax.scan(lambda c, r: (c + r, c), pjnp.zeros(3), x)

    def trip_count(x):
        return plax.fori_loop(0, x.shape[0], lambda i, c: c + 1.0, x.sum(axis=1))

    def across(x):  # scans axis 1: every row of x stays its own
        return plax.scan(lambda c, col: (c + col, c * 2.0), pjnp.zeros(x.shape[0]), x.T)

    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    bucket = {"x": {0: [8]}}
    with pytest.raises(BucketError, match="scans"):
        purejit.jit(along, buckets=bucket)(x)
    with pytest.raises(BucketError, match="padded length"):
        purejit.jit(trip_count, buckets=bucket)(x)
    c, ys = purejit.jit(across, buckets=bucket)(x)
    np.testing.assert_allclose(np.asarray(c), x.sum(axis=1))
    want = np.stack([np.zeros(5), x[:, 0] * 2, (x[:, 0] + x[:, 1]) * 2], axis=0)
    np.testing.assert_allclose(np.asarray(ys), want)
