"""Pytrees: the tree utilities themselves, and pytrees as jit arguments and results."""

import collections

import jax
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import tree_util as tu

Point = collections.namedtuple("Point", ["x", "y"])


class Box:
    """A user class registered as a pytree node: `value` is a child, `tag` is static."""

    def __init__(self, value, tag):
        self.value, self.tag = value, tag


tu.register_pytree_node(Box, lambda b: ([b.value], b.tag), lambda tag, c: Box(c[0], tag))


def test_flatten_unflatten_round_trip_and_order():
    tree = {"b": (1, [2, None]), "a": Point(3, {"z": 4, "y": 5}), "c": Box(6, "t")}
    leaves, td = tu.tree_flatten(tree)
    assert leaves == [3, 5, 4, 1, 2, 6]  # dict keys sorted, None has no leaves
    back = tu.tree_unflatten(td, leaves)
    assert back["b"] == (1, [2, None]) and back["a"] == Point(3, {"y": 5, "z": 4})
    assert isinstance(back["c"], Box) and back["c"].tag == "t" and back["c"].value == 6
    assert td.num_leaves == 6
    # JAX flattens the same tree (without the custom node) in the same order
    plain = {"b": (1, [2, None]), "a": Point(3, {"z": 4, "y": 5})}
    assert tu.tree_leaves(plain) == jax.tree_util.tree_leaves(plain)


def test_treedef_equality_and_hash():
    a = tu.tree_structure({"w": (1, 2), "b": [3]})
    b = tu.tree_structure({"b": [9], "w": (7, 8)})
    c = tu.tree_structure({"w": [1, 2], "b": [3]})  # list instead of tuple
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert tu.tree_structure(Box(1, "x")) != tu.tree_structure(Box(1, "y"))  # aux differs


def test_tree_map_and_paths():
    tree = {"w": [1, 2], "b": Point(3, 4)}
    assert tu.tree_map(lambda v, u: v * 10 + u, tree, tree) == {"w": [11, 22], "b": Point(33, 44)}
    paths = tu.tree_paths(tu.tree_structure(tree), "p")
    assert paths == ["p['b'][0]", "p['b'][1]", "p['w'][0]", "p['w'][1]"]
    with pytest.raises(ValueError, match="does not match"):
        tu.tree_map(lambda a, b: a, tree, {"w": [1], "b": Point(3, 4)})


def test_register_twice_is_an_error():
    with pytest.raises(ValueError, match="already registered"):
        tu.register_pytree_node(Box, lambda b: ([], None), lambda a, c: Box(None, a))


def test_pytree_arguments_and_results_in_jit():
    @purejit.jit
    def f(params, batch):
        w, b = params["layer"]
        y = batch.x @ w + b
        return {"y": y, "stats": (jnp.mean(y), [jnp.max(y)], None), "pt": Point(batch.y * 2, y)}

    rng = np.random.default_rng(0)
    params = {"layer": (rng.standard_normal((3, 2)).astype(np.float32), np.ones(2, np.float32))}
    batch = Point(rng.standard_normal((4, 3)).astype(np.float32), np.float32(1.5))
    out = f(params, batch)
    y = batch.x @ params["layer"][0] + params["layer"][1]
    assert set(out) == {"y", "stats", "pt"}
    np.testing.assert_allclose(out["y"], y, rtol=1e-5)
    mean, (mx,), none = out["stats"]
    assert none is None and isinstance(out["stats"][1], list)
    np.testing.assert_allclose(mean, y.mean(), rtol=1e-5)
    np.testing.assert_allclose(mx, y.max(), rtol=1e-6)
    assert isinstance(out["pt"], Point) and float(out["pt"].x) == 3.0


def test_registered_node_in_and_out_of_jit():
    f = purejit.jit(lambda b: Box(b.value * 2, b.tag + "!"))
    out = f(Box(np.arange(3, dtype=np.float32), "t"))
    assert isinstance(out, Box) and out.tag == "t!"
    np.testing.assert_array_equal(out.value, [0, 2, 4])
    # the static part (aux data) is part of the cache key
    f(Box(np.arange(3, dtype=np.float32), "t"))
    f(Box(np.arange(3, dtype=np.float32), "u"))
    assert (f.stats.misses, f.stats.hits) == (2, 1)


def test_structure_change_is_a_cache_miss():
    f = purejit.jit(lambda t: sum(t))
    f((1.0, 2.0))
    f([1.0, 2.0])
    f((1.0, 2.0, 3.0))
    f((4.0, 5.0))
    assert (f.stats.misses, f.stats.hits) == (3, 1)


def test_empty_and_leafless_trees():
    f = purejit.jit(lambda x, nothing: (x, nothing, {}, []))
    x, n, d, lst = f(np.float32(1), None)
    assert n is None and d == {} and lst == []
    assert float(x) == 1.0


def test_ordered_dict_and_defaultdict():
    od = collections.OrderedDict([("z", 1), ("a", 2)])
    leaves, td = tu.tree_flatten(od)
    assert leaves == [1, 2]  # insertion order, as in JAX
    assert tu.tree_unflatten(td, [3, 4]) == collections.OrderedDict([("z", 3), ("a", 4)])
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, td = tu.tree_flatten(dd)
    assert leaves == [2, 1]  # sorted keys
    back = tu.tree_unflatten(td, [5, 6])
    assert back == {"a": 5, "b": 6} and back.default_factory is list
    assert leaves == jax.tree_util.tree_leaves(dd)
    assert tu.tree_paths(td, "d") == ["d['a']", "d['b']"]
    out = purejit.jit(lambda t: collections.OrderedDict(y=t["z"] * 2))(od)
    assert isinstance(out, collections.OrderedDict) and int(out["y"]) == 2
