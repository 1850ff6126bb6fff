"""A stack of outputs computed as stacks: one op per column of the rows, not one per layer.

`stacked_params.stack_outputs` returns a run of per-layer results (a training step's
updated parameters) as one stack, `concatenate(reshape(o_t))`: hundreds of operands, each
computed by its own ops (`p - lr * g` per layer and parameter), which XLA compiles as one
kernel each and the concatenate as one with hundreds of operands. The rows of the stack
share a layout (row k holds layer k's parameters side by side); the pieces at one column
of the rows are the same parameter of each layer. Where the n pieces of a column are
computed by the same ops from

    - one value for every layer (a learning rate, its broadcast: "shared"),
    - row k of one stack, read by a `dynamic_slice` whose row index evaluates to k (the
      backward scan's stacked gradients; the parameters' own stack, read at its column),

the column is computed once over the stacks (`vectorize`): each op on `[n, *shape]`
(elementwise ops as they are, reshapes and broadcasts with a leading row axis, shared
operands broadcast along it), and the stack is the columns side by side. XLA then compiles
a few kernels over whole stacks and writes the stack in place when it is donated.

What is proved: the same op name, attributes and result type at every layer, operand by
operand; a row index by evaluating the ops that make it (constants and the row-index loop
of `_row_index.py`; the interpreter is the reference), so its value at run time is k;
the pieces of a column cover rows 0..n-1 once. Anything else leaves the group's
concatenate as it is.
"""

from __future__ import annotations

import numpy as np

from purejit.ir import Function, Op, Value, interpret
from purejit.passes._isomorphism import same_attr
from purejit.passes.base import has_effect
from purejit.passes.dce import DCE

_SHARED, _ROWS = "shared", "rows"


def _attrs_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(same_attr(a[k], b[k]) for k in a)


class _Vectorizer:
    def __init__(self, fn: Function, n: int):
        self.n = n
        self.producer: dict[Value, Op] = {}
        for op in fn.ops:
            for r in op.results:
                self.producer[r] = op
        self.position = {id(op): i for i, op in enumerate(fn.ops)}
        self.fn = fn
        self.values: dict[int, list] = {}  # id(op) -> its evaluated results
        self.memo: dict[tuple, tuple | None] = {}
        self.out: list[Op] = []

    def constant(self, v: Value):
        """The value of `v` when the ops making it read no parameter, else None."""
        op = self.producer.get(v)
        if op is None:
            return None
        if id(op) not in self.values:
            need, stack = {}, [op]
            while stack:
                o = stack.pop()
                if id(o) in need:
                    continue
                need[id(o)] = o
                for x in o.operands:
                    p = self.producer.get(x)
                    if p is None:
                        self.values[id(op)] = None  # reads a parameter
                        return None
                    stack.append(p)
            ops = sorted(need.values(), key=lambda o: self.position[id(o)])
            self.values[id(op)] = interpret(Function("index", [], ops, list(op.results)))
        results = self.values[id(op)]
        return None if results is None else results[op.results.index(v)]

    def emit(self, name: str, operands, attrs: dict) -> Value:
        op = Op.inferred(name, operands, attrs)
        self.out.append(op)
        return op.results[0]

    def rows(self, kind_value) -> Value:
        """A vectorized operand as a `[n, *shape]` value (a shared one broadcast)."""
        kind, v = kind_value
        if kind == _ROWS:
            return v
        dims = list(range(1, v.type.rank + 1))
        return self.emit("broadcast_in_dim", [v], {"shape": [self.n, *v.type.shape],
                                                   "broadcast_dimensions": dims})  # fmt: skip

    def __call__(self, vs: list[Value]):
        """`("shared", v)`, `("rows", V)` with V[k] = vs[k], or None (not proved)."""
        key = tuple(id(v) for v in vs)
        if key not in self.memo:
            self.memo[key] = self._vectorize(vs)
        return self.memo[key]

    def _vectorize(self, vs: list[Value]):
        v0 = vs[0]
        if all(v is v0 for v in vs):
            return (_SHARED, v0)
        ops = [self.producer.get(v) for v in vs]
        op0 = ops[0]
        if any(op is None for op in ops) or op0.regions or len(op0.results) != 1:
            return None
        if any(
            op.name != op0.name
            or len(op.operands) != len(op0.operands)
            or op.results[0].type != op0.results[0].type
            or op.regions
            or not _attrs_equal(op.attrs, op0.attrs)
            for op in ops
        ):
            return None
        if op0.name == "dynamic_slice":
            return self._row_read(ops)
        subs = [self([op.operands[j] for op in ops]) for j in range(len(op0.operands))]
        if any(s is None for s in subs):
            return None
        if has_effect(op0):
            return None
        if all(s[0] == _SHARED for s in subs):
            # one pure op on the same values at every layer: the same value (a broadcast of
            # the learning rate made once per layer)
            return (_SHARED, v0)
        shape = list(op0.results[0].type.shape)
        n = self.n
        if op0.is_elementwise:
            return (_ROWS, self.emit(op0.name, [self.rows(s) for s in subs], dict(op0.attrs)))
        if op0.name == "reshape":
            return (_ROWS, self.emit("reshape", [self.rows(subs[0])], {"shape": [n, *shape]}))
        if op0.name == "broadcast_in_dim" and subs[0][0] == _ROWS:
            dims = [0] + [d + 1 for d in op0.attrs["broadcast_dimensions"]]
            attrs = {"shape": [n, *shape], "broadcast_dimensions": dims}
            return (_ROWS, self.emit("broadcast_in_dim", [subs[0][1]], attrs))
        return None

    def _row_read(self, ops: list[Op]):
        """Row k of one stack at every layer k: the stack itself (its columns), as rows."""
        stack = ops[0].operands[0]
        sizes = list(ops[0].attrs["slice_sizes"])
        n = self.n
        if sizes[0] != 1 or stack.type.shape[0] != n:
            return None
        starts = []
        for j in range(1, len(ops[0].operands)):
            first = ops[0].operands[j]
            if j > 1 and any(op.operands[j] is not first for op in ops):
                return None
            if j > 1:
                c = self.constant(first)
                if c is None:
                    return None
                starts.append(int(c))
        for k, op in enumerate(ops):
            if op.operands[0] is not stack:
                return None
            row = self.constant(op.operands[1])
            if row is None or int(row) != k:  # XLA clamps; k is always in range here
                return None
        rest = list(stack.type.shape[1:])
        x = stack
        if starts and any(starts[i] or sizes[i + 1] != rest[i] for i in range(len(starts))):
            if any(starts[i] + sizes[i + 1] > rest[i] for i in range(len(starts))):
                return None  # a clamped start: not what this reads
            attrs = {
                "start_indices": [0, *starts],
                "limit_indices": [n, *(s + z for s, z in zip(starts, sizes[1:]))],
                "strides": [1] * (len(starts) + 1),
            }
            x = self.emit("slice", [stack], attrs)
        return (_ROWS, self.emit("reshape", [x], {"shape": [n, *sizes]}))


def vectorize(fn: Function, plan, rows: dict) -> Function:
    """`fn` with each output stack of `plan` computed column by column over the stacks
    where proved (see the module docstring), then dead code removed.

    Args:
        fn: the entry after `stack_outputs`.
        plan: its `StackPlan`.
        rows: per output group index, `(n, row size)` of its layout.
    """
    changed = False
    results = list(fn.results)
    head: list[Op] = []
    producer = {r: op for op in fn.ops for r in op.results}
    for r, (kind, h) in enumerate(plan.out_sources):
        if kind != "group" or h not in rows:
            continue
        n, width = rows[h]
        group = plan.out_groups[h]
        cat = producer.get(fn.results[r])
        if cat is not None and cat.name == "reshape":  # a stack of rank 2 or more
            cat = producer.get(cat.operands[0])
        if cat is None or cat.name != "concatenate":
            continue
        flat = [producer.get(v) for v in cat.operands]
        pieces: dict[int, list] = {}
        for t, (off, shape) in enumerate(group.pieces):
            pieces.setdefault(off % width, []).append((off // width, shape, flat[t]))
        vec = _Vectorizer(fn, n)
        cols, ok = [], True
        for col in sorted(pieces):
            found = sorted(pieces[col], key=lambda p: p[0])
            if [k for k, _, _ in found] != list(range(n)) or len({s for _, s, _ in found}) > 1:
                ok = False
                break
            got = vec([f.operands[0] for _, _, f in found])
            if got is None:
                ok = False
                break
            size = int(np.prod(found[0][1], dtype=np.int64))
            cols.append(vec.emit("reshape", [vec.rows(got)], {"shape": [n, size]}))
        if not ok or sum(c.type.shape[1] for c in cols) != width:
            continue
        both = cols[0] if len(cols) == 1 else vec.emit("concatenate", cols, {"dimension": 1})
        results[r] = vec.emit("reshape", [both], {"shape": list(group.stack_type.shape)})
        head += vec.out
        changed = True
    if not changed:
        return fn
    return DCE()(Function(fn.name, fn.params, fn.ops + head, results)).fn
