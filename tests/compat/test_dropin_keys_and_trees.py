"""What JAX libraries expect of typed PRNG keys and pytrees in drop-in mode: a key array is
one leaf of `jax.tree_util` / `jax.tree` (as in JAX), `jnp.stack` / `jnp.concatenate` keep
keys typed, and a `tree_map` over mismatched trees says what JAX says."""

from __future__ import annotations

import jax as real_jax
import numpy as np
import pytest

import purejit
import purejit.compat


@pytest.fixture
def jax():
    with purejit.compat.dropin() as jax:
        yield jax


def test_typed_keys_are_tree_leaves(jax):
    key = jax.random.key(0)
    tree = {"a": np.zeros(2), "b": [np.ones(3), key]}
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    assert len(leaves) == 3 and leaves[2] is key
    assert jax.tree.structure(tree) == jax.tree.structure({"a": 0, "b": [0, 0]})
    assert jax.tree.unflatten(treedef, leaves)["b"][1] is key
    dtypes = jax.tree.map(lambda t: t.dtype, tree)
    assert dtypes["b"][1] == jax.random.key(1).dtype
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(tree)]
    assert paths == ["['a']", "['b'][0]", "['b'][1]"]
    # an is_leaf of the caller's still applies, with the keys
    assert len(jax.tree.leaves(tree, is_leaf=lambda x: isinstance(x, list))) == 2
    # purejit's transformations still carry keys through jit
    out = jax.jit(lambda t: jax.random.split(t["b"][1]))(tree)
    np.testing.assert_array_equal(
        jax.random.key_data(out), jax.random.key_data(jax.random.split(key))
    )


def test_stack_and_concatenate_keep_keys_typed(jax):
    keys = [jax.random.key(i) for i in range(3)]
    stacked = jax.numpy.stack(keys)
    assert stacked.shape == (3,) and stacked.dtype == keys[0].dtype
    want = np.stack([np.asarray(jax.random.key_data(k)) for k in keys])
    np.testing.assert_array_equal(jax.random.key_data(stacked), want)
    both = jax.numpy.concatenate([stacked, stacked[:1]])
    assert both.shape == (4,)
    np.testing.assert_array_equal(jax.random.key_data(both)[3], want[0])
    ref = real_jax.random.key_data(real_jax.numpy.stack([real_jax.random.key(i) for i in range(3)]))
    np.testing.assert_array_equal(want, ref)
    with pytest.raises(TypeError, match="cannot mix"):
        jax.numpy.stack([keys[0], np.zeros(2, np.uint32)])


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"a": 1}, {"a": 1, "b": 2}),
        ([1, 2], [1, 2, 3]),
        ((1,), [1]),
        ({"a": {"x": 1}}, {"a": {"y": 1}}),
        ({"a": [1]}, {"a": {"b": 1}}),
    ],
)
def test_tree_map_mismatch_says_what_jax_says(a, b):
    with pytest.raises(ValueError) as want:
        real_jax.tree_util.tree_map(lambda *x: None, a, b)
    with pytest.raises(ValueError) as got:
        purejit.tree_util.tree_map(lambda *x: None, a, b)
    assert str(got.value).startswith(str(want.value))
    assert "test_dropin_keys_and_trees.py" in str(got.value)  # and the user's line


def test_array_equal_of_keys(jax):
    k = jax.random.key(0)
    assert bool(jax.numpy.array_equal(k, jax.random.key(0)))
    assert not bool(jax.numpy.array_equal(k, jax.random.key(1)))
    assert not bool(jax.numpy.array_equal(k, np.zeros(2, np.uint32)))


def test_where_and_astype_of_keys(jax):
    """optax's MultiSteps selects between optimizer states holding keys, under jit."""
    keys = jax.random.split(jax.random.key(0), 3)
    other = jax.random.split(jax.random.key(1), 3)
    data = np.asarray(jax.random.key_data(keys))
    odata = np.asarray(jax.random.key_data(other))

    @jax.jit
    def pick(flag, a, b):
        return jax.numpy.astype(jax.numpy.where(flag, a, b), a.dtype)

    for flag in (True, False):
        got = pick(flag, keys, other)
        assert got.dtype == keys.dtype and got.shape == (3,)
        np.testing.assert_array_equal(jax.random.key_data(got), data if flag else odata)
    lanes = jax.numpy.where(np.array([True, False, True]), keys, other)
    np.testing.assert_array_equal(jax.random.key_data(lanes), [data[0], odata[1], data[2]])
    with pytest.raises(TypeError, match="cannot mix"):
        jax.numpy.where(True, keys, np.zeros((3, 2), np.uint32))
    with pytest.raises(TypeError, match="cannot be cast"):
        jax.numpy.astype(keys, np.uint32)
