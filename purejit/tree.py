"""`purejit.tree`: JAX's `jax.tree` namespace, the short names of `purejit.tree_util`.

purejit.tree.map(lambda x: x * 2, params)
leaves, treedef = purejit.tree.flatten(params)
"""

from __future__ import annotations


from purejit.tree_util import (
    tree_all,
    tree_broadcast,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    static,
    tree_map_with_path,
    tree_reduce,
    tree_reduce_associative,
    tree_structure,
    tree_transpose,
    tree_unflatten,
)

all = tree_all
broadcast = tree_broadcast
flatten = tree_flatten
flatten_with_path = tree_flatten_with_path
leaves = tree_leaves
leaves_with_path = tree_leaves_with_path
map = tree_map
map_with_path = tree_map_with_path
reduce = tree_reduce
reduce_associative = tree_reduce_associative
structure = tree_structure
transpose = tree_transpose
unflatten = tree_unflatten

__all__ = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]
