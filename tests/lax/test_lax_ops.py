"""purejit.lax's low-level ops and purejit.numpy's sort/argsort/cumsum/cumprod against JAX.

Each test writes one function against a (lax, jnp) pair and compares purejit.jit with
jax.jit on a few inputs; the ops are grouped so that a test costs one compile per side.
"""

from __future__ import annotations

import os

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
RNG = np.random.default_rng(0)
ON_GPU = jax.default_backend() == "gpu"


def assert_same(got, want, rtol=1e-6):
    g_leaves, _ = tree_flatten(got)
    w_leaves = jax.tree_util.tree_leaves(want)
    assert len(g_leaves) == len(w_leaves)
    for k, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        g, w = np.asarray(g), np.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), (k, g.dtype, g.shape, w.dtype, w.shape)
        if g.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=f"leaf {k}")
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-6, err_msg=f"leaf {k}")


def check(make, *cases, rtol=1e-6):
    jax_f, jit_f = jax.jit(make(*JX)), purejit.jit(make(*PJ))
    for args in cases:
        assert_same(jit_f(*args), jax_f(*args), rtol)


def normal(*shape, dtype=np.float32):
    return RNG.normal(size=shape).astype(dtype)


# ---- indexing ---------------------------------------------------------------------------------


def test_dynamic_slicing():
    def make(lax, jnp):
        def f(x, i):
            return [
                lax.dynamic_slice(x, (i, 1), (2, 3)),
                lax.dynamic_slice(x, (-2, i), (2, 2)),  # negative Python index counts from end
                lax.dynamic_slice(x, (i + 10, -1), (3, 1)),  # clamped into range
                lax.dynamic_update_slice(x, jnp.ones((2, 2), x.dtype), (i, i)),
                lax.dynamic_update_slice(x, jnp.zeros((1, 5), x.dtype), (-i, 0)),
                lax.dynamic_index_in_dim(x, i, 1),
                lax.dynamic_index_in_dim(x, i, 0, keepdims=False),
                lax.dynamic_slice_in_dim(x, i, 2, axis=1),
                lax.dynamic_update_index_in_dim(x, jnp.full((4,), 7.0, x.dtype), i, 1),
                lax.dynamic_update_slice_in_dim(x, jnp.full((4, 2), 3.0, x.dtype), i, 1),
            ]

        return f

    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    check(make, (x, np.int32(1)), (x, np.int32(-1)), (x, np.int32(3)))


def test_select_clamp_iota_convert_and_shapes():
    def make(lax, jnp):
        def f(x, p):
            return [
                lax.select(p, x, -x),
                lax.select(p[0, 0], x, x * 2),
                lax.clamp(-0.5, x, 0.5),
                lax.clamp(jnp.zeros_like(x), x, jnp.ones_like(x)),
                lax.iota(jnp.int32, 5),
                lax.broadcasted_iota(jnp.float32, (2, 3), 1),
                lax.convert_element_type(x * 3, jnp.int32),
                lax.convert_element_type(x, jnp.bool_),
                lax.broadcast_in_dim(x[0], (4, 2, 3), (2,)),
                lax.broadcast(x, (2,)),
                lax.reshape(x, (3, 2)),
                lax.reshape(x, (6,), dimensions=(1, 0)),
                lax.transpose(x, (1, 0)),
                lax.rev(x, (0, 1)),
                lax.slice(x, (0, 1), (2, 3), (1, 2)),
                lax.concatenate([x, x * 2], 1),
                lax.pad(x, 0.0, [(1, 0, 0), (0, 2, 1)]),
                lax.squeeze(x[:1], (0,)),
                lax.expand_dims(x, (0, 3)),
                lax.full((2, 2), 3, jnp.float32),
            ]

        return f

    check(make, (normal(2, 3), np.array([[True, False, True], [False, True, True]])))


def test_reduce_dot_general_and_argminmax():
    def make(lax, jnp):
        def argmax_pair(a, b):  # (value, index): larger value, then smaller index
            take_a = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
            return lax.select(take_a, a[0], b[0]), lax.select(take_a, a[1], b[1])

        def f(x, y, z):
            idx = lax.broadcasted_iota(jnp.int32, x.shape, 1)
            return [
                lax.reduce(x, 0.0, lax.add, (0,)),
                lax.reduce(x, -jnp.inf, lax.max, (0, 1)),
                lax.reduce((x, idx), (-jnp.inf, 0), argmax_pair, (1,)),
                lax.dot_general(y, z, (((2,), (1,)), ((0,), (0,)))),
                lax.dot_general(x, x, (((0,), (0,)), ((), ()))),
                *(
                    []
                    if ON_GPU  # XLA GPU (jax 0.11.2) cannot compile it, from jax.jit either
                    else [
                        lax.dot_general(
                            idx, idx, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32
                        )
                    ]
                ),
                lax.dot(x, x.T),
                lax.argmax(x, 1, jnp.int32),
                lax.argmin(x, 0, jnp.int32),
            ]

        return f

    check(make, (normal(3, 4), normal(2, 3, 5), normal(2, 5, 4)), rtol=1e-5)


def test_dot_general_preferred_element_type_is_one_mixed_dot():
    # as JAX emits it: bf16 operands keep a bf16 GEMM that returns f32; int operands are
    # not converted first. (XLA GPU in jax 0.11.2 fails to generate code for the int one,
    # "Failed to translate module to LLVM IR", whether jax.jit or purejit emits it)
    def make(lax, jnp):
        def f(x):
            idx = lax.broadcasted_iota(jnp.int32, x.shape, 1)
            xb = x.astype(jnp.bfloat16)
            dims = (((1,), (1,)), ((), ()))
            return [
                lax.dot_general(idx, idx, dims, preferred_element_type=jnp.float32)
                if not ON_GPU
                else lax.dot_general(xb, xb, dims),
                lax.dot_general(xb, xb, dims, preferred_element_type=jnp.float32),
                lax.dot(x, x.T, preferred_element_type=jnp.float32),  # same dtype: plain dot
            ]

        return f

    x = normal(3, 4)
    check(make, (x,), rtol=1e-2)
    if ON_GPU:
        return
    text = purejit.jit(make(*PJ)).lower(x).as_text()
    assert "(tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x3xf32>" in text
    assert "(tensor<3x4xbf16>, tensor<3x4xbf16>) -> tensor<3x3xf32>" in text
    assert "(tensor<3x4xi32>) -> tensor<3x4xf32>" not in text  # no convert before the dot


# ---- cumulative reductions ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_cumulative_reductions(dtype):
    def make(lax, jnp):
        def f(x):
            return [
                op(x, axis=axis, reverse=rev)
                for op in (lax.cumsum, lax.cumprod, lax.cummax, lax.cummin)
                for axis in (0, 1)
                for rev in (False, True)
            ]

        return f

    x = (RNG.normal(size=(4, 6)) * 3).astype(dtype)
    check(make, (x,), rtol=1e-5)


# ---- sorting --------------------------------------------------------------------------------


def test_sort_multi_operand_num_keys_and_nans():
    def make(lax, jnp):
        def f(k1, k2, v):
            return [
                lax.sort(k1),
                lax.sort(k1, dimension=0),
                lax.sort((k2, v), num_keys=1),
                lax.sort((k2, k1, v), num_keys=2, dimension=1),
                lax.sort([k2, v], dimension=0, is_stable=True),
                lax.sort_key_val(k1, v),
                lax.sort(k1 > 0),
            ]

        return f

    k1 = np.array([[3, np.nan, -0.0, 1, 0.0, -np.inf], [2, 2, np.nan, -1, np.inf, 2]], np.float32)
    k2 = np.array([[1, 0, 1, 0, 1, 0], [2, 2, 1, 1, 2, 1]], np.int32)
    v = np.arange(12, dtype=np.int32).reshape(2, 6)
    check(make, (k1, k2, v))


def test_top_k():
    def make(lax, jnp):
        def f(x, ints):
            return [lax.top_k(x, 3), lax.top_k(x, 1, axis=0), lax.top_k(ints, 2)]

        return f

    x = np.array([[1, np.nan, 3, 3, -np.inf], [0, 0, 0, 1, -1]], np.float32)
    ints = np.array([[5, 1, 5, 2], [0, 0, -3, 9]], np.int32)
    check(make, (x, ints))


def test_numpy_sort_argsort_cumsum_cumprod():
    def make(lax, jnp):
        def f(x, b, i8):
            return [
                jnp.sort(x),
                jnp.sort(x, axis=0),
                jnp.sort(x, axis=None),
                jnp.sort(x, descending=True),
                jnp.argsort(x),
                jnp.argsort(x, axis=0, descending=True),
                jnp.argsort(x, axis=None, stable=True),
                jnp.cumsum(x),
                jnp.cumsum(x, axis=1),
                jnp.cumsum(b, axis=0),
                jnp.cumsum(i8, axis=1, dtype=jnp.float32),
                jnp.cumprod(i8, axis=0),
                jnp.cumprod(x, axis=-1),
                x.sort(axis=0),
                x.argsort(),
                x.cumsum(axis=0),
            ]

        return f

    x = np.array([[3, 1, np.nan, 1], [0, -2, 5, 1], [1, 1, 1, -np.inf]], np.float32)
    b = x > 0
    i8 = np.array([[1, -2, 3, 4], [5, 6, -7, 8], [1, 1, 2, 2]], np.int8)
    check(make, (x, b, i8), rtol=1e-5)


def test_ops_run_eagerly():
    x = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]], np.float32)
    outs = [
        plax.sort(x),
        plax.top_k(x, 2)[1],
        plax.cumsum(x, axis=1, reverse=True),
        plax.dynamic_slice(x, (np.int32(1), 1), (1, 2)),
        pjnp.argsort(x, axis=0),
    ]
    want = [
        jax.lax.sort(x),
        jax.lax.top_k(x, 2)[1],
        jax.lax.cumsum(x, axis=1, reverse=True),
        jax.lax.dynamic_slice(x, (np.int32(1), 1), (1, 2)),
        jjnp.argsort(x, axis=0),
    ]
    assert all(isinstance(o, purejit.Array) for o in outs)
    assert_same(outs, want)


# ---- elementwise one-liners ----------------------------------------------------------------

FLOAT_UNARY = (
    "neg abs sign floor ceil round is_finite exp expm1 log log1p logistic sqrt rsqrt cbrt sin "
    "cos tanh square reciprocal"
).split()
FLOAT_BINARY = "add sub mul div rem pow max min atan2 eq ne lt le gt ge".split()
INT_UNARY = "neg abs sign bitwise_not population_count clz square".split()
INT_BINARY = (
    "add sub mul div rem max min bitwise_and bitwise_or bitwise_xor shift_left "
    "shift_right_logical shift_right_arithmetic eq lt"
).split()
# CHLO ops expand into long polynomials that take XLA seconds to compile; their numbers are
# the backend op tests' business, so here we only check which IR op each one-liner binds
CHLO_UNARY = "tan asin acos atan sinh cosh asinh acosh atanh erf lgamma".split()


def test_elementwise_aliases():
    def make(lax, jnp):
        def f(x, y, u, i, j):
            outs = [getattr(lax, n)(u) for n in FLOAT_UNARY]
            outs += [getattr(lax, n)(x, y) for n in FLOAT_BINARY]
            outs += [getattr(lax, n)(i) for n in INT_UNARY]
            outs += [getattr(lax, n)(i, j) for n in INT_BINARY]
            outs += [lax.round(x * 2.5, 1), lax.integer_pow(x, 3), lax.integer_pow(x, -2)]
            outs += [lax.add(x, 2.0), lax.mul(i, 3)]  # Python scalars take the dtype
            return outs

        return f

    u = np.array([0.1, 0.5, 0.9, 0.3], np.float32)  # inside every domain (asin, atanh, ...)
    x, y = np.array([-2.5, 1.5, 3.0, 0.5], np.float32), np.array([1.5, -2.0, 0.75, 2.0], np.float32)
    i, j = np.array([-7, 5, 12, 0], np.int32), np.array([2, -3, 5, 1], np.int32)
    check(make, (x, y, u, i, j), rtol=2e-5)


def test_chlo_aliases_bind_their_ops():
    def f(u):
        return [getattr(plax, n)(u) for n in CHLO_UNARY]

    ops = [op.name for op in purejit.jit(f).lower(np.float32(0.5)).traced.ops]
    assert ops == CHLO_UNARY


def test_lax_binary_ops_do_not_promote():
    def f(x, n):
        return plax.add(x, n)

    with pytest.raises(
        TypeError,
        match=r"lax.add requires arguments to have the same dtypes, "
        r"got float32, int32",
    ) as e:
        purejit.jit(f)(np.float32(1), np.int32(2))
    assert f"{HERE}:{f.__code__.co_firstlineno + 1}" in str(e.value)
    with pytest.raises(TypeError, match="float32, int32"):
        plax.add(np.float32(1), 2)  # a Python int is int32, as in jax.lax
