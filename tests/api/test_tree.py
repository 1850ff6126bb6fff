"""purejit.tree and purejit.tree_util against jax.tree / jax.tree_util: leaves, structure,
key paths, reductions, transposes, registered classes and Partial (also through jit)."""

import collections
import dataclasses
import functools

import jax
import numpy as np
import pytest

import purejit
from purejit import tree_util as ptu

Point = collections.namedtuple("Point", ["x", "y"])


def _tree():
    return {
        "b": [1, (2.0, None), Point(3, [4])],
        "a": collections.OrderedDict([("z", 5), ("y", 6)]),
        "c": {"k": np.arange(3)},
    }


def _same_leaves(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert type(x) is type(y) and np.array_equal(x, y)


def test_flatten_leaves_structure_like_jax():
    t = _tree()
    _same_leaves(purejit.tree.leaves(t), jax.tree.leaves(t))
    leaves, td = purejit.tree.flatten(t)
    jleaves, jtd = jax.tree.flatten(t)
    _same_leaves(leaves, jleaves)
    assert td.num_leaves == jtd.num_leaves and td.num_nodes == jtd.num_nodes
    back = purejit.tree.unflatten(td, leaves)
    assert jax.tree.structure(back) == jtd
    assert td.unflatten(list(range(td.num_leaves))) == jtd.unflatten(range(jtd.num_leaves))
    assert purejit.tree.structure(t) == td


def test_map_reduce_all_transpose():
    t = _tree()
    doubled = purejit.tree.map(lambda x: x * 2, t)
    jdoubled = jax.tree.map(lambda x: x * 2, t)
    _same_leaves(jax.tree.leaves(doubled), jax.tree.leaves(jdoubled))
    # a prefix tree as the second argument: each leaf of the first maps over a subtree
    pre = purejit.tree.map(lambda x, y: (x, len(y)), [1, 2], [[0, 0], [0]])
    assert pre == jax.tree.map(lambda x, y: (x, len(y)), [1, 2], [[0, 0], [0]])
    plus = lambda a, b: a + b  # noqa: E731
    flat = {"a": 1, "b": [2, 3]}
    assert purejit.tree.reduce(plus, flat) == jax.tree.reduce(plus, flat)
    assert purejit.tree.reduce(plus, flat, 10) == jax.tree.reduce(plus, flat, 10)
    assert purejit.tree.all([1, (True, 2)]) and not purejit.tree.all([1, (0, 2)])
    rows = [{"w": 1, "b": 2}, {"w": 3, "b": 4}, {"w": 5, "b": 6}]
    outer = purejit.tree.structure([0, 0, 0])
    inner = purejit.tree.structure({"w": 0, "b": 0})
    got = purejit.tree.transpose(outer, inner, rows)
    want = jax.tree.transpose(
        jax.tree.structure([0, 0, 0]), jax.tree.structure({"w": 0, "b": 0}), rows
    )
    assert got == want
    assert purejit.tree.transpose(outer, None, rows) == want


def test_key_paths_and_keystr_like_jax():
    @dataclasses.dataclass
    class Layer:
        w: object
        b: object
        name: str = dataclasses.field(default="l", metadata={"static": True})

    ptu.register_dataclass(Layer)
    jax.tree_util.register_dataclass(Layer)
    t = {"layers": [Layer(1, 2), Layer(3, (4, 5))], "p": Point(6, 7), "s": {"a": 8}}
    got = purejit.tree.leaves_with_path(t)
    want = jax.tree.leaves_with_path(t)
    assert [ptu.keystr(p) for p, _ in got] == [jax.tree_util.keystr(p) for p, _ in want]
    simple = [ptu.keystr(p, simple=True, separator="/") for p, _ in got]
    assert simple == [jax.tree_util.keystr(p, simple=True, separator="/") for p, _ in want]
    assert [x for _, x in got] == [x for _, x in want]
    mapped = purejit.tree.map_with_path(lambda p, x: ptu.keystr(p), t)
    jmapped = jax.tree.map_with_path(lambda p, x: jax.tree_util.keystr(p), t)
    assert jax.tree.leaves(mapped) == jax.tree.leaves(jmapped)
    # the static field is part of the structure: a different name is a different tree
    assert purejit.tree.structure(Layer(1, 2, "x")) != purejit.tree.structure(Layer(1, 2))


def _register_both(register, cls, *args):
    register[0](cls, *args)
    register[1](cls, *args)


def test_registered_classes_like_jax():
    class Box:
        def __init__(self, a, b, tag):
            self.a, self.b, self.tag = a, b, tag

        def tree_flatten(self):
            return (self.a, self.b), self.tag

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children, aux)

    ptu.register_pytree_node_class(Box)
    jax.tree_util.register_pytree_node_class(Box)
    box = Box(1, [2, 3], "t")
    assert purejit.tree.leaves(box) == jax.tree.leaves(box) == [1, 2, 3]
    got = [ptu.keystr(p) for p, _ in purejit.tree.leaves_with_path(box)]
    assert got == [jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(box)]
    assert purejit.tree.map(lambda x: x + 1, box).tag == "t"

    class Keyed:
        def __init__(self, u, v):
            self.u, self.v = u, v

    def fwk(k):
        return [(jax.tree_util.GetAttrKey("u"), k.u), (jax.tree_util.GetAttrKey("v"), k.v)], None

    def pfwk(k):
        return [(ptu.GetAttrKey("u"), k.u), (ptu.GetAttrKey("v"), k.v)], None

    ptu.register_pytree_with_keys(Keyed, pfwk, lambda aux, c: Keyed(*c))
    jax.tree_util.register_pytree_with_keys(Keyed, fwk, lambda aux, c: Keyed(*c))
    k = Keyed(1, {"q": 2})
    assert [ptu.keystr(p) for p, _ in purejit.tree.leaves_with_path(k)] == [
        jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(k)
    ]

    @ptu.register_static
    @jax.tree_util.register_static
    class Config:
        def __init__(self, n):
            self.n = n

        def __hash__(self):
            return hash(self.n)

        def __eq__(self, other):
            return isinstance(other, Config) and other.n == self.n

    c = Config(3)
    assert purejit.tree.leaves([c, 1]) == jax.tree.leaves([c, 1]) == [1]
    assert purejit.tree.structure([Config(3)]) == purejit.tree.structure([Config(3)])
    assert purejit.tree.structure([Config(3)]) != purejit.tree.structure([Config(4)])


def test_pytrees_through_jit():
    @dataclasses.dataclass
    class Params:
        w: object
        scale: float = dataclasses.field(default=2.0, metadata={"static": True})

    ptu.register_dataclass(Params)

    @purejit.jit
    def f(p, fn):
        return fn(p.w * p.scale)

    add = ptu.Partial(purejit.numpy.add, np.float32(1))
    out = f(Params(np.arange(3, dtype=np.float32)), add)
    np.testing.assert_array_equal(np.asarray(out), np.arange(3) * 2.0 + 1)
    assert purejit.tree.leaves(add) == jax.tree.leaves(jax.tree_util.Partial(np.add, np.float32(1)))
    nested = ptu.Partial(functools.partial(np.add, 1))
    assert nested(2) == 3 and purejit.tree.leaves(nested) == []


def test_structure_mismatch_names_both():
    with pytest.raises(ValueError, match="mismatch"):
        purejit.tree.map(lambda a, b: a, [1, 2], (1, 2))
    with pytest.raises(TypeError, match="tree_transpose"):
        purejit.tree.transpose(
            purejit.tree.structure([0, 0]), purejit.tree.structure([0]), [1, 2, 3]
        )


def test_flattening_makes_no_reference_cycle():
    """Leaves are freed as soon as the caller drops them, without the cyclic GC (a
    self-referencing closure used to keep device buffers alive until a collection)."""
    import gc
    import weakref

    class Leaf:
        pass

    enabled = gc.isenabled()
    gc.disable()
    try:
        for op in (
            lambda t: purejit.tree_util.tree_flatten(t),
            lambda t: purejit.tree_util.tree_leaves(t),
            lambda t: purejit.tree_util.tree_flatten_with_path(t),
            lambda t: purejit.tree_util.tree_map(lambda v: v, t),
            lambda t: purejit.tree_util.tree_unflatten(
                purejit.tree_util.tree_structure(t), purejit.tree_util.tree_leaves(t)
            ),
        ):
            leaf = Leaf()
            ref = weakref.ref(leaf)
            out = op({"a": (leaf, [1, None])})
            del out, leaf
            assert ref() is None
    finally:
        if enabled:
            gc.enable()
