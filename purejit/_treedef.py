"""Pytree structures: the node registry, `PyTreeDef`, flattening and unflattening.

The lowest layer of `purejit.tree_util`, apart so that the key paths (`_tree_keys`) and the
public helpers (`tree_util`) build on it without a cycle; `purejit.tree_util` re-exports every
public name here.
"""

from __future__ import annotations

import collections
import collections.abc
from typing import Any, Callable, Hashable, NamedTuple

from purejit import errors


class _NodeType(NamedTuple):
    flatten: Callable[[Any], tuple[list, Hashable]]
    unflatten: Callable[[Hashable, list], Any]
    # x -> ((key, child) pairs, aux): the key path entries of the children, when known
    flatten_with_keys: Callable[[Any], tuple[list, Hashable]] | None = None


_REGISTRY: dict[type, _NodeType] = {}


class _RegistryEntry(NamedTuple):
    """A registered node type as `jax._src.tree_util._registry` gives it."""

    to_iter: Callable[[Any], tuple[list, Hashable]]
    from_iter: Callable[[Hashable, list], Any]


class _RegistryView(collections.abc.Mapping):
    """The registered node types, read only, under JAX's private name `_registry` (libraries
    test `type(x) in _registry` and read `_registry[t].from_iter`)."""

    def __getitem__(self, t):
        node = _REGISTRY[t]
        return _RegistryEntry(node.flatten, node.unflatten)

    def __iter__(self):
        return iter(list(_REGISTRY))

    def __len__(self):
        return len(_REGISTRY)

    def __contains__(self, t):
        return t in _REGISTRY


_registry = _RegistryView()


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

    @property
    def num_nodes(self) -> int:
        """Nodes and leaves in the tree (a leaf is one node)."""
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves):
        """The tree of this structure holding `leaves` (`tree_unflatten(self, leaves)`)."""
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of `tree` at this structure's leaves (see `flatten_up_to`)."""
        return flatten_up_to(self, tree)

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with `inner` in place of each leaf (JAX's `PyTreeDef.compose`)."""
        if self.kind is None:
            return inner
        return PyTreeDef(self.kind, self.aux, tuple(c.compose(inner) for c in self.children))

    def node_data(self):
        """(node type, aux data) of the root; None for a leaf."""
        return None if self.kind is None else (self.kind, self.aux)

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and self._key() == other._key()

    def __hash__(self):
        try:
            return hash(self._key())
        except TypeError:
            # aux data need not be hashable (JAX allows a dict): equality still compares it
            aux = self.aux
            try:
                aux_hash = hash(aux)
            except TypeError:
                aux_hash = hash(type(aux))
            return hash((self.kind, aux_hash, self.children))

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


def flatten_one_level(tree) -> tuple[tuple, Hashable]:
    """The children and aux data of one pytree node, as `jax.tree_util.flatten_one_level`.

    Raises:
        ValueError: `tree` is a leaf (not a built-in or registered container)."""
    kind, node = _node_type(tree)
    if kind is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, aux = node.flatten(tree)
    return tuple(children), aux


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, PyTreeDef]:
    leaves: list = []
    return leaves, _flatten(tree, is_leaf, leaves)


# The recursions are module-level functions, not closures: a nested function that calls
# itself is a reference cycle holding every cell it closes over (here the leaves, i.e. device
# buffers), which only the cyclic GC frees; on a GPU, hundreds of 512 MiB outputs were
# waiting for it when the allocator ran out of memory.


def _flatten(x, is_leaf, leaves: list) -> PyTreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    kind, node = _node_type(x)
    if kind is None:
        leaves.append(x)
        return _LEAF
    children, aux = node.flatten(x)
    return PyTreeDef(kind, aux, tuple(_flatten(c, is_leaf, leaves) for c in children))


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    return _unflatten(treedef, iter(leaves))


def _unflatten(td: PyTreeDef, it) -> Any:
    if td.kind is None:
        return next(it)
    # a leaf child taken here: no call per leaf
    children = [next(it) if c.kind is None else _unflatten(c, it) for c in td.children]
    if td.kind in _REGISTRY:
        return _REGISTRY[td.kind].unflatten(td.aux, children)
    return td.kind(*children)  # namedtuple


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


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


def flatten_up_to(treedef: PyTreeDef, tree, what: str = "tree") -> list:
    """The subtrees of `tree` at the leaves of `treedef` (a prefix of tree's structure).

    Raises ValueError naming `what`, the path where the structures first differ and both
    sides there, and the user's line."""
    out: list = []

    def mismatch(path, td, x):
        return ValueError(
            f"tree structure mismatch: {what}'s structure "
            f"{tree_structure(x) if path else tree_structure(tree)} does not match {treedef}: "
            f"at {path or '(root)'}: expected {_node_name(td)}, got "
            f"{_node_name(tree_structure(x))}{errors.at(errors.user_location())}"
        )

    _flatten_up_to(treedef, tree, "", out, mismatch)
    return out


def _flatten_up_to(td: PyTreeDef, x, path: str, out: list, mismatch) -> None:
    if td.kind is None:
        out.append(x)
        return
    kind, node = _node_type(x)
    if kind is not td.kind:
        raise mismatch(path, td, x)
    children, aux = node.flatten(x)
    if aux != td.aux or len(children) != len(td.children):
        raise mismatch(path, td, x)
    for i, (c, sub) in enumerate(zip(children, td.children)):
        key = _dict_keys(td)[i] if td.kind in _DICTS else i
        _flatten_up_to(sub, c, f"{path}[{key!r}]", out, mismatch)
