"""Batching rules of the random family (`ir/ops/random.py`): `threefry2x32`.

The hash broadcasts its operands as NumPy does, so a batch maps over it as a leading
dimension: every batched operand has its batch dimension moved first, and every operand is
padded with size-1 dimensions to one rank (the per-example broadcast rank plus the batch);
the size-1 dimensions of unbatched operands then broadcast over the batch. A batch of keys
against one block of counters is JAX's `vmap` over keys.
"""

from __future__ import annotations

import numpy as np

from purejit.tracing import bind
from purejit.transforms.batching.core import defrule, moveaxis, shape, unbatched_shape


@defrule("threefry2x32")
def _threefry2x32(axis, args, dims):
    rank = len(np.broadcast_shapes(*(unbatched_shape(x, d) for x, d in zip(args, dims))))
    moved = []
    for x, d in zip(args, dims):
        if d is None:
            s = shape(x)
            target = (1,) * (rank + 1 - len(s)) + s
        else:
            x = moveaxis(x, d, 0)
            s = shape(x)
            target = (s[0],) + (1,) * (rank + 1 - len(s)) + s[1:]
        if target != shape(x):
            x = bind("reshape", x, shape=target)[0]
        moved.append(x)
    outs = bind("threefry2x32", *moved)
    return outs, [0, 0]
