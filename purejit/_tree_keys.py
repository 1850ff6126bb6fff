"""Pytree key paths (`SequenceKey`, `DictKey`, ..., `tree_flatten_with_path`, `keystr`) and
the prefix-structure errors written in JAX's words from them.

Apart from `_treedef` because paths are a view on top of a structure; `purejit.tree_util`
re-exports every public name here.
"""

from __future__ import annotations

import difflib
import textwrap
from typing import Any, Callable, Hashable, NamedTuple

from purejit._treedef import (
    _DICTS,
    _LEAF,
    PyTreeDef,
    _dict_keys,
    _is_namedtuple,
    _node_type,
    flatten_up_to,
    tree_structure,
    tree_unflatten,
)


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
