"""jax.lax's reductions, shape helpers, arithmetic and contractions that purejit composes
from its IR ops (purejit/lax/reductions.py, reshaping.py, arithmetic.py, contractions.py),
against JAX: under jit, eagerly, and under grad and vmap where JAX's work.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
from purejit import lax as plax
from purejit.tree_util import tree_flatten

RNG = np.random.default_rng(3)


def same(got, want, rtol=1e-6, atol=1e-6):
    g_leaves, _ = tree_flatten(got)
    w_leaves = jax.tree_util.tree_leaves(want)
    assert len(g_leaves) == len(w_leaves)
    for k, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), (k, g.dtype, g.shape, w.dtype, w.shape)
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=f"leaf {k}")
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"leaf {k}")


def both(make, *args, rtol=1e-6):
    """make(lax) under purejit.jit and jax.jit on `args`; returns nothing, asserts equal."""
    same(purejit.jit(make(plax))(*args), jax.jit(make(jax.lax))(*args), rtol)


def normal(*shape, dtype=np.float32):
    return RNG.normal(size=shape).astype(dtype)


# ---- reductions --------------------------------------------------------------------------------


def test_monoid_reductions_match_jax():
    def make(lax):
        def f(x, b, i):
            return [
                lax.reduce_sum(x, (0, 2)),
                lax.reduce_prod(x, (1,)),
                lax.reduce_max(x, (2,)),
                lax.reduce_min(x, (0, 1, 2)),
                lax.reduce_sum(x, ()),
                lax.reduce_and(b, (1,)),
                lax.reduce_or(b, (0,)),
                lax.reduce_xor(b, (0, 2)),
                lax.reduce_and(i, (1,)),
                lax.reduce_or(i, (2,)),
                lax.reduce_xor(i, (0,)),
                lax.reduce_max(i, (0,)),
            ]

        return f

    x = normal(3, 4, 5)
    x[0, 1, 2] = np.nan
    args = (x, x > 0.2, np.nan_to_num(x * 100).astype(np.int32))
    both(make, *args)
    # eagerly too
    same(plax.reduce_sum(args[0], (1,)), jax.lax.reduce_sum(args[0], (1,)))


def test_reductions_grad_and_vmap():
    x = normal(3, 4)

    def loss(lax):
        return lambda x: lax.reduce_sum(
            lax.reduce_max(x, (1,)) * lax.reduce_prod(x, (0,))[:3], (0,)
        )

    same(purejit.grad(loss(plax))(x), jax.grad(loss(jax.lax))(x))
    same(
        purejit.vmap(lambda v: plax.reduce_min(v, (0,)))(x),
        jax.vmap(lambda v: jax.lax.reduce_min(v, (0,)))(x),
    )


@pytest.mark.parametrize(
    "call, err",
    [
        (lambda lax, x: lax.reduce_sum(x, (-1,)), ValueError),
        (lambda lax, x: lax.reduce_sum(x, (2,)), ValueError),
        (lambda lax, x: lax.reduce_max(x, (0, 0)), ValueError),
        (lambda lax, x: lax.reduce_and(x, (0,)), TypeError),
        (lambda lax, x: lax.reduce_sum(x > 0, (0,)), TypeError),
    ],
)
def test_reduction_errors_match_jax(call, err):
    x = normal(2, 3)
    with pytest.raises(err):
        call(jax.lax, x)
    with pytest.raises(err):
        call(plax, x)


@pytest.mark.parametrize("aggregate", [True, False])
def test_approx_top_k_is_exact_as_on_cpu(aggregate):
    def make(lax):
        def f(x):
            return [
                lax.approx_max_k(x, 3, aggregate_to_topk=aggregate),
                lax.approx_min_k(x, 2, reduction_dimension=0, aggregate_to_topk=aggregate),
                lax.approx_max_k(x, 1, 1, recall_target=0.5),
            ]

        return f

    x = normal(4, 6, 5)
    x[1, 2, 3] = x[1, 2, 0]  # a tie: the lower index comes first
    both(make, x)


# ---- shape helpers ----------------------------------------------------------------------------


def test_shape_helpers_match_jax():
    def make(lax):
        def f(x, y, i):
            return [
                lax.tile(x, (2, 3)),
                lax.tile(y, (3,)),
                lax.stack([x, x + 1, x * 2], 1),
                lax.stack([y], -1),
                lax.unstack(x, 1),
                lax.split(x, (1, 0, 2), 0),
                lax.slice_in_dim(x, -3, None, 2, 1),
                lax.slice_in_dim(x, None, 2),
                lax.index_in_dim(x, -1, 1, False),
                lax.index_in_dim(x, 1),
                lax.index_take(x, (i, i[::-1] - 4), (0, 1)),
                lax.index_take(x, (i,), (1,)),
                lax.collapse(x, 0),
                lax.broadcast_like(y, x.T),
                lax.broadcast_to_rank(y, 3),
                lax.full_like(x, 2.5),
                lax.full_like(y, 1, dtype=np.int32, shape=(2, 2)),
            ]

        return f

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    both(make, x, np.arange(3, dtype=np.float32), np.array([0, 2, 5, -1], np.int32))


def test_shape_helpers_grad_and_vmap():
    x = normal(3, 4)

    def loss(lax):
        def f(x):
            a, b = lax.split(x, (1, 2), 0)
            s = lax.stack(lax.unstack(lax.tile(a, (2, 1)), 0), 1)
            return (s * s).sum() + (lax.collapse(b, 0) ** 3).sum() + lax.index_in_dim(x, 2).sum()

        return f

    same(purejit.grad(loss(plax))(x), jax.grad(loss(jax.lax))(x))
    same(
        purejit.vmap(lambda v: plax.tile(plax.slice_in_dim(v, 1, 3), (2,)))(x),
        jax.vmap(lambda v: jax.lax.tile(jax.lax.slice_in_dim(v, 1, 3), (2,)))(x),
    )


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
def test_value_helpers_match_jax():
    for v in (1.0, 2, True, int, float, np.float64, np.int8, np.zeros(2, np.int16)):
        assert plax.dtype(v) == jax.lax.dtype(v), v
    np.testing.assert_array_equal(plax.shape_as_value((2, 3)), jax.lax.shape_as_value((2, 3)))
    e = plax.empty((2, 3), np.float32)
    assert (e.shape, e.dtype) == ((2, 3), np.float32)
    s = plax.stage(3.0)
    assert isinstance(s, purejit.Array) and s.weak_type
    assert purejit.jit(lambda: plax.empty(4, np.int32))().shape == (4,)


@pytest.mark.parametrize(
    "call, err",
    [
        (lambda lax, x: lax.tile(x, (2,)), TypeError),
        (lambda lax, x: lax.split(x, (1, 1), 0), ValueError),
        (lambda lax, x: lax.index_in_dim(x, 5, 1), IndexError),
        (lambda lax, x: lax.collapse(x, 1, 0), ValueError),
        (lambda lax, x: lax.dtype(None), ValueError),
    ],
)
def test_shape_helper_errors_match_jax(call, err):
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(err):
        call(jax.lax, x)
    with pytest.raises(err):
        call(plax, x)


# ---- arithmetic ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.int32, np.uint32])
def test_mulhi_matches_jax(dt):
    info = np.iinfo(dt)
    a = RNG.integers(info.min, info.max, 64, endpoint=True).astype(dt)
    b = RNG.integers(info.min, info.max, 64, endpoint=True).astype(dt)
    a[:4], b[:4] = [info.min, info.max, 0, info.max], [info.min, info.min, info.max, info.max]
    both(lambda lax: lambda a, b: [lax.mulhi(a, b), lax.mulhi(a[:1], b)], a, b)


def test_exp2_and_option_types():
    x = np.linspace(-6, 6, 97).astype(np.float32)
    both(lambda lax: lambda x: lax.exp2(x), x)
    same(
        purejit.grad(lambda x: plax.exp2(x).sum())(x), jax.grad(lambda x: jax.lax.exp2(x).sum())(x)
    )
    with pytest.raises(NotImplementedError, match="result_accuracy"):
        plax.exp2(x, accuracy=plax.Tolerance(rtol=1e-3))
    with pytest.raises(ValueError):
        plax.Tolerance()
    assert [m.value for m in plax.RoundingMethod] == [m.value for m in jax.lax.RoundingMethod]
    assert [m.name for m in plax.AccuracyMode] == [m.name for m in jax.lax.AccuracyMode]
    same(plax.round(np.float32(2.5), plax.RoundingMethod.TO_NEAREST_EVEN), np.float32(2.0))


# ---- contractions --------------------------------------------------------------------------------


def test_batch_matmul_and_ragged_dots_match_jax():
    lhs, rhs, gs = normal(10, 4), normal(3, 4, 5), np.array([3, 0, 5], np.int32)
    lhs2, rhs2 = normal(6, 10), normal(10, 5)
    lhs3, rhs3 = normal(2, 10, 4), normal(3, 2, 4, 5)
    gs3 = np.array([[3, 0, 5], [1, 6, 2]], np.int32)

    def make(lax):
        def f(lhs, rhs, gs, lhs2, rhs2, lhs3, rhs3, gs3):
            dn2 = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
            dn3 = lax.RaggedDotDimensionNumbers((([2], [2]), ([0], [1])), [1], [0])
            return [
                lax.batch_matmul(lhs3, lhs3.transpose(0, 2, 1)),
                lax.ragged_dot(lhs, rhs, gs),
                lax.ragged_dot_general(lhs2, rhs2, gs, dn2),
                lax.ragged_dot_general(lhs3, rhs3, gs3, dn3),
            ]

        return f

    both(make, lhs, rhs, gs, lhs2, rhs2, lhs3, rhs3, gs3, rtol=1e-5)

    def loss(lax):
        return lambda a, b: (lax.ragged_dot(a, b, gs) ** 2).sum()

    same(purejit.grad(loss(plax), (0, 1))(lhs, rhs), jax.grad(loss(jax.lax), (0, 1))(lhs, rhs),
         rtol=1e-5)  # fmt: skip


def test_scaled_dot_matches_jax():
    lhs, rhs = normal(2, 4, 64), normal(2, 64, 3)
    ls, rs = RNG.uniform(size=(2, 4, 2)).astype(np.float32), RNG.uniform(size=(2, 2, 3))

    def make(lax):
        def f(lhs, rhs, ls, rs):
            return [
                lax.scaled_dot(lhs, rhs, lhs_scale=ls, rhs_scale=rs),
                lax.scaled_dot(lhs, rhs, lhs_scale=ls, preferred_element_type=np.float32),
                lax.scaled_dot(lhs[0], rhs[0], preferred_element_type=np.float32),
            ]

        return f

    both(make, lhs, rhs, ls, rs.astype(np.float32), rtol=1e-2)
