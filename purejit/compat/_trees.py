"""`jax.tree_util` / `jax.tree` as libraries see them in drop-in mode: typed PRNG keys are
leaves, as in JAX.

purejit keeps a typed key a pytree node over its uint32 data, so `jit`, `vmap`, `scan` and
`grad` carry keys without special cases. JAX treats a key array as one leaf of an extended
dtype, and library code relies on it: optax's `tree_split_key_like` builds a tree of keys
whose structure must equal the tree it mirrors, and `jax.tree.map(lambda t: t.dtype, state)`
must see a key's dtype. The functions here are purejit's with a key counted as a leaf; the
trees they build are ordinary purejit trees that purejit's transformations take as they are.
"""

from __future__ import annotations

import functools

from purejit import tree_util as _tu
from purejit.random._keys import PRNGKeyArray


def _is_key(x) -> bool:
    return isinstance(x, PRNGKeyArray)


def _with_keys(is_leaf):
    if is_leaf is None:
        return _is_key
    return lambda x: _is_key(x) or bool(is_leaf(x))


def _keys_are_leaves(fn):
    @functools.wraps(fn)
    def wrapped(*args, is_leaf=None, **kwargs):
        return fn(*args, is_leaf=_with_keys(is_leaf), **kwargs)

    return wrapped


def _positional(fn, where: int):
    """`fn` whose `is_leaf` may also come positionally, at index `where`."""
    inner = _keys_are_leaves(fn)

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if len(args) > where:
            args, kwargs = args[:where], {**kwargs, "is_leaf": args[where]}
        return inner(*args, **kwargs)

    return wrapped


TREE_UTIL = {
    "tree_flatten": _positional(_tu.tree_flatten, 1),
    "tree_leaves": _positional(_tu.tree_leaves, 1),
    "tree_structure": _positional(_tu.tree_structure, 1),
    "tree_flatten_with_path": _positional(_tu.tree_flatten_with_path, 1),
    "tree_leaves_with_path": _positional(_tu.tree_leaves_with_path, 1),
    "tree_map": _keys_are_leaves(_tu.tree_map),
    "tree_map_with_path": _keys_are_leaves(_tu.tree_map_with_path),
    "tree_reduce": _positional(_tu.tree_reduce, 3),
    "tree_all": _keys_are_leaves(_tu.tree_all),
    "all_leaves": _positional(_tu.all_leaves, 1),
}

TREE = {
    "flatten": TREE_UTIL["tree_flatten"],
    "leaves": TREE_UTIL["tree_leaves"],
    "structure": TREE_UTIL["tree_structure"],
    "flatten_with_path": TREE_UTIL["tree_flatten_with_path"],
    "leaves_with_path": TREE_UTIL["tree_leaves_with_path"],
    "map": TREE_UTIL["tree_map"],
    "map_with_path": TREE_UTIL["tree_map_with_path"],
    "reduce": TREE_UTIL["tree_reduce"],
    "all": TREE_UTIL["tree_all"],
}
