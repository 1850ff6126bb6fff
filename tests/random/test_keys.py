"""Keys: typed and raw, seeds, split/fold_in, key_data/wrap_key_data/key_impl, keys through
jit, scan carries and pytrees, and the errors for bad keys, shapes and arithmetic."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import purejit
import purejit.lax as plax
import purejit.random as pr

HERE = __file__.rsplit("/", 1)[-1]


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


SEEDS = [0, 1, 42, 2**31 - 1, 2**31, 2**32 + 5, 2**40 + 3, -1, -7, np.uint32(7), np.int32(-3)]


@pytest.mark.parametrize("seed", SEEDS, ids=str)
def test_seeds_give_jax_keys(seed):
    assert same(pr.PRNGKey(seed), jax.random.PRNGKey(seed))
    assert same(pr.key_data(pr.key(seed)), jax.random.key_data(jax.random.key(seed)))


def test_traced_seed_inside_jit():
    f = purejit.jit(lambda s: pr.key_data(pr.key(s)))
    for s in (0, 5, -9, 2**31 - 1):
        assert same(f(np.int32(s)), jax.random.PRNGKey(s))


def test_split_fold_in_bits_typed_and_raw():
    k, jk = pr.key(11), jax.random.key(11)
    assert same(pr.key_data(pr.split(k)), jax.random.key_data(jax.random.split(jk)))
    assert same(pr.key_data(pr.split(k, (2, 3))), jax.random.key_data(jax.random.split(jk, (2, 3))))
    assert same(pr.split(pr.PRNGKey(11), 5), jax.random.split(jax.random.PRNGKey(11), 5))
    for d in (0, 7, 2**32 - 1):
        assert same(pr.key_data(pr.fold_in(k, d)), jax.random.key_data(jax.random.fold_in(jk, d)))
    assert same(pr.fold_in(pr.PRNGKey(3), 9), jax.random.fold_in(jax.random.PRNGKey(3), 9))
    for dt in (np.uint8, np.uint16, np.uint32):
        assert same(pr.bits(k, (4, 3), dt), jax.random.bits(jk, (4, 3), dt))
    assert isinstance(pr.split(k), pr.PRNGKeyArray)
    assert not isinstance(pr.split(pr.PRNGKey(1)), pr.PRNGKeyArray)


def test_key_array_api():
    k = pr.key(5)
    assert k.shape == () and k.ndim == 0 and str(k.dtype) == "key<fry>"
    assert pr.key_impl(k) == pr.key_impl(pr.PRNGKey(5)) == "threefry2x32"
    ks = pr.split(k, 4)
    assert ks.shape == (4,) and len(ks) == 4
    assert same(pr.key_data(ks[2]), jax.random.key_data(jax.random.split(jax.random.key(5), 4)[2]))
    assert [kk.shape for kk in ks] == [()] * 4
    assert ks.reshape(2, 2).shape == (2, 2)
    # copy, as jax.Array's (Flax's nnx.fork copies its key)
    assert type(ks.copy()) is type(ks) and same(pr.key_data(ks.copy()), pr.key_data(ks))
    w = pr.wrap_key_data(pr.key_data(k))
    assert bool(np.asarray(w == k)) and not bool(np.asarray(w != k))
    assert pr.key_dtype() == k.dtype == "key<fry>"
    assert "key<fry>" in repr(k)


def test_keys_through_jit_scan_and_pytrees():
    @purejit.jit
    def step(state):
        k, x = state["key"], state["x"]
        k, sub = pr.split(k)
        return {"key": k, "x": x + pr.normal(sub, (3,))}

    state = {"key": pr.key(0), "x": np.zeros(3, np.float32)}
    out = step(step(state))
    assert isinstance(out["key"], pr.PRNGKeyArray)

    jk, jx = jax.random.key(0), np.zeros(3, np.float32)
    for _ in range(2):
        jk, sub = jax.random.split(jk)
        jx = jx + jax.random.normal(sub, (3,))
    assert same(out["x"], jx)
    assert same(pr.key_data(out["key"]), jax.random.key_data(jk))

    def body(k, _):
        k, sub = pr.split(k)
        return k, pr.uniform(sub, (2,))

    k_end, ys = purejit.jit(lambda k: plax.scan(body, k, None, length=4))(pr.key(1))

    def jbody(k, _):
        k, sub = jax.random.split(k)
        return k, jax.random.uniform(sub, (2,))

    jk_end, jys = jax.lax.scan(jbody, jax.random.key(1), None, length=4)
    assert same(ys, jys) and same(pr.key_data(k_end), jax.random.key_data(jk_end))


def test_keys_flatten_to_their_uint32_data():
    leaves, tree = purejit.tree_util.tree_flatten({"k": pr.key(3), "n": 1})
    assert same(leaves[0], jax.random.PRNGKey(3))
    back = purejit.tree_util.tree_unflatten(tree, leaves)
    assert isinstance(back["k"], pr.PRNGKeyArray)


# ---- errors ----------------------------------------------------------------------------------


def test_bad_keys_name_the_function_argument_and_line():
    with pytest.raises(TypeError, match=r"normal: argument 'key' is a float array") as e:
        pr.normal(np.zeros(2, np.float32), (3,))
    assert HERE in str(e.value)
    with pytest.raises(TypeError, match=r"uniform: argument 'key' is uint32\[3\]"):
        pr.uniform(np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match=r"split: argument 'key' is int32\[2\]"):
        pr.split(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="unexpected PRNG key type int"):
        pr.normal(3)
    with pytest.raises(ValueError, match=r"normal accepts a single key, but was given a key "):
        pr.normal(pr.split(pr.key(0), 2))
    with pytest.raises(TypeError, match="scalar seed"):
        pr.key(np.arange(2))
    with pytest.raises(TypeError, match="seed must be an integer"):
        pr.PRNGKey(1.5)
    with pytest.raises(NotImplementedError, match="rbg"):
        pr.key(0, impl="rbg")


def test_typed_key_arithmetic_is_an_error():
    k = pr.key(0)
    for op in (lambda: k + 1, lambda: 1 + k, lambda: k * k, lambda: -k, lambda: k < k):
        with pytest.raises(TypeError, match=r"not defined on typed PRNG keys \(key<fry>\)") as e:
            op()
        assert HERE in str(e.value)
    with pytest.raises(TypeError, match="cannot be converted to a NumPy array"):
        np.asarray(k)

    @purejit.jit
    def f(k):
        return k + 1

    with pytest.raises(TypeError, match="not defined on typed PRNG keys"):
        f(k)


def test_non_static_shape_is_an_error_naming_the_argument():
    @purejit.jit
    def f(k, n):
        return pr.normal(k, (n,))

    with pytest.raises(TypeError, match=r"normal: argument 'shape' must be a tuple of static") as e:
        f(pr.key(0), 3)
    assert HERE in str(e.value)
    with pytest.raises(TypeError, match=r"uniform: argument 'shape' must be a sequence"):
        pr.uniform(pr.key(0), 3)


def test_dtype_errors_follow_jax():
    k = pr.key(0)
    with pytest.raises(ValueError, match="dtype argument to `uniform` must be a float dtype"):
        pr.uniform(k, (2,), np.int32)
    with pytest.raises(TypeError, match="randint only accepts integer dtypes"):
        pr.randint(k, (2,), 0, 3, np.float32)
    with pytest.raises(TypeError, match="bernoulli probability `p` must have a floating dtype"):
        pr.bernoulli(k, np.int32(1))
    with pytest.raises(ValueError, match="unsigned int dtype"):
        pr.bits(k, (2,), np.int32)
