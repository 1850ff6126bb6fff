"""`purejit.flatten_util.ravel_pytree` (JAX's `jax.flatten_util`): a pytree of arrays as one
flat vector, and the function that splits such a vector back into the tree.

    flat, unravel = ravel_pytree({"w": w, "b": b})
    params = unravel(flat - lr * grads_flat)
"""

from __future__ import annotations

import numpy as np

from purejit import numpy as jnp
from purejit.tree_util import tree_flatten, tree_unflatten


def ravel_pytree(pytree):
    """Flatten every leaf and concatenate them, in the tree's leaf order.

    Returns:
        `(flat, unravel)`: `flat` is 1-D with the leaves' promoted dtype (float32 for an
        empty tree); `unravel(v)` splits a vector of that size back into the tree, each
        leaf reshaped and cast back to its own dtype.
    """
    leaves, treedef = tree_flatten(pytree)
    leaves = [jnp.asarray(x) for x in leaves]
    shapes = [tuple(x.shape) for x in leaves]
    dtypes = [x.dtype for x in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    if leaves:
        dtype = jnp.result_type(*leaves)
        flat = jnp.concatenate([jnp.ravel(x).astype(dtype) for x in leaves])
    else:
        dtype = jnp.float32
        flat = jnp.zeros((0,), dtype)
    total = sum(sizes)

    def unravel(vector):
        vector = jnp.asarray(vector)
        if tuple(vector.shape) != (total,):
            raise ValueError(
                f"unravel: expected a vector of shape ({total},), the flattened size of the "
                f"tree, got {tuple(vector.shape)}"
            )
        if vector.dtype != dtype:
            raise TypeError(
                f"unravel: the vector's dtype {vector.dtype} is not the flattened dtype "
                f"{np.dtype(dtype)}; cast it first (as jax.flatten_util.ravel_pytree asks)"
            )
        parts, start = [], 0
        for shape, dt, n in zip(shapes, dtypes, sizes):
            piece = vector[start : start + n].reshape(shape)
            parts.append(piece.astype(dt) if piece.dtype != dt else piece)
            start += n
        return tree_unflatten(treedef, parts)

    return flat, unravel


__all__ = ["ravel_pytree"]
