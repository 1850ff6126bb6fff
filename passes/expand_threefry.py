"""Expand each `threefry2x32` op into its 20 rounds of uint32 arithmetic, as JAX lowers it.

Guarantees: every `threefry2x32` op (inside regions too) is replaced by the ops computing it,
with the same bits: JAX's rolled form (a 5-trip `while` of four rounds and a key injection,
as JAX's CPU lowering; each trip picks its key words and rotations by its index instead of
rotating them through the carry, which XLA would copy every trip) for hashes
of at most `rolled_max_size` counters, the 20 rounds unrolled (JAX's GPU lowering) for the
others. The loop's regions are built once per carry type and shared by every loop of that
type. With `rolled_max_size=None` the pass changes nothing and the StableHLO lowering of
the op expands it instead (`threefry_function` is shared by both).
Never touches: any other op, op order, the signature.

The default pipeline runs the expansion after the cleanup passes and `merge_threefry`:
keeping the hash one op until then lets the merge see it whole; the rounds written out are
the ops JAX emits.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from purejit.ir import Builder, Function, Op, TensorType, Value

from purejit.ir.ops.random import PARITY, ROTATIONS, U32, broadcast_shape

from purejit.passes.base import PassResult

_S32 = np.dtype(np.int32)


def _const(b: Builder, value, dtype=U32) -> Value:
    return b.op("constant", attrs={"value": np.array(value, dtype)})[0]


def _bcast(b: Builder, x: Value, shape: tuple[int, ...]) -> Value:
    """`x` broadcast to `shape`, right-aligned (NumPy's rule); `x` when already of it."""
    if x.type.shape == shape:
        return x
    dims = tuple(range(len(shape) - x.type.rank, len(shape)))
    return b.op("broadcast_in_dim", [x], {"shape": shape, "broadcast_dimensions": dims})[0]


def _scalar(b: Builder, value, shape, dtype=U32) -> Value:
    return _bcast(b, _const(b, value, dtype), shape)


def _binary(b: Builder, name: str, x: Value, y: Value) -> Value:
    return b.op(name, [x, y])[0]


def _rotl(b: Builder, x: Value, d: int) -> Value:
    shape = x.type.shape
    left = _binary(b, "shift_left", x, _scalar(b, d, shape))
    right = _binary(b, "shift_right_logical", x, _scalar(b, 32 - d, shape))
    return _binary(b, "or", left, right)


def _unrolled(types: list[TensorType]) -> Function:
    b = Builder("threefry2x32")
    k1, k2, x1, x2 = (b.param(t) for t in types)
    shape = broadcast_shape("threefry2x32", types)
    k1, k2 = _bcast(b, k1, shape), _bcast(b, k2, shape)
    ks = (k1, k2, _binary(b, "xor", _binary(b, "xor", k1, k2), _scalar(b, PARITY, shape)))
    x = _binary(b, "add", _bcast(b, x1, shape), ks[0])
    y = _binary(b, "add", _bcast(b, x2, shape), ks[1])
    for i in range(5):
        for r in ROTATIONS[i % 2]:
            x = _binary(b, "add", x, y)
            y = _binary(b, "xor", x, _rotl(b, y, r))
        x = _binary(b, "add", x, ks[(i + 1) % 3])
        y = _binary(b, "add", _binary(b, "add", y, ks[(i + 2) % 3]), _scalar(b, i + 1, shape))
    return b.finish([x, y])


def _loop_cond(carry_types: list[TensorType]) -> Function:
    b = Builder("threefry_cond")
    i = [b.param(t) for t in carry_types][0]
    five = _const(b, 5, _S32)
    return b.finish(b.op("compare", [i, five], {"comparison_direction": "LT"}))


def _pick(b: Builder, cond: Value, a: Value, other: Value) -> Value:
    return b.op("select", [cond, a, other])[0]


def _loop_body(carry_types: list[TensorType]) -> Function:
    """Trip `i` of JAX's rolled loop: four rounds with the rotations of `i % 2`, then the key
    injection `x += ks[(i + 1) % 3]`, `y += ks[(i + 2) % 3] + i + 1`.

    JAX's loop rotates the key words and the two rotation lists through its carry; here the
    carry holds the three key words unchanged and each trip picks its words and rotations
    by `i` (scalar selects), so no carried value moves and XLA copies nothing per trip. The
    arithmetic on the counters is the same, so are the bits."""
    b = Builder("threefry_body")
    i, x, y, ks0, ks1, ks2 = (b.param(t) for t in carry_types)
    shape = x.type.shape
    zero, one = _const(b, 0, _S32), _const(b, 1, _S32)
    odd = b.op("compare", [_binary(b, "and", i, one), zero], {"comparison_direction": "NE"})[0]
    m3 = _binary(b, "remainder", i, _const(b, 3, _S32))
    is0 = b.op("compare", [m3, zero], {"comparison_direction": "EQ"})[0]
    is1 = b.op("compare", [m3, one], {"comparison_direction": "EQ"})[0]
    for j in range(4):
        r = _pick(b, odd, _const(b, ROTATIONS[1][j]), _const(b, ROTATIONS[0][j]))
        x = _binary(b, "add", x, y)
        left = _binary(b, "shift_left", y, _bcast(b, r, shape))
        right_by = _binary(b, "subtract", _const(b, 32), r)
        right = _binary(b, "shift_right_logical", y, _bcast(b, right_by, shape))
        y = _binary(b, "xor", x, _binary(b, "or", left, right))
    # trip i injects ks[(i + 1) % 3] into x and ks[(i + 2) % 3] into y
    kx = _pick(b, is0, ks1, _pick(b, is1, ks2, ks0))
    ky = _pick(b, is0, ks2, _pick(b, is1, ks0, ks1))
    x = _binary(b, "add", x, _bcast(b, kx, shape))
    step = b.op("convert", [_binary(b, "add", i, one)], {"dtype": U32})[0]
    y = _binary(b, "add", _binary(b, "add", y, _bcast(b, ky, shape)), _bcast(b, step, shape))
    return b.finish([_binary(b, "add", i, one), x, y, ks0, ks1, ks2])


def _loop_regions(carry_types: list[TensorType]) -> tuple[Function, Function]:
    """The cond and body of the rolled loop for this carry, built once per carry and shared
    by every loop of the same types (regions are closed functions, never mutated)."""
    return _loop_regions_for(tuple(carry_types))


@functools.lru_cache(maxsize=256)
def _loop_regions_for(carry_types: tuple[TensorType, ...]) -> tuple[Function, Function]:
    return _loop_cond(list(carry_types)), _loop_body(list(carry_types))


def _rolled(types: list[TensorType]) -> Function:
    b = Builder("threefry2x32")
    k1, k2, x1, x2 = (b.param(t) for t in types)
    shape = broadcast_shape("threefry2x32", types)
    # the keys stay in their own (usually scalar) shape in the loop carry
    kshape = broadcast_shape("threefry2x32", [k1.type, k2.type])
    k1, k2 = _bcast(b, k1, kshape), _bcast(b, k2, kshape)
    ks = (k1, k2, _binary(b, "xor", _binary(b, "xor", k1, k2), _scalar(b, PARITY, kshape)))
    x = _binary(b, "add", _bcast(b, x1, shape), _bcast(b, ks[0], shape))
    y = _binary(b, "add", _bcast(b, x2, shape), _bcast(b, ks[1], shape))
    init = [_const(b, 0, _S32), x, y, *ks]
    out = b.op("while", init, regions=list(_loop_regions([v.type for v in init])))
    return b.finish(out[1:3])


def threefry_function(types: list[TensorType], *, rolled: bool) -> Function:
    """The IR function `(k1, k2, x1, x2) -> (y1, y2)` computing threefry2x32 for operands
    of `types`: a 5-trip loop (`rolled`) or the 20 rounds unrolled. Cached per types."""
    return _threefry_for(tuple(types), rolled)


@functools.lru_cache(maxsize=256)
def _threefry_for(types: tuple[TensorType, ...], rolled: bool) -> Function:
    return (_rolled if rolled else _unrolled)(list(types))


def is_rolled(types: list[TensorType], rolled_max_size: int) -> bool:
    """Whether a hash of operands `types` runs as the loop under this size limit."""
    return math.prod(broadcast_shape("threefry2x32", types)) <= rolled_max_size


def _inline(fn: Function, op: Op) -> list[Op]:
    """The ops of `fn` applied to `op`'s operands, writing `op`'s result values."""
    names = dict(zip(fn.params, op.operands))
    names.update(zip(fn.results, op.results))
    out = []
    for inner in fn.ops:
        results = [names.setdefault(r, Value(r.type)) for r in inner.results]
        operands = [names[v] for v in inner.operands]
        out.append(Op(inner.name, operands, inner.attrs, results, inner.regions, op.loc))
    return out


@dataclass(frozen=True)
class ExpandThreefry:
    """Replace `threefry2x32` ops by their rounds (see the module docstring).

    Attributes:
        rolled_max_size: hashes of at most this many counters become the 5-trip loop, larger
            ones the unrolled rounds (0: always unrolled); None leaves the ops to the
            StableHLO lowering.
    """

    rolled_max_size: int | None = None
    name: str = "expand_threefry"

    def __call__(self, fn: Function) -> PassResult:
        if self.rolled_max_size is None:
            return PassResult(fn, False, {})
        counts = {"rolled": 0, "unrolled": 0}
        new = self._expand(fn, counts)
        report = {k: v for k, v in counts.items() if v}
        return PassResult(new, new is not fn, report)

    def _expand(self, fn: Function, counts: dict) -> Function:
        ops, changed = [], False
        for op in fn.ops:
            if op.name == "threefry2x32":
                types = [v.type for v in op.operands]
                rolled = is_rolled(types, self.rolled_max_size)
                counts["rolled" if rolled else "unrolled"] += 1
                ops += _inline(threefry_function(types, rolled=rolled), op)
                changed = True
                continue
            if op.regions:
                regions = [self._expand(r, counts) for r in op.regions]
                new_op = op.rebuilt(op.operands, regions)
                changed |= new_op is not op
                op = new_op
            ops.append(op)
        if not changed:
            return fn
        return Function(fn.name, fn.params, ops, fn.results)
