"""Shape buckets and the batch-axis analysis.

Accepted programs must give the numbers of the unpadded program (checked against NumPy and
against purejit without buckets); refused ones must name the op that mixes and its line.
"""

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import lax, nn
from purejit.compiler.buckets import BucketOverflowError
from purejit.passes.batch_axes import BucketError
from tolerance import dot_tol

RNG = np.random.default_rng(0)
W1 = RNG.standard_normal((6, 16)).astype(np.float32)
W2 = RNG.standard_normal((16, 3)).astype(np.float32)


def mlp(x, w1, w2):
    return jnp.tanh(jnp.maximum(x @ w1, 0.0) @ w2)


def mlp_np(x):
    return np.tanh(np.maximum(x @ W1, 0.0) @ W2)


def _x(n, d=6):
    return RNG.standard_normal((n, d)).astype(np.float32)


def _line_of(snippet: str) -> int:
    with open(__file__) as f:
        return next(i for i, t in enumerate(f, 1) if snippet in t)


def test_mlp_padding_gives_unpadded_results_one_compile_per_bucket():
    f = purejit.jit(mlp, buckets={"x": {0: [4, 8, 16]}})
    plain = purejit.jit(mlp)
    for n in (1, 3, 4, 5, 8, 13, 16, 2, 7):
        x = _x(n)
        y = f(x, W1, W2)
        assert y.shape == (n, 3)
        np.testing.assert_allclose(np.asarray(y), mlp_np(x), **dot_tol(2e-5, 2e-5))
        if n in (3, 13):
            np.testing.assert_allclose(
                np.asarray(y), np.asarray(plain(x, W1, W2)), **dot_tol(1e-6, 0)
            )
    s = purejit.cache_stats(f)
    assert s.compiles == 3  # buckets 4, 8, 16
    assert s.hits == 6
    assert [str(c) for c in s.miss_reasons[0].changes] == ["x: f32[4,6] -> f32[8,6]"]


def test_bucket_by_position_and_pytree_argument():
    def f(batch, w):
        return {"y": batch["a"] @ w + batch["b"][:, None], "a2": batch["a"] * 2}

    jf = purejit.jit(f, buckets={0: {0: [8]}})
    a, b = _x(5), RNG.standard_normal(5).astype(np.float32)
    out = jf({"a": a, "b": b}, W1)
    np.testing.assert_allclose(np.asarray(out["y"]), a @ W1 + b[:, None], **dot_tol(1e-5, 1e-5))
    np.testing.assert_allclose(np.asarray(out["a2"]), a * 2)


def test_output_axes_follow_the_batch_axis():
    def f(x):
        # batch axis moves to axis 1; softmax over the feature axis is row by row
        return x.T * 2, nn.softmax(x, axis=-1), jnp.zeros(x.shape), jnp.arange(x.shape[0])

    jf = purejit.jit(f, buckets={"x": {0: [8]}})
    x = _x(5)
    xt, sm, z, ar = jf(x)
    assert (xt.shape, sm.shape, z.shape, ar.shape) == ((6, 5), (5, 6), (5, 6), (5,))
    np.testing.assert_allclose(np.asarray(xt), x.T * 2)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(np.asarray(sm), e / e.sum(-1, keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(ar), np.arange(5))


def test_two_bucketed_arguments_that_meet():
    jf = purejit.jit(lambda x, y: x * y + 1, buckets={"x": {0: [8]}, "y": {0: [8]}})
    x, y = _x(3), _x(3)
    # XLA may fuse x * y + 1 into one fma (one rounding where NumPy rounds twice): near
    # x * y = -1 the sum cancels, so the check is absolute there
    np.testing.assert_allclose(np.asarray(jf(x, y)), x * y + 1, rtol=1e-6, atol=1e-6)
    with pytest.raises(BucketError, match="different lengths"):
        jf(_x(3), _x(4))


def test_gather_rows_by_bucketed_indices_and_loops():
    table = RNG.standard_normal((10, 4)).astype(np.float32)

    def f(ids, x):
        emb = jnp.take(table, ids, axis=0)
        return lax.fori_loop(0, 3, lambda i, c: c * 0.5 + emb, x)

    jf = purejit.jit(f, buckets={"ids": {0: [8]}, "x": {0: [8]}})
    ids = np.array([3, 1, 4, 1, 5], np.int32)
    x = RNG.standard_normal((5, 4)).astype(np.float32)
    want = x
    for _ in range(3):
        want = want * 0.5 + table[ids]
    np.testing.assert_allclose(np.asarray(jf(ids, x)), want, rtol=1e-5, atol=1e-6)


def test_reduction_along_other_axes_and_sort_cumsum_are_accepted():
    def f(x):
        return jnp.sort(x, axis=1), jnp.cumsum(x, axis=1), x.sum(axis=1), jnp.argmax(x, axis=1)

    jf = purejit.jit(f, buckets={"x": {0: [8]}})
    x = _x(5)
    s, c, t, am = jf(x)
    np.testing.assert_allclose(np.asarray(s), np.sort(x, axis=1))
    np.testing.assert_allclose(np.asarray(c), np.cumsum(x, axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(t), x.sum(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(am), np.argmax(x, axis=1))


def _refused(fn, snippet, match, n=5, **kw):
    jf = purejit.jit(fn, buckets={"x": {0: [8]}}, **kw)
    with pytest.raises(BucketError, match=match) as info:
        jf(_x(n))
    if snippet is not None:
        assert f"test_buckets.py:{_line_of(snippet)}" in str(info.value)
    return str(info.value)


def test_refuses_reduction_over_the_batch():
    def f(x):
        return x - x.mean(axis=0)  # mixes: batch mean

    msg = _refused(f, "batch mean", "`reduce`.*reduces over axis 0 of f32\\[8,6\\]")
    assert "rows of x axis 0" in msg


def test_refuses_contraction_sort_cumsum_reshape_slice_concat():
    def gram(x):
        return x.T @ x  # gram

    def sort0(x):
        return jnp.sort(x, axis=0)  # sort0

    def cum0(x):
        return jnp.cumsum(x, axis=0)  # cum0

    def flat(x):
        return jnp.reshape(x, (-1,))  # flat

    def shift(x):
        return x[1:]  # shift

    def cat(x):
        return jnp.concatenate([x, x], axis=0)  # cat

    _refused(gram, "# gram", "`dot_general`.*contracts over")
    _refused(sort0, "# sort0", "`sort`.*sorts along")
    _refused(cum0, "# cum0", "`reduce_window`.*window")
    _refused(flat, "# flat", "`reshape`.*merges or splits")
    _refused(shift, "# shift", "`slice`.*takes part of")
    _refused(cat, "# cat", "`concatenate`.*concatenates along")


def test_refuses_length_used_as_a_number_and_python_branches():
    def scaled(x):
        return x / x.shape[0]  # scaled

    def branch(x):
        if x.shape[0] > 6:
            return x * 2  # branch
        return x

    _refused(scaled, "# scaled", "computed from the padded length")
    _refused(branch, "# branch", "differ")


def test_refuses_data_dependent_predicate_of_cond():
    def f(x):
        return lax.cond(x.sum() > 0, lambda a: a + 1, lambda a: a - 1, x)

    _refused(f, None, "`reduce`.*reduces over")


def test_unbucketed_argument_meeting_the_rows_is_refused():
    jf = purejit.jit(lambda x, y: x + y, buckets={"x": {0: [8]}})
    with pytest.raises(BucketError, match="must be bucketed too"):
        jf(_x(5), _x(5))


def test_overflow_error_and_exact():
    jf = purejit.jit(mlp, buckets={"x": {0: [4]}})
    with pytest.raises(BucketOverflowError, match="x axis 0 has length 6, above the largest"):
        jf(_x(6), W1, W2)
    je = purejit.jit(mlp, buckets={"x": {0: [4]}}, bucket_overflow="exact")
    x = _x(6)
    np.testing.assert_allclose(np.asarray(je(x, W1, W2)), mlp_np(x), **dot_tol(2e-5, 2e-5))


def test_bad_specs():
    with pytest.raises(ValueError, match="has no argument 'z'"):
        purejit.jit(mlp, buckets={"z": {0: [4]}})
    with pytest.raises(ValueError, match="positive sizes"):
        purejit.jit(mlp, buckets={"x": {0: [0, 4]}})
    with pytest.raises(ValueError, match="bucket_overflow"):
        purejit.jit(mlp, buckets={"x": {0: [4]}}, bucket_overflow="pad")
    with pytest.raises(BucketError, match="does not exist"):
        purejit.jit(mlp, buckets={"x": {2: [4]}})(_x(3), W1, W2)
