"""Random-number ops: the threefry2x32 hash (Salmon et al., SC'11), JAX's `threefry2x32_p`.

threefry2x32(k1, k2, x1, x2) -> (y1, y2)
    The two 32-bit words of the Threefry-2x32 hash (20 rounds) of the counter pairs
    `(x1, x2)` under the keys `(k1, k2)`. All four operands are uint32 arrays whose shapes
    broadcast as NumPy's do (right-aligned, size-1 dimensions stretch; keys are usually of
    a smaller shape than the counters); both results have the broadcast shape.

The hash is one op so that passes can see it whole (`passes/merge_threefry.py` merges
independent hashes into one); `passes/expand_threefry.py` and the StableHLO lowering turn it
into the 20 rounds of integer arithmetic, as a loop or unrolled. Integer arithmetic only:
every form gives the same bits.
"""

from __future__ import annotations

import numpy as np
from purejit.ir.core import TensorType
from purejit.ir.ops._util import nargs
from purejit.ir.registry import OpDef, fail, register

U32 = np.dtype(np.uint32)
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
PARITY = 0x1BD11BDA


def broadcast_shape(name: str, types) -> tuple[int, ...]:
    """The NumPy broadcast of the operand shapes, or a type error naming the op."""
    try:
        return tuple(np.broadcast_shapes(*(t.shape for t in types)))
    except ValueError:
        shapes = ", ".join(str(t) for t in types)
        fail(name, f"operand shapes do not broadcast: {shapes}")


def _threefry_infer(types, attrs, regions):
    nargs("threefry2x32", types, 4)
    for t in types:
        if t.dtype != U32:
            fail("threefry2x32", f"operands must be u32 arrays, got {t}")
    shape = broadcast_shape("threefry2x32", types)
    return [TensorType(shape, U32)] * 2


def threefry2x32_reference(k1, k2, x1, x2):
    """The hash in NumPy uint32 arithmetic (wrapping), broadcasting its operands."""
    k1, k2, x1, x2 = np.broadcast_arrays(*(np.asarray(v, U32) for v in (k1, k2, x1, x2)))
    shape = k1.shape
    # flat arrays: 0-d operands would turn into NumPy scalars, whose wrapping arithmetic
    # warns, and np.ascontiguousarray makes 0-d arrays 1-d
    k1, k2, x1, x2 = (v.reshape(-1) for v in (k1, k2, x1, x2))
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(PARITY))
    a, b = x1 + ks[0], x2 + ks[1]
    for i in range(5):
        for r in ROTATIONS[i % 2]:
            a = a + b
            b = a ^ ((b << np.uint32(r)) | (b >> np.uint32(32 - r)))
        a = a + ks[(i + 1) % 3]
        b = b + ks[(i + 2) % 3] + np.uint32(i + 1)
    return [np.array(a, U32).reshape(shape), np.array(b, U32).reshape(shape)]


register(
    OpDef(
        "threefry2x32",
        _threefry_infer,
        lambda args, attrs, regions, run: threefry2x32_reference(*args),
        frozenset({"pure"}),
        doc="threefry2x32(k1, k2, x1, x2) -> (y1, y2): the Threefry-2x32 hash, 20 rounds, "
        "of the counters (x1, x2) under the keys (k1, k2); u32 operands that broadcast",
    )
)
