"""Pytrees: nested tuples, lists, dicts, None, namedtuples and registered classes.

`tree_flatten(x)` returns the leaves and a hashable `PyTreeDef`; `tree_unflatten` rebuilds.
Dict keys are sorted, as in JAX. `None` is a node with no children.

As in `jax.tree_util`: classes register with `register_pytree_node`,
`register_pytree_node_class`, `register_pytree_with_keys(_class)`, `register_dataclass` or
`register_static`; every leaf has a key path (`tree_flatten_with_path`, `keystr`) made of
`SequenceKey`, `DictKey`, `GetAttrKey` and `FlattenedIndexKey`; `Partial` is a
`functools.partial` whose bound arguments are pytree children.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Iterable

# the structures and the key paths live in their own modules; their public names are this one's
from purejit._tree_keys import (  # noqa: F401 - re-exported
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    SequenceKey,
    _children_with_keys,
    _prefix_error,
    keystr,
    tree_flatten_with_path,
    tree_leaves_with_path,
    tree_map_with_path,
)
from purejit._treedef import (  # noqa: F401 - re-exported
    _LEAF,
    _REGISTRY,
    PyTreeDef,
    _NodeType,
    _node_type,
    _registry,
    flatten_one_level,
    flatten_up_to,
    register_pytree_node,
    tree_difference,
    tree_flatten,
    tree_leaves,
    tree_paths,
    tree_structure,
    tree_unflatten,
)


def tree_map(f: Callable, tree, *rest, is_leaf=None):
    leaves, td = tree_flatten(tree, is_leaf)
    others = []
    for k, r in enumerate(rest):
        try:
            others.append(flatten_up_to(td, r, f"tree_map: argument {k + 2}"))
        except ValueError as e:
            # JAX's words first (libraries match on them), then purejit's, with the user's line
            err = next(_prefix_error((), tree, r, is_leaf), None)
            if err is None:
                raise
            raise ValueError(f"{err('tree_map tree')}\n{e}") from None
    return tree_unflatten(td, [f(x, *xs) for x, *xs in zip(leaves, *others)])


# ---- reductions, transposes ---------------------------------------------------------------


_NO_INIT = object()


def tree_reduce(function: Callable, tree, initializer=_NO_INIT, is_leaf=None):
    """`functools.reduce(function, leaves[, initializer])`."""
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INIT:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf=None) -> bool:
    """Whether every leaf is truthy."""
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose):
    """Turn an outer tree of inner trees into an inner tree of outer trees."""
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(flatten_up_to(outer_treedef, pytree_to_transpose)[0])
    inner, outer = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != inner * outer:
        raise TypeError(
            f"tree_transpose: {treedef} has {treedef.num_leaves} leaves, not outer {outer} "
            f"x inner {inner} ({outer_treedef} of {inner_treedef})"
        )
    rows = [flat[i * inner : (i + 1) * inner] for i in range(outer)]
    subtrees = [tree_unflatten(outer_treedef, col) for col in zip(*rows)]
    return tree_unflatten(inner_treedef, subtrees)


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    return list(treedef.children)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    return not treedef.children


def all_leaves(iterable, is_leaf=None) -> bool:
    """Whether every element of `iterable` is a leaf."""
    return all(tree_structure(x, is_leaf) == _LEAF for x in iterable)


# ---- registering classes -----------------------------------------------------------------------


def register_pytree_node_class(cls):
    """Register `cls` through its `tree_flatten()` method and `tree_unflatten(aux, children)`
    classmethod; returns `cls` (a class decorator)."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """Register `nodetype` with `flatten_with_keys(x) -> ([(key, child), ...], aux)`."""

    def flatten(x):
        pairs, aux = flatten_with_keys(x)
        return [c for _, c in pairs], aux

    if nodetype in _REGISTRY:
        raise ValueError(f"{nodetype.__name__} is already registered as a pytree node")
    _REGISTRY[nodetype] = _NodeType(flatten_func or flatten, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls):
    """Register `cls` through its `tree_flatten_with_keys()` method and `tree_unflatten`."""
    flat = getattr(cls, "tree_flatten", None)
    register_pytree_with_keys(
        cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
        (lambda x: x.tree_flatten()) if flat is not None else None,
    )  # fmt: skip
    return cls


def register_dataclass(nodetype, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass: `data_fields` are children, `meta_fields` (hashable) go into
    the structure. For a dataclass both default from its fields (`field(metadata=
    {"static": True})` marks a meta field); returns `nodetype` (usable as a decorator)."""
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(
                f"register_dataclass: {nodetype.__name__} is not a dataclass; pass data_fields "
                "and meta_fields"
            )
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        meta = [f.name for f in fields if f.metadata.get("static", False)]
        data = [f.name for f in fields if not f.metadata.get("static", False)]
        data_fields = data if data_fields is None else data_fields
        meta_fields = meta if meta_fields is None else meta_fields
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten_with_keys(x):
        pairs = [(GetAttrKey(k), getattr(x, k)) for k in data_fields]
        return pairs, tuple(getattr(x, k) for k in meta_fields)

    def unflatten(aux, children):
        return nodetype(**dict(zip(meta_fields, aux)), **dict(zip(data_fields, children)))

    register_pytree_with_keys(nodetype, flatten_with_keys, unflatten)
    return nodetype


def register_static(cls):
    """Register `cls` as a node without children: the instance itself is the (hashable)
    structure, so jit treats it as static. Returns `cls`."""
    register_pytree_node(cls, lambda x: ([], x), lambda aux, _: aux)
    return cls


class _CallableShim:
    """Wraps a `functools.partial` given to `Partial`, so its arguments stay its own."""

    def __init__(self, fun):
        self.fun = fun

    def __call__(self, *args, **kw):
        return self.fun(*args, **kw)

    def __hash__(self):
        return hash(self.fun)

    def __eq__(self, other):
        return self.fun == (other.fun if isinstance(other, _CallableShim) else other)


class Partial(functools.partial):
    """A `functools.partial` that is a pytree: the bound arguments are its children and the
    function its (static) structure, so it can be passed into jitted functions."""

    def __new__(cls, func, *args, **kw):
        if isinstance(func, functools.partial):  # keep the inner partial's arguments apart
            func = _CallableShim(func)
        return super().__new__(cls, func, *args, **kw)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]),
)


# ---- operations on structures: prefix broadcasting, balanced reduction, tuple treedefs --------


def tree_broadcast(prefix_tree, full_tree, is_leaf: Callable[[Any], bool] | None = None):
    """`full_tree`'s structure with each leaf of `prefix_tree` repeated over the subtree of
    `full_tree` it prefixes (`jax.tree.broadcast`).

    Raises:
        ValueError: `prefix_tree` is not a prefix of `full_tree` (naming where they differ).
    """
    leaves, td = tree_flatten(prefix_tree, is_leaf)
    subtrees = flatten_up_to(td, full_tree, "tree_broadcast: full_tree")
    out = []
    for leaf, sub in zip(leaves, subtrees):
        out.extend([leaf] * tree_structure(sub).num_leaves)
    return tree_unflatten(tree_structure(full_tree), out)


class _Unspecified:
    def __repr__(self):
        return "<unspecified>"


_UNSPECIFIED = _Unspecified()


def tree_reduce_associative(
    operation: Callable, tree, *, identity=_UNSPECIFIED, is_leaf=None
):  # fmt: skip
    """The leaves combined by `operation` in a balanced binary tree (the first len // 2
    leaves on the left, as JAX splits), so an associative `operation` gives `tree_reduce`'s
    result at logarithmic depth (`jax.tree.reduce_associative`).

    Raises:
        TypeError: no leaves and no `identity`.
    """
    return _balanced(tree_leaves(tree, is_leaf), operation, identity)


def _balanced(seq: list, operation: Callable, identity):
    if not seq:
        if identity is _UNSPECIFIED:
            raise TypeError(
                "tree_reduce_associative: the tree has no leaves; pass identity= to reduce "
                "an empty tree"
            )
        return identity
    if len(seq) == 1:
        return seq[0]
    half = len(seq) // 2
    return operation(
        _balanced(seq[:half], operation, identity), _balanced(seq[half:], operation, identity)
    )


def treedef_tuple(treedefs: Iterable):
    """The structure (`PyTreeDef`) of a tuple whose elements have `treedefs`."""
    children = tuple(treedefs)
    for td in children:
        if not isinstance(td, PyTreeDef):
            raise TypeError(f"treedef_tuple: expected PyTreeDefs, got {type(td).__name__}")
    return PyTreeDef(tuple, None, children)


def flatten_one_level_with_keys(tree) -> tuple[list, Any]:
    """`([(key, child), ...], aux data)` of one pytree node (`flatten_one_level` with the
    keys `tree_flatten_with_path` uses).

    Raises:
        ValueError: `tree` is a leaf."""
    kind, node = _node_type(tree)
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return _children_with_keys(tree, kind, node)


def is_tree_node(typ: type) -> bool:
    """Whether instances of `typ` are pytree nodes (built in, registered, or a namedtuple)."""
    if typ in _REGISTRY:
        return True
    return isinstance(typ, type) and issubclass(typ, tuple) and hasattr(typ, "_fields")


def static(**kwargs):
    """`dataclasses.field(...)` marked static: a dataclass registered with
    `register_dataclass` keeps the field in its structure, not among its leaves."""
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)


class PyTreeRegistry:
    """The pytree registry as an object (JAX's `tree_util.default_registry`): flattening and
    node queries against purejit's one registry."""

    def flatten(self, tree, leaf_predicate: Callable[[Any], bool] | None = None):
        return tree_flatten(tree, leaf_predicate)

    def flatten_one_level(self, tree):
        """(children, aux data), or None for a leaf (as JAX's registry answers)."""
        try:
            return flatten_one_level(tree)
        except ValueError:
            return None

    def flatten_one_level_with_keys(self, tree):
        try:
            return flatten_one_level_with_keys(tree)
        except ValueError:
            return None

    def is_node(self, typ: type) -> bool:
        return is_tree_node(typ)

    def __repr__(self):
        return "purejit.tree_util.default_registry"


default_registry = PyTreeRegistry()
