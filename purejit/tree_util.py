"""Pytrees: nested tuples, lists, dicts, None, namedtuples and registered classes.

`tree_flatten(x)` returns the leaves and a hashable `PyTreeDef`; `tree_unflatten` rebuilds.
Dict keys are sorted, as in JAX. `None` is a node with no children.
"""

from __future__ import annotations

import collections
from typing import Any, Callable, Hashable, NamedTuple

from purejit import errors


class _NodeType(NamedTuple):
    flatten: Callable[[Any], tuple[list, Hashable]]
    unflatten: Callable[[Hashable, list], Any]


_REGISTRY: dict[type, _NodeType] = {}


def register_pytree_node(cls: type, flatten_func, unflatten_func) -> None:
    """Register `cls` as a pytree node.

    Args:
        cls: the class.
        flatten_func: `x -> (children, aux_data)`; aux_data must be hashable.
        unflatten_func: `(aux_data, children) -> x`.
    """
    if cls in _REGISTRY:
        raise ValueError(f"{cls.__name__} is already registered as a pytree node")
    _REGISTRY[cls] = _NodeType(flatten_func, unflatten_func)


register_pytree_node(tuple, lambda t: (list(t), None), lambda _, c: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda _, c: list(c))
register_pytree_node(
    dict,
    lambda d: ([d[k] for k in sorted(d)], tuple(sorted(d))),
    lambda keys, c: dict(zip(keys, c)),
)
register_pytree_node(type(None), lambda _: ([], None), lambda _, c: None)
# as in JAX: an OrderedDict keeps its insertion order, a defaultdict sorts its keys like a dict
register_pytree_node(
    collections.OrderedDict,
    lambda d: (list(d.values()), tuple(d)),
    lambda keys, c: collections.OrderedDict(zip(keys, c)),
)
register_pytree_node(
    collections.defaultdict,
    lambda d: ([d[k] for k in sorted(d)], (d.default_factory, tuple(sorted(d)))),
    lambda aux, c: collections.defaultdict(aux[0], zip(aux[1], c)),
)


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields") and type(x) is not tuple


class PyTreeDef:
    """The structure of a pytree; hashable and comparable."""

    __slots__ = ("kind", "aux", "children", "num_leaves")

    def __init__(self, kind, aux, children: tuple):
        self.kind = kind  # a type, or None for a leaf
        self.aux = aux
        self.children = children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    def _key(self):
        return (self.kind, self.aux, self.children)

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self.kind is None:
            return "*"
        inner = ", ".join(map(repr, self.children))
        if self.kind is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.kind is list:
            return f"[{inner}]"
        if self.kind is dict:
            return "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.aux, self.children)) + "}"
        if self.kind is type(None):
            return "None"
        return f"{self.kind.__name__}({inner})"


_LEAF = PyTreeDef(None, None, ())


def _node_type(x):
    t = type(x)
    if t in _REGISTRY:
        return t, _REGISTRY[t]
    if _is_namedtuple(x):
        return t, _NodeType(lambda n: (list(n), None), lambda _, c, t=t: t(*c))
    return None, None


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
    leaves: list = []

    def rec(x):
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return _LEAF
        kind, node = _node_type(x)
        if kind is None:
            leaves.append(x)
            return _LEAF
        children, aux = node.flatten(x)
        return PyTreeDef(kind, aux, tuple(rec(c) for c in children))

    return leaves, rec(tree)


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    it = iter(leaves)

    def rec(td):
        if td.kind is None:
            return next(it)
        children = [rec(c) for c in td.children]
        if td.kind in _REGISTRY:
            return _REGISTRY[td.kind].unflatten(td.aux, children)
        return td.kind(*children)  # namedtuple

    out = rec(treedef)
    return out


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f: Callable, tree, *rest, is_leaf=None):
    leaves, td = tree_flatten(tree, is_leaf)
    others = [td_flatten_up_to(td, r, f"tree_map: argument {k + 2}") for k, r in enumerate(rest)]
    return tree_unflatten(td, [f(x, *xs) for x, *xs in zip(leaves, *others)])


def td_flatten_up_to(treedef: PyTreeDef, tree, what: str = "tree") -> list:
    leaves, td = tree_flatten(tree, is_leaf=None)
    if td != treedef:
        raise ValueError(
            f"{what}'s structure {td} does not match the first tree's {treedef}: "
            f"{tree_difference(treedef, td, 'first', 'other')}"
            f"{errors.at(errors.user_location())}"
        )
    return leaves


def _node_name(td: PyTreeDef) -> str:
    if td.kind is None:
        return "a leaf"
    if td.kind in _DICTS:
        return f"a dict with keys {list(_dict_keys(td))}"
    n = len(td.children)
    kind = "None" if td.kind is type(None) else td.kind.__name__
    return f"a {kind} of {n} element{'s' if n != 1 else ''}" if n or kind != "None" else "None"


def tree_difference(a: PyTreeDef, b: PyTreeDef, name_a: str = "a", name_b: str = "b") -> str:
    """Where two tree structures first differ, for error messages: `at [1]['w']: a has a
    leaf, b has a tuple of 2 elements`."""

    def rec(x, y, path):
        same_node = x.kind is y.kind and x.aux == y.aux and len(x.children) == len(y.children)
        if not same_node:
            return (
                f"at {path or '(root)'}: {name_a} has {_node_name(x)}, {name_b} has {_node_name(y)}"
            )
        for i, (cx, cy) in enumerate(zip(x.children, y.children)):
            key = _dict_keys(x)[i] if x.kind in _DICTS else i
            found = rec(cx, cy, f"{path}[{key!r}]")
            if found:
                return found
        return None

    return rec(a, b, "") or "they differ in their node data"


_DICTS = (dict, collections.OrderedDict, collections.defaultdict)


def _dict_keys(td: PyTreeDef) -> tuple:
    return td.aux[1] if td.kind is collections.defaultdict else td.aux


def tree_paths(treedef: PyTreeDef, prefix: str = "") -> list[str]:
    """A readable path for every leaf, e.g. `x['w'][0]`, for error messages."""
    out: list[str] = []

    def rec(td, path):
        if td.kind is None:
            out.append(path)
            return
        for i, c in enumerate(td.children):
            key = _dict_keys(td)[i] if td.kind in _DICTS else i
            rec(c, f"{path}[{key!r}]")

    rec(treedef, prefix)
    return out
