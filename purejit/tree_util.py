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

import collections
import collections.abc
import dataclasses
import difflib
import functools
import textwrap
from typing import Any, Callable, Hashable, Iterable, NamedTuple

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
    children = [_unflatten(c, it) for c in td.children]
    if td.kind in _REGISTRY:
        return _REGISTRY[td.kind].unflatten(td.aux, children)
    return td.kind(*children)  # namedtuple


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]


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


# ---- key paths -------------------------------------------------------------------------------


class SequenceKey(NamedTuple):
    """The key of a tuple or list element: `[idx]`."""

    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


class DictKey(NamedTuple):
    """The key of a dict entry: `[key]`."""

    key: Hashable

    def __str__(self):
        return f"[{self.key!r}]"


class GetAttrKey(NamedTuple):
    """The key of an attribute (namedtuple field, dataclass field): `.name`."""

    name: str

    def __str__(self):
        return f".{self.name}"


class FlattenedIndexKey(NamedTuple):
    """The key of a child of a node registered without keys: its position."""

    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


# JAX's names for a path's parts and a whole path (tree_flatten_with_path's keys)
KeyEntry = SequenceKey | DictKey | GetAttrKey | FlattenedIndexKey
KeyPath = tuple


def _children_with_keys(x, kind, node) -> tuple[list, Hashable]:
    """((key, child) pairs, aux) of the node `x` of type `kind`."""
    if node.flatten_with_keys is not None:
        pairs, aux = node.flatten_with_keys(x)
        return list(pairs), aux
    children, aux = node.flatten(x)
    if kind in (tuple, list):
        keys = [SequenceKey(i) for i in range(len(children))]
    elif kind in _DICTS:
        keys = [DictKey(k) for k in _dict_keys(PyTreeDef(kind, aux, ()))]
    elif _is_namedtuple(x):
        keys = [GetAttrKey(f) for f in type(x)._fields]
    else:
        keys = [FlattenedIndexKey(i) for i in range(len(children))]
    return list(zip(keys, children)), aux


def tree_flatten_with_path(tree, is_leaf: Callable[[Any], bool] | None = None):
    """`([(key path, leaf), ...], treedef)`: every leaf with the keys that reach it."""
    out: list = []
    treedef = _flatten_with_path(tree, (), is_leaf, out)
    return out, treedef


def _flatten_with_path(x, path, is_leaf, out: list) -> PyTreeDef:
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return _LEAF
    kind, node = _node_type(x)
    if kind is None:
        out.append((path, x))
        return _LEAF
    pairs, aux = _children_with_keys(x, kind, node)
    return PyTreeDef(
        kind, aux, tuple(_flatten_with_path(c, path + (k,), is_leaf, out) for k, c in pairs)
    )


def tree_leaves_with_path(tree, is_leaf=None) -> list:
    """`[(key path, leaf), ...]` (see `tree_flatten_with_path`)."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f: Callable, tree, *rest, is_leaf=None):
    """`tree_map` whose `f(path, leaf, *others)` also gets each leaf's key path."""
    pairs, td = tree_flatten_with_path(tree, is_leaf)
    others = [flatten_up_to(td, r) for r in rest]
    return tree_unflatten(td, [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
    """A key path as text: `['a'][0].w`, or with `simple=True` the bare keys (`a/0/w` with
    `separator="/"`)."""
    if simple:
        return separator.join(str(k[0]) if isinstance(k, tuple) and len(k) == 1 else str(k)
                              for k in keys)  # fmt: skip
    return separator.join(map(str, keys))


# ---- prefix trees, reductions, transposes ------------------------------------------------------


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


def _key_text(k) -> str:
    return str(k[0]) if isinstance(k, tuple) and len(k) == 1 else str(k)


def _prefix_error(path: tuple, prefix, full, is_leaf):
    """Yields `name -> ValueError` for the first place where `full` does not extend the
    pytree `prefix`, in JAX's words (`pytree structure error: ...` at a key path)."""
    if tree_structure(prefix, is_leaf).kind is None:
        return  # a leaf is a prefix of anything
    where = "".join(map(str, path))
    if type(prefix) is not type(full):
        yield lambda name: ValueError(
            "pytree structure error: different types at key path\n"
            f"    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix)}\n"
            "but at the same key path the full pytree has a subtree of different type\n"
            f"    {type(full)}."
        )
        return
    p_pairs, p_aux = _children_with_keys(prefix, *_node_type(prefix))
    f_pairs, f_aux = _children_with_keys(full, *_node_type(full))
    if isinstance(prefix, (list, tuple)) and len(prefix) != len(full):
        ty = type(prefix).__name__
        yield lambda name: ValueError(
            f"pytree structure error: different lengths of {ty} at key path\n"
            f"    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type {ty} of "
            f"length {len(prefix)}, but the full pytree has a subtree of the same type but "
            f"of length {len(full)}."
        )
        return
    p_keys, f_keys = [k for k, _ in p_pairs], [k for k, _ in f_pairs]
    if len(p_pairs) != len(f_pairs):
        diff = set(map(_key_text, p_keys)).symmetric_difference(map(_key_text, f_keys))
        yield lambda name: ValueError(
            "pytree structure error: different numbers of pytree children at key path\n"
            f"    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix)}\n"
            f"with {len(p_pairs)} child keys\n"
            f"    {' '.join(map(_key_text, p_keys))}\n"
            "but at the same key path the full pytree has a subtree of the same type but "
            f"with {len(f_pairs)} child keys\n"
            f"    {' '.join(map(_key_text, f_keys))}\n"
            "so the symmetric difference on key sets is\n"
            f"    {' '.join(sorted(diff, key=str))}"
        )
        return
    if p_aux != f_aux:
        p_meta, f_meta = str(p_aux), str(f_aux)
        diff = "\n".join(difflib.ndiff(p_meta.splitlines(), f_meta.splitlines()))
        yield lambda name: ValueError(
            "pytree structure error: different pytree metadata at key path\n"
            f"    {name}{where}\n"
            f"At that key path, the prefix pytree {name} has a subtree of type\n"
            f"    {type(prefix)}\n"
            f"with metadata\n    {p_meta}\n"
            "but at the same key path the full pytree has a subtree of the same type but "
            f"with metadata\n    {f_meta}\n"
            "so the diff in the metadata at these pytree nodes is\n"
            f"{textwrap.indent(diff, '    ')}"
        )
        return
    for (k, a), (_, b) in zip(p_pairs, f_pairs):
        yield from _prefix_error((*path, k), a, b, is_leaf)


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
