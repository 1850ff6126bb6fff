"""A rolled program's stacks of per-layer parameters as its arguments (`stacked_params`).

`roll_layers` stacks the layers' values of each parameter along a new leading axis
(`stack_rows`: one `concatenate` along axis 0 of each layer's `reshape` to `[1, *shape]`;
with `pack_xs`, the GPU's choice when stacks are built in the program, one flat
`concatenate` per dtype of every layer's parameters flattened side by side). Built inside
the program, a stack is written on every call and its concatenate is one kernel with a
operand per layer (LLVM's 0.1 s on CPU, 0.4 s on a GPU for a 48-layer transformer's).
`stack_parameters` rewrites the entry to take such a concatenate's result as ONE parameter
instead, and returns a `StackPlan` saying which of the user's flat leaves lie where in it;
dispatch (`stacked_dispatch.py`) builds the stack, or finds it built (the leaves are row
views of a live stack, as a previous call left them). The compiler turns `pack_xs` off when
the stacks are arguments: one stack per parameter, as `lax.scan` takes them, whose update
is one op over the stack (`stacked_outputs.py`).

What is proved for each group (else the concatenate stays as it is):
    - the concatenate is along axis 0 (so its operands' elements lie back to back in
      row-major order), with at least two operands;
    - each operand is an entry parameter, or a `reshape` of one (row-major order kept)
      whose only reader is this concatenate;
    - no parameter appears twice in it, nor in another group;
    - the group's leaves are all donated or none is, and a donated group has a run of
      results to be returned as its stack (`stack_outputs`: else its stack would have no
      output to donate to, where each leaf has one);
    - every leaf's offset is aligned for a row view on the device (`row_views.alignment`):
      else no call could find the stack as the previous call left it.
The concatenate's value is then exactly the leaves' elements laid out at their offsets,
which is what dispatch passes. A leaf the program also reads elsewhere (a training step's
update reads each layer's parameter) is read there as its piece of the stack, at a row
index XLA cannot fold (`_row_index.py`), so the leaf need not be passed twice.

Guarantees: the rewritten program computes what it did from the same leaves; parameters
outside groups keep their order; every leaf is in exactly one group or is a parameter of
its own. `stack_outputs` returns runs of results as stacks the same way (see there).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from purejit.ir import Function, Op, TensorType, Value
from purejit.compiler.stacked_outputs import vectorize
from purejit.passes._row_index import RowIndices


@dataclass(frozen=True)
class Group:
    """Leaves passed as one stacked parameter.

    Attributes:
        leaves: the user's flat leaf indices, in stack order.
        offsets: each leaf's first element in the (flat) stack.
        shapes: each leaf's shape.
        stack_type: the stacked parameter's type (1-D).
        donated: whether the leaves (hence the stack) are donated.
    """

    leaves: tuple[int, ...]
    offsets: tuple[int, ...]
    shapes: tuple[tuple[int, ...], ...]
    stack_type: TensorType
    donated: bool

    def __hash__(self):  # the dataclass's (of the fields), kept: dispatch hashes it per call
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.leaves, self.offsets, self.shapes, self.stack_type, self.donated))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self):  # the fields only (the kept hash is remade where it is read)
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def pieces(self) -> list[tuple[int, tuple[int, ...]]]:
        """`(offset, shape)` per leaf, as `row_views.views` takes them."""
        return list(zip(self.offsets, self.shapes))


@dataclass(frozen=True)
class StackPlan:
    """How the user's flat leaves become the entry's parameters.

    Attributes:
        sources: per entry parameter, `("leaf", i)` or `("group", g)`.
        groups: the groups.
        n_leaves: how many leaves the user passes.
    """

    sources: tuple[tuple[str, int], ...]
    groups: tuple[Group, ...]
    n_leaves: int
    # per entry result, ("leaf", j) or ("group", h): the user's output leaves returned as
    # one stack each (`out_groups`, whose `leaves` are output leaf indices)
    out_sources: tuple[tuple[str, int], ...] = ()
    out_groups: tuple[Group, ...] = ()

    def entry_arguments(self, leaves: list) -> list:
        """The entry's arguments (NumPy) from the user's flat leaves: each group's leaves
        laid out in one stack (what dispatch passes; for the interpreter and tests)."""
        out = []
        for kind, i in self.sources:
            if kind == "leaf":
                out.append(np.asarray(leaves[i]))
                continue
            g = self.groups[i]
            stack = np.empty(g.stack_type.size, g.stack_type.dtype)
            for k, off in zip(g.leaves, g.offsets):
                flat = np.asarray(leaves[k], g.stack_type.dtype).reshape(-1)
                stack[off : off + flat.size] = flat
            out.append(stack.reshape(g.stack_type.shape))
        return out

    def leaf_results(self, results: list) -> list:
        """The user's flat output leaves (NumPy) from the entry's results."""
        if not self.out_groups:
            return list(results)
        n = sum(1 for kind, _ in self.out_sources if kind == "leaf")
        n += sum(len(h.leaves) for h in self.out_groups)
        out: list = [None] * n
        for r, (kind, j) in zip(results, self.out_sources):
            if kind == "leaf":
                out[j] = r
                continue
            h = self.out_groups[j]
            flat = np.asarray(r).reshape(-1)
            for k, off, shape in zip(h.leaves, h.offsets, h.shapes):
                size = int(np.prod(shape, dtype=np.int64))
                out[k] = flat[off : off + size].reshape(shape)
        return out

    @property
    def stacked_leaves(self) -> int:
        return sum(len(g.leaves) for g in self.groups)

    @property
    def stacked_bytes(self) -> int:
        """Bytes the program no longer copies into stacks on each call."""
        return sum(g.stack_type.nbytes for g in self.groups)


def _flattened_param(v: Value, producer: dict, uses: dict, params: dict) -> tuple | None:
    """`(parameter index, the reshape op or None)` when `v` is an entry parameter's elements
    in row-major order: the parameter itself, or a `reshape` of it read once (a reshape
    keeps row-major order: its flattening, or a row `[1, *shape]` of a stack)."""
    if v in params:
        return params[v], None
    op = producer.get(v)
    if op is None or op.name != "reshape" or len(uses.get(v, ())) != 1:
        return None
    (src,) = op.operands
    if src not in params:
        return None
    return params[src], op


def stack_parameters(
    fn: Function, donated: tuple[bool, ...], align: int = 1
) -> tuple[Function, StackPlan | None]:
    """`fn` taking each proved stack of its parameters as one parameter, and the plan; `fn`
    itself and None when no stack is proved (see the module docstring).

    Args:
        fn: the optimised entry function (its parameters are the user's flat leaves).
        donated: per parameter, whether the user donates it.
        align: the byte alignment a row view needs on the device (`row_views.alignment`):
            a group is made only when each leaf lies at such an offset.
    """
    params = {p: i for i, p in enumerate(fn.params)}
    producer: dict[Value, Op] = {}
    uses: dict[Value, list[Op]] = {}
    for op in fn.ops:
        for r in op.results:
            producer[r] = op
        for v in op.operands:
            uses.setdefault(v, []).append(op)
    for v in fn.results:  # a returned value is read too (None: by the return)
        uses.setdefault(v, []).append(None)
    taken: set[int] = set()
    found = []  # (the concatenate, its operands' (parameter, reshape))
    for op in fn.ops:
        # along the leading axis, the operands' elements lie back to back in row-major order
        if op.name != "concatenate" or op.attrs.get("dimension") != 0 or len(op.operands) < 2:
            continue
        ins = [_flattened_param(v, producer, uses, params) for v in op.operands]
        if any(x is None for x in ins):
            continue
        idx = [i for i, _ in ins]
        if len(set(idx)) != len(idx) or taken & set(idx):
            continue
        if len({bool(donated[i]) for i in idx}) != 1:
            continue
        offsets, _ = _pieces(fn, ins)
        if any(o * op.results[0].type.dtype.itemsize % align for o in offsets):
            continue  # a leaf no view can be of: dispatch would copy every leaf every call
        taken.update(idx)
        found.append((op, ins))
    found = _with_outputs(fn, found, donated, align)
    if not found:
        return fn, None
    new, plan = _rewrite(fn, found, donated, uses)
    return stack_outputs(new, plan, align)


def _pieces(fn: Function, ins) -> tuple[list[int], list[tuple]]:
    offsets, off = [], 0
    for i, _ in ins:
        offsets.append(off)
        off += fn.params[i].type.size
    return offsets, [tuple(fn.params[i].type.shape) for i, _ in ins]


def _with_outputs(fn: Function, found: list, donated, align: int) -> list:
    """`found` without the donated groups that no run of results could be returned as a
    stack of (`stack_outputs`'s rule): their stack would have no output to donate to, where
    each leaf has one now (such a group stays stacked inside the program)."""
    types = [r.type for r in fn.results]
    free = [True] * len(types)
    keep = []
    for cat, ins in found:
        offsets, shapes = _pieces(fn, ins)
        dtype = cat.results[0].type.dtype
        r = _output_run(offsets, shapes, [i for i, _ in ins], dtype, types, free, align)
        for k in r or ():
            free[k] = False
        if r is not None or not donated[ins[0][0]]:
            keep.append((cat, ins))
    return keep


def _output_run(offsets, shapes, leaves, dtype, types, free, align) -> list | None:
    """The free results to return as the group's stack, per stack position, when every
    piece is `align`-byte aligned; else None. The results are those at the leaves' own
    positions shifted by one amount (an output tree laid out as the input's: a training
    step's updated parameters, per-layer gradients; the first shift that fits), else a
    run of results of the leaves' types in leaf order."""
    if any(o * dtype.itemsize % align for o in offsets):
        return None
    want = [TensorType(s, dtype) for s in shapes]
    first = min(range(len(leaves)), key=lambda t: leaves[t])
    for r, t in enumerate(types):
        d = r - leaves[first]
        if t != want[first]:
            continue
        at = [i + d for i in leaves]
        if all(0 <= k < len(types) and free[k] and types[k] == w for k, w in zip(at, want)):
            return at
    by_leaf = sorted(range(len(leaves)), key=lambda t: leaves[t])
    r = _run_of([want[t] for t in by_leaf], types, free)
    if r is None:
        return None
    at = [0] * len(leaves)
    for k, t in enumerate(by_leaf):
        at[t] = r + k
    return at


def _row_shape(cat: Op, uses: dict) -> tuple[int, int] | None:
    """`(n, row size)` when the stack has rows: a stack of rank 2 or more (one per
    parameter), or a flat one `roll_layers` reshapes to an n-row matrix (its parameters
    side by side); else None."""
    t = cat.results[0].type
    if t.rank >= 2:
        return t.shape[0], t.size // t.shape[0]
    total = cat.results[0].type.size
    for op in uses.get(cat.results[0], ()):
        shape = list(op.results[0].type.shape) if op and op.name == "reshape" else []
        if len(shape) == 2 and shape[0] * shape[1] == total:
            return shape[0], shape[1]
    return None


def _rewrite(fn: Function, found: list, donated, uses) -> tuple[Function, StackPlan]:
    groups, stack_params = [], []
    rep: dict[Value, Value] = {}
    drop: set[int] = set()  # ids of ops the rewrite removes
    first_of: dict[int, int] = {}  # smallest leaf index of a group -> the group
    grouped: dict[int, tuple[int, Value, int]] = {}  # leaf -> (group, stack, offset)
    for g, (cat, ins) in enumerate(found):
        offsets, off = [], 0
        for i, _ in ins:
            offsets.append(off)
            off += fn.params[i].type.size
        stack_type = cat.results[0].type
        assert off == stack_type.size  # the concatenate's length: the leaves' sizes summed
        leaves = tuple(i for i, _ in ins)
        groups.append(
            Group(
                leaves,
                tuple(offsets),
                tuple(tuple(fn.params[i].type.shape) for i in leaves),
                stack_type,
                bool(donated[leaves[0]]),
            )
        )
        s = Value(stack_type)
        stack_params.append(s)
        rep[cat.results[0]] = s  # concatenate(flatten(leaves)) -> the stack
        drop.add(id(cat))
        drop.update(id(r) for _, r in ins if r is not None)
        first_of[min(leaves)] = g
        for i, o in zip(leaves, offsets):
            grouped[i] = (g, s, o)
    # a grouped leaf read elsewhere: its piece of the stack, read at a row index XLA cannot
    # fold where the stack is read as rows (one kernel per piece shape, as the rolled
    # program reads its other rows: `_row_index.py`), else at a constant offset
    head: list[Op] = []
    rows = [_row_shape(cat, uses) for cat, _ in found]
    index = RowIndices(max((r[0] for r in rows if r), default=1), head)
    matrices: dict[int, Value] = {}
    for i, (g, s, o) in grouped.items():
        p = fn.params[i]
        readers = [op for op in uses.get(p, ()) if id(op) not in drop]
        if not readers and p not in fn.results:
            continue
        size, shape = p.type.size, list(p.type.shape)
        row = rows[g]
        if row is not None and o % row[1] + size <= row[1]:
            if g not in matrices:
                m = Op.inferred("reshape", [s], {"shape": list(row)})
                head.append(m)
                matrices[g] = m.results[0]
            starts = [index(o // row[1]), index.constant(o % row[1])]
            sl = Op.inferred("dynamic_slice", [matrices[g], *starts], {"slice_sizes": [1, size]})
        else:
            attrs = {"start_indices": [o], "limit_indices": [o + size], "strides": [1]}
            sl = Op.inferred("slice", [s], attrs)
        rs = Op.inferred("reshape", sl.results, {"shape": shape})
        head += [sl, rs]
        rep[p] = rs.results[0]  # p -> reshape(its elements of the stack, shape(p))
    ops = list(head)
    for op in fn.ops:
        if id(op) in drop:
            continue
        new = [rep.get(v, v) for v in op.operands]
        ops.append(
            op if all(a is b for a, b in zip(new, op.operands)) else op.rebuilt(new, op.regions)
        )
    results = [rep.get(v, v) for v in fn.results]
    new_params, sources = [], []
    for i, p in enumerate(fn.params):
        if i in first_of:
            g = first_of[i]
            new_params.append(stack_params[g])
            sources.append(("group", g))
        elif i not in grouped:
            new_params.append(p)
            sources.append(("leaf", i))
    out = Function(fn.name, new_params, ops, results)
    return out, StackPlan(tuple(sources), tuple(groups), len(fn.params))


def _run_of(types: list, result_types: list, free: list[bool]) -> int | None:
    """The first position r where results r .. r + len(types) - 1 are free and of `types`."""
    m = len(types)
    for r in range(len(result_types) - m + 1):
        if all(free[r : r + m]) and result_types[r : r + m] == types:
            return r
    return None


def stack_outputs(fn: Function, plan: StackPlan, align: int) -> tuple[Function, StackPlan]:
    """`fn` returning, for each input group, the run of results of its leaves' types (in
    leaf order: a training step's updated parameters, per-layer gradients) as one stack laid
    out as the input's, so that the caller gets row views of it that the next call finds
    (`stacked_dispatch`); `plan` with the output groups. A run is returned as a stack only
    when every piece is `align`-byte aligned (else a view would be a copy).

    The stack is `concatenate(reshape(r_t, [size]) for t in stack order)`: its elements at
    each piece's offset are that result's in row-major order, which the views read."""
    types = [r.type for r in fn.results]
    free = [True] * len(types)
    out_groups, first = [], {}
    for g in plan.groups:
        at = _output_run(g.offsets, g.shapes, g.leaves, g.stack_type.dtype, types, free, align)
        if at is None:
            continue
        res_of = dict(enumerate(at))  # stack position -> result
        for k in at:
            free[k] = False
        out_groups.append(
            Group(
                tuple(res_of[t] for t in range(len(g.leaves))),
                g.offsets,
                g.shapes,
                g.stack_type,
                False,
            )  # fmt: skip
        )
        first[min(at)] = len(out_groups) - 1  # the stack is returned where its first result was
    if not out_groups:
        return fn, plan
    ops, results, sources = list(fn.ops), [], []
    for j, v in enumerate(fn.results):
        if j in first:
            h = first[j]
            flat = []
            for k in out_groups[h].leaves:
                rv = fn.results[k]
                op = Op.inferred("reshape", [rv], {"shape": [rv.type.size]})
                ops.append(op)
                flat.append(op.results[0])
            cat = Op.inferred("concatenate", flat, {"dimension": 0})
            ops.append(cat)
            shape = list(out_groups[h].stack_type.shape)
            if len(shape) > 1:  # the input's stack type, which donation pairs it with
                cat = Op.inferred("reshape", cat.results, {"shape": shape})
                ops.append(cat)
            results.append(cat.results[0])
            sources.append(("group", h))
        elif free[j]:
            results.append(v)
            sources.append(("leaf", j))
    out = Function(fn.name, fn.params, ops, results)
    new = StackPlan(plan.sources, plan.groups, plan.n_leaves, tuple(sources), tuple(out_groups))
    return vectorize(out, new, _out_rows(fn, plan, out_groups)), new


def _out_rows(fn: Function, plan: StackPlan, out_groups: list) -> dict:
    """Per output group, `(n, row size)` of the input stack laid out as it is (its rows, or
    the matrix `roll_layers` reads a flat stack as), when there is one."""
    stacks = [(plan.groups[i], fn.params[p]) for p, (k, i) in enumerate(plan.sources)
              if k == "group"]  # fmt: skip
    shapes = {}
    for op in fn.ops:
        if op.name == "reshape" and op.results[0].type.rank == 2:
            shapes.setdefault(op.operands[0], tuple(op.results[0].type.shape))
    for g, s in stacks:  # a stack of one parameter per row: its rows as they are
        if g.stack_type.rank >= 2:
            shapes[s] = (g.stack_type.shape[0], g.stack_type.size // g.stack_type.shape[0])
    rows = {}
    for h, out in enumerate(out_groups):
        for g, s in stacks:
            same = (g.offsets, g.shapes, g.stack_type) == (out.offsets, out.shapes, out.stack_type)
            if same and s in shapes:
                rows[h] = shapes[s]
    return rows
