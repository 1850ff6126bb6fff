"""Pytree operations on structures against JAX's: prefix broadcasting, balanced reduction,
tuple treedefs, one level with keys, node types, `tree.static` and the registry object."""

import collections
import dataclasses

import jax
import numpy as np
import pytest

import purejit
from purejit import tree_util as tu

Point = collections.namedtuple("Point", "x y")


@pytest.mark.parametrize(
    "prefix,full",
    [
        (1, [2, (3, 4)]),
        ([1, {"a": 2}], [[3, 4], {"a": (5, 6, 7)}]),
        ({"w": 0, "b": None}, {"w": [1, 2], "b": None}),
        (Point(1, 2), Point([3, 4], {"k": 5})),
    ],
)
def test_broadcast_as_jax(prefix, full):
    want = jax.tree.broadcast(prefix, full)
    assert purejit.tree.broadcast(prefix, full) == want
    assert tu.tree_broadcast(prefix, full) == jax.tree_util.tree_broadcast(prefix, full)


def test_broadcast_refuses_a_non_prefix():
    with pytest.raises(ValueError):
        tu.tree_broadcast([1, 2, 3], [4, 5])


def test_reduce_associative_splits_as_jax():
    # a non-associative operation shows the bracketing: it must be JAX's
    def op(a, b):
        return f"({a} {b})"

    for n in range(1, 9):
        leaves = [str(i) for i in range(n)]
        assert purejit.tree.reduce_associative(op, leaves) == jax.tree.reduce_associative(
            op, leaves
        )
    assert tu.tree_reduce_associative(op, [], identity="e") == "e"
    with pytest.raises(TypeError, match="identity"):
        tu.tree_reduce_associative(op, [])
    x = {"a": np.arange(3.0), "b": [np.ones(3), np.full(3, 2.0)]}
    np.testing.assert_array_equal(
        tu.tree_reduce_associative(np.add, x), jax.tree_util.tree_reduce_associative(np.add, x)
    )


def test_treedef_tuple_and_one_level_with_keys():
    x, y = [1, 2, 3], {"a": 4, "b": 5}
    td = tu.treedef_tuple([tu.tree_structure(x), tu.tree_structure(y)])
    assert td == tu.tree_structure((x, y))
    assert (
        td.num_leaves
        == jax.tree_util.treedef_tuple([jax.tree.structure(x), jax.tree.structure(y)]).num_leaves
    )
    for tree in ([7, 8], {"b": 1, "a": 2}, (5,)):
        ours, aux = tu.flatten_one_level_with_keys(tree)
        theirs, _ = jax.tree_util.flatten_one_level_with_keys(tree)
        assert [(jax.tree_util.keystr((k,)), c) for k, c in theirs] == [
            (tu.keystr((k,)), c) for k, c in ours
        ]
    # a namedtuple's keys are its fields (jax 0.10.2 names the first field for every child
    # here, although its tree_flatten_with_path names each)
    ours, _ = tu.flatten_one_level_with_keys(Point(3, 4))
    assert [tu.keystr((k,)) for k, _ in ours] == [
        jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(Point(3, 4))[0]
    ]
    with pytest.raises(ValueError, match="can't tree-flatten"):
        tu.flatten_one_level_with_keys(3.0)


@pytest.mark.parametrize("typ", [list, tuple, dict, type(None), Point, int, np.ndarray, str])
def test_is_tree_node_as_jax(typ):
    assert tu.is_tree_node(typ) == jax.tree_util.is_tree_node(typ)
    assert tu.default_registry.is_node(typ) == jax.tree_util.default_registry.is_node(typ)


def test_static_field_stays_in_the_structure():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: np.ndarray
        op: str = purejit.tree.static(default="add")

    leaves, td = purejit.tree.flatten(Op(np.ones(2)))
    assert len(leaves) == 1 and purejit.tree.unflatten(td, leaves).op == "add"
    assert tu.default_registry.flatten(Op(np.ones(2)))[1] == td
    assert tu.default_registry.flatten_one_level(1.0) is None
