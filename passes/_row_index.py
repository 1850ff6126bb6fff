"""Row indices XLA cannot see as constants, for reading the rows of a rolled loop's stacks.

A rolled program hands each row of a stacked output (a layer's gradient, a value something
outside the loop reads) back as a value of its own. Read with a `slice` at a constant
offset, every row is a kernel of its own to XLA: the offset is part of the kernel, so XLA
compiles one per row, and on CPU each costs about 10 ms of LLVM (the 384 rows of a 48-layer
training step's gradients: 4.3 s of compile, against 0.3 s for the same rows read at
runtime indices; docs/benchmarks/roll_layers_cpu.md). Read with a `dynamic_slice` at an
index XLA cannot fold, the rows of one shape are one kernel, compiled once and run once per
row, as the unrolled program's identical layers are.

The indices come out of a `while` loop that XLA cannot reduce: two trips (XLA removes a
loop of one trip and folds what it returned), each carry kept by a `select` on a condition
that never holds (`i < 0`), so the loop returns `0, 1, ..., n-1` as it was given them. Its
trip counter starts at an `iota`'s element, so purejit's constant folding (which folds an
op whose operands are all constants) leaves it to XLA.
XLA folds a constant index into a slice again, and an `optimization_barrier` in front of
the constants does not stop it (the CPU compiler drops barriers). The loop costs 2n scalar
selects per call.
"""

from __future__ import annotations

import numpy as np
from purejit.ir import Builder, Function, Op, TensorType, Value

_S32 = TensorType((), np.dtype(np.int32))


def _const(b: Builder, value: int) -> Value:
    return b.op("constant", attrs={"value": np.asarray(value, np.int32)})[0]


def _regions(n: int) -> tuple[Function, Function]:
    """The cond (`i < 2`) and body (`i + 1`, each index kept) of the loop over n indices."""
    c = Builder("row_index_cond")
    i = [c.param(_S32) for _ in range(n + 1)][0]
    cond = c.finish(c.op("compare", [i, _const(c, 2)], {"comparison_direction": "LT"}))
    b = Builder("row_index_body")
    i, *ks = (b.param(_S32) for _ in range(n + 1))
    never = b.op("compare", [i, _const(b, 0)], {"comparison_direction": "LT"})[0]
    kept = [b.op("select", [never, i, k])[0] for k in ks]
    body = b.finish([b.op("add", [i, _const(b, 1)])[0], *kept])
    return cond, body


class RowIndices:
    """The indices `0..n-1` as values from one loop, made (appended to `out`) when first
    asked for, so that a program that reads no row gets no loop; and the s32 constants the
    other start indices of the rows' slices are (one op per value)."""

    def __init__(self, n: int, out: list[Op]):
        self.n, self.out = n, out
        self._values: list[Value] | None = None
        self._constants: dict[int, Value] = {}

    def constant(self, value: int) -> Value:
        """The s32 scalar `value`, made once."""
        if value not in self._constants:
            op = Op.inferred("constant", [], {"value": np.asarray(value, np.int32)})
            self.out.append(op)
            self._constants[value] = op.results[0]
        return self._constants[value]

    def __call__(self, i: int) -> Value:
        """Index `i` (0 <= i < n), an s32 scalar."""
        if self._values is None:
            # the trip counter starts at an iota's 0, not a constant: a loop of constants is
            # folded by purejit's own constant folding
            iota = Op.inferred("iota", [], {"shape": (1,), "dtype": np.int32, "dimension": 0})
            start = Op.inferred("reshape", iota.results, {"shape": []})
            init = [
                Op.inferred("constant", [], {"value": np.asarray(k, np.int32)})
                for k in range(self.n)
            ]
            operands = [start.results[0], *(op.results[0] for op in init)]
            loop = Op.inferred("while", operands, {}, _regions(self.n))
            self.out += [iota, start, *init, loop]
            self._values = loop.results[1:]
        return self._values[i]
