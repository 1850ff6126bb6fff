"""Rolling repeated layers: a chain of isomorphic `call`s becomes one `scan`.

A deep model written as a Python loop over a jitted layer traces into a chain of `call` ops
whose functions are copies of one another. XLA compiles each copy again (it inlines
`func.call`), and so would purejit's own passes after `inline`. This pass finds runs of
at least `min_blocks` calls where

    - each call's function is proved isomorphic to the first one's (`_isomorphism.compare`:
      ops, attributes, types, regions and operand wiring, never a hash), except for the
      values of top-level constants, which are stacked and read by the body as a slice;
    - call i+1 reads results of call i at the same operand positions for every i (the
      carry: position j reads result r, with j and r fixed along the run);
    - every other operand is either the same value for every call (a shared value: the
      scan's consts) or a value of the same type per call that no call of the run computes
      (a per-block parameter: stacked along a new leading axis into the scan's xs);

and rewrites each run as one `scan` over the stacked per-block values. Results of the calls
that are not carried become the scan's stacked ys, sliced back out where something reads
them (at runtime indices, so that XLA compiles one kernel per row shape, not one per row:
`_row_index.py`); with `pack_ys` (the GPU's default), those of one dtype are packed into
one ys (each block's values flattened into one row), since a loop writes each ys with a
dynamic-update-slice of its own on every trip: a kernel per saved value and layer on a GPU
(unrolled, each value stays where it was made). With `pack_xs`, the per-block operands of
one dtype that are the function's arguments (a layer's parameters, copied into stacks on
every call) are stacked side by side as one, a loop constant each trip reads its columns of
with one dynamic_slice per parameter. With `select_xs` (the compiler's choice on CPU) those
arguments are not stacked at all: each is a loop constant and a `case` on the trip's row
returns the trip's block's values (`select_rows`). A per-block operand that is rows of an
earlier rolled scan's stack (its ys, or its stacked per-block operands) reads them from that
stack: all of it in order as the scan's xs (a reverse scan when the rows come in reverse
order), any other rows by passing the stack whole as a loop constant and the row of each
block as an xs of indices (a slice would copy the rows, and XLA turns a slice of a
concatenate into a second concatenate); a value packed in a ys is read as its columns of
that row. When all rows but one come from one such stack (the backward pass reads each
layer's input: the forward's saved outputs, but the first layer's input comes from before
the loop), that one value is a loop constant, read where the row index is -1 by a select
that XLA fuses with the slice into their readers, where stacking it with the rows would copy
them all on every call.
This is what the backward pass of a rolled forward pass looks like under `grad`: it reads
the forward's saved values and its stacked parameters, stacked once.

Guarantees: the program computes exactly what it did (a scan runs its body once per block,
in the chain's order, on the same values). A carried result that something outside the
chain also reads (a layer's output saved for the backward pass) is stacked as a ys too.
Left alone, with the reason in the report (`refused`): calls whose functions differ
(shapes, ops, attributes, constants inside nested regions), a per-block operand computed
from an earlier block of the run (a skip connection), a block with effects (`side_effect`,
`collective`, or not `pure`) and a run with an effectful op between its blocks (the
rewrite moves the ops between blocks that read the chain's values after the scan).

A Python loop traced without a jitted layer has no calls: with `outline`, repeated
stretches of top-level ops are first cut into calls (`_outline.py`), rolled the same way,
and the blocks that do not roll are put back as they were.

Never touches: ops inside regions (only top-level calls and stretches are rolled), calls
outside a run; the calls it leaves are inlined by `inline` as before.

When it runs: only with `compiler_options={"roll_layers": True}` (or `"host"`: every stack
plain, for the host loop to split the program at its scans, `_segments.py`), never in a
partitioned program. It is off by default because rolling costs memory traffic the unrolled program
does not have: the per-layer parameters are copied into stacks on every call (each run's
`stacked_bytes` says how much), or on CPU each trip's into the case's buffers, unless the
compiler takes the stacks as arguments (`stacked_params`, on with roll_layers: the
per-layer arrays stay row views of one stack between calls, `purejit/compiler/
stacked_params.py`); and the loop's stacked outputs are buffers XLA zero-fills. The rule
for turning it on by itself (unpartitioned, runs of at least 8 blocks, the stacking bytes
under 2% of the step's traffic) and the CPU figures that keep it off are in
docs/benchmarks/roll_layers_cpu.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from purejit.ir import Function, Op, TensorType, Value
from purejit.passes._outline import inline_marked, outline_repeats
from purejit.passes._roll_runs import Run, callee, find_runs
from purejit.passes._stacking import (
    direction,
    earlier_rows,
    pack_values,
    rows_of,
    select_rows,
    stack_packed,
    stack_rows,
)
from purejit.passes._row_index import RowIndices
from purejit.passes.base import PassResult


def _new_op(name: str, operands, attrs: dict, regions=(), loc=None) -> Op:
    return Op.inferred(name, operands, attrs, regions, loc)


def _row_key(ys, i: int) -> tuple:
    """What `unstacked` records for row `i` of `ys` (a stacked value or a `_Packed` ys): the
    stack and the row, and for a packed value its columns."""
    if isinstance(ys, _Packed):
        return ys.ys, i, (ys.offset, ys.size, ys.shape)
    return ys, i


@dataclass(frozen=True)
class _Packed:
    """One ys of a scan that packs several: its columns `offset:offset+size` of `ys` hold
    the values, each a row reshaped to `shape`."""

    ys: Value
    offset: int
    size: int
    shape: tuple


def _row_form(ys) -> tuple:
    """How `_unstack` reads a row of `ys` (a stacked value or a `_Packed` ys): the stack,
    the slice's sizes and type, the row's shape and type, and the packed columns' offset
    (None for a plain stack). The same for every row, so made once per ys."""
    if isinstance(ys, _Packed):
        shape, sizes, offset, ys = list(ys.shape), [1, ys.size], ys.offset, ys.ys
    else:
        shape = list(ys.type.shape[1:])
        sizes, offset = [1, *shape], None
    dt = ys.type.dtype
    return ys, sizes, TensorType(tuple(sizes), dt), shape, TensorType(tuple(shape), dt), offset


def _unstack(form: tuple, i: int, out: list[Op], index: RowIndices) -> Value:
    """Row `i` of a stack read as `form` says (`_row_form`; ops appended to `out`), read at
    the runtime index `index(i)`: the rows of one shape are then one kernel to XLA, where
    a slice at a constant offset is one per row (`_row_index.py`)."""
    ys, sizes, slice_type, shape, row_type, offset = form
    if offset is not None:
        starts = [index(i), index.constant(offset)]
    else:
        starts = [index(i)] + [index.constant(0) for _ in shape]
    # the types `Op.inferred` would give (the pipeline's last verify checks them), made
    # once per stack: a 48-layer step reads about a thousand rows here
    sl = Op("dynamic_slice", [ys, *starts], {"slice_sizes": sizes}, [Value(slice_type)])
    row = Op("reshape", sl.results, {"shape": shape}, [Value(row_type)])
    out += [sl, row]
    return row.results[0]


def _emit_run(
    ops: list[Op],
    run: Run,
    rep: dict,
    unstacked: dict,
    used: set,
    out: list[Op],
    pack: int,
    index: RowIndices,
    pack_xs: bool = True,
    args: frozenset = frozenset(),
    select_xs: bool = False,
    select_min_bytes: int = 0,
    reread: frozenset = frozenset(),
):
    """Append the stacking ops, the scan and the slices of its ys that something reads to
    `out` (at the runtime indices of `index`); `rep` maps each replaced block result to its
    new value; the ys of one dtype of at most `pack` bytes each are packed into one
    (`pack_values`), and with `pack_xs` so are the per-block operands of one dtype stacked
    from the function's arguments `args` (`stack_packed`); with `select_xs` those are not
    stacked at all but read per trip by a `case` (`select_rows`), unless another run reads
    them too (`reread`) and their stack is under `select_min_bytes`. Returns the report."""
    blocks = [ops[i] for i in run.blocks]
    n, first = len(blocks), blocks[0]
    body = first.regions[0]
    carry_j = [j for j, _ in run.carry]
    carry_r = [r for _, r in run.carry]
    others = [j for j in range(len(first.operands)) if j not in carry_j]
    shared = [j for j in others if all(b.operands[j] is first.operands[j] for b in blocks)]
    per = [j for j in others if j not in shared]
    mapped = [[rep.get(b.operands[j], b.operands[j]) for b in blocks] for j in per]
    reverse = direction(mapped, unstacked)
    order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
    xs, xs_params, reused, stack_bytes = [], [], 0, 0
    # per-block operand -> (the earlier stack it reads rows of, the operand owning the
    # index, the columns of a packed ys or None)
    indexed: dict[int, tuple[Value, int, tuple | None]] = {}
    index_of: dict[tuple, int] = {}
    index_params: dict[int, Value] = {}
    x_of: dict[int, Value] = {}  # per-block operand -> its xs
    odd_of: dict[int, tuple[Value, Value]] = {}  # its one row from elsewhere, and its param
    fresh: dict = {}  # dtype -> the operands stacked from the blocks' values
    selected: list = []  # (operand, its values): the function's arguments, read by a case

    def index_xs(idx: list[int], j: int) -> int:
        """The operand owning the xs of row indices `idx` (one xs per distinct list)."""
        if tuple(idx) not in index_of:
            c = _new_op("constant", [], {"value": np.asarray(idx, np.int32)})
            out.append(c)
            index_of[tuple(idx)] = j
            index_params[j] = Value(TensorType((), np.dtype(np.int32)))
            xs.append(c.results[0])
            xs_params.append(index_params[j])
            x_of[j] = c.results[0]
        return index_of[tuple(idx)]

    for j, values in zip(per, mapped):
        rows = [values[k] for k in order]
        src = rows_of(rows, unstacked)
        if src is not None:
            # rows of an earlier stack other than the whole of it in order: the body reads
            # them from that stack (a loop constant) at an index passed as xs, where a slice
            # (which XLA turns into a copy, or a second concatenate of the stacked operands)
            # would copy them
            stack, idx, cols, odd = src
            if odd is not None:  # a loop constant, read at the row whose index is -1
                odd_of[j] = (rows[odd], Value(rows[odd].type))
            indexed[j] = (stack, index_xs(idx, j), cols)
            reused += 1
            continue
        x = earlier_rows(rows, out, unstacked)
        if x is None and select_xs and all(v in args for v in rows):
            selected.append((j, rows))
            continue
        if x is None:
            # the function's arguments (a layer's parameters) are packed; a computed value
            # is left a stack of its own, for XLA to fold (a constant's broadcasts) or fuse
            # its producers into
            key = rows[0].type.dtype if pack_xs and all(v in args for v in rows) else j
            fresh.setdefault(key, []).append((j, rows))
            continue
        xs.append(x)
        xs_params.append(body.params[j])
        x_of[j] = x
        reused += 1
    size = sum(v.type.nbytes for _, rows in selected for v in rows)
    if any(v in reread for _, rows in selected for v in rows) and size < select_min_bytes:
        # stacked once for this loop and the later one that reads them (the backward)
        for j, rows in selected:
            fresh.setdefault(rows[0].type.dtype if pack_xs else j, []).append((j, rows))
        selected = []
    packed_xs = 0
    for group in fresh.values():
        if len(group) > 1:
            # one stack, a loop constant; each operand read as its columns of the trip's
            # row by one dynamic_slice (which XLA can hand a dot in place), where the row
            # as xs would be sliced twice (the row, then its columns)
            x, cols = stack_packed([rows for _, rows in group], out, unstacked)
            stack_bytes += x.type.nbytes
            owner = index_xs(list(range(n)), group[0][0])
            for (j, _), c in zip(group, cols):
                indexed[j] = (x, owner, c)
            packed_xs += len(group)
            continue
        for j, rows in group:
            x, _ = stack_rows(rows, out, unstacked)
            xs.append(x)
            xs_params.append(body.params[j])
            x_of[j] = x
            stack_bytes += x.type.nbytes
            # a later scan reading the same values (the backward pass) reads x
            for i, v in enumerate(rows):
                unstacked.setdefault(v, (x, i))
    case, select_consts, select_params = None, [], []
    if selected:
        owner = index_xs(list(range(n)), selected[0][0])
        per_values = [rows for _, rows in selected]
        made = [body.params[j] for j, _ in selected]
        select_consts, select_params, case = select_rows(per_values, index_params[owner], made)
    for p in run.constants:
        rows = [blocks[k].regions[0].ops[p].attrs["value"] for k in order]
        c = _new_op("constant", [], {"value": np.stack(rows)}, loc=body.ops[p].loc)
        out.append(c)
        xs.append(c.results[0])
    # the scan's body: the first block's function with its parameters in scan order
    # (shared, carried, per-block slices, stacked constants) and its results (carried, ys)
    skip = set(run.constants)
    # one loop constant per earlier stack (several operands may read one packed ys; a
    # buffer passed twice into a loop would be copied)
    stack_params = {id(s): (s, Value(s.type)) for s, _, _ in indexed.values()}
    params = [body.params[j] for j in shared] + [p for _, p in stack_params.values()]
    params += [p for _, p in odd_of.values()] + select_params
    params += [body.params[j] for j in carry_j]
    # one parameter per xs: a stack's row (a packed one's), or a shared row index
    params += xs_params
    params += [body.ops[p].results[0] for p in run.constants]
    # an indexed operand's row: dynamic_slice then reshape, made as the old param; the
    # selected operands: the case's results
    head = [case] if case is not None else []
    if indexed:
        zero = _new_op("constant", [], {"value": np.asarray(0, np.int32)})
        head.append(zero)
    offsets = {0: zero.results[0]} if indexed else {}
    for j, (stack, k, cols) in indexed.items():
        if cols is None:
            starts = [index_params[k]] + [zero.results[0]] * (stack.type.rank - 1)
            sizes, shape = [1, *stack.type.shape[1:]], list(stack.type.shape[1:])
        else:  # the columns of a packed ys
            if cols[0] not in offsets:
                c = _new_op("constant", [], {"value": np.asarray(cols[0], np.int32)})
                head.append(c)
                offsets[cols[0]] = c.results[0]
            starts, sizes, shape = [index_params[k], offsets[cols[0]]], [1, cols[1]], cols[2]
        ds = _new_op("dynamic_slice", [stack_params[id(stack)][1], *starts], {"slice_sizes": sizes})
        if j not in odd_of:
            head += [ds, Op("reshape", ds.results, {"shape": list(shape)}, [body.params[j]])]
            continue
        # row -1 (clamped to 0 by the slice) is the loop constant: a select XLA fuses with
        # the slice into their readers, where a concatenate of the rows would copy them all
        row = _new_op("reshape", ds.results, {"shape": list(shape)})
        neg = _new_op("compare", [index_params[k], zero.results[0]], {"comparison_direction": "LT"})
        sel = Op("select", [neg.results[0], odd_of[j][1], row.results[0]], {}, [body.params[j]])
        head += [ds, row, neg, sel]
    # a result that is a parameter needs no ys: it is the stacked (or shared) operand
    made_by_case = {j for j, _ in selected}
    passed = {}
    for r, v in enumerate(body.results):
        if r in carry_r or v not in body.params:
            continue
        j = body.params.index(v)
        if j in per and j not in indexed and j not in made_by_case:
            passed[r] = ("per", x_of[j])
        elif j in shared:
            passed[r] = ("shared", rep.get(first.operands[j], first.operands[j]))
    ys_r = [r for r in range(len(body.results)) if r not in carry_r and r not in passed]
    ys_r += run.carry_out
    # one ys per distinct value (a body may return one value at several places)
    ys_values = list(dict.fromkeys(body.results[r] for r in ys_r))
    carried = [body.results[r] for r in carry_r]
    # a carried result read outside the chain packs too: the row's write reads the new
    # carry after it is made (reading the old one instead would make XLA copy the carry
    # on every trip, since nothing orders that read before the new carry overwrites it)
    packs, pack_ops, packed_at = pack_values(ys_values, set(), pack)
    plain = [v for v in ys_values if v not in packed_at]
    rows = [op.results[0] for op in pack_ops if op.name == "concatenate"]
    results = carried + plain + rows
    kept = head + [op for k, op in enumerate(body.ops) if k not in skip] + pack_ops
    new_body = Function(body.name, params, kept, results)
    operands = [rep.get(first.operands[j], first.operands[j]) for j in shared]
    operands += [s for s, _ in stack_params.values()]
    operands += [v for v, _ in odd_of.values()] + select_consts
    operands += [rep.get(first.operands[j], first.operands[j]) for j in carry_j]
    attrs = {
        "length": n,
        "reverse": reverse,
        "unroll": 1,
        "num_consts": len(shared) + len(stack_params) + len(odd_of) + len(select_consts),
        "num_carry": len(carry_j),
    }
    scan = _new_op("scan", operands + xs, attrs, [new_body], loc=first.loc)
    out.append(scan)
    for m, r in enumerate(carry_r):
        rep[blocks[-1].results[r]] = scan.results[m]
    ys_out = scan.results[len(carry_r) :]
    stacked = {}
    for r in ys_r:
        v = body.results[r]
        if v in packed_at:
            g, offset, size, shape = packed_at[v]
            stacked[r] = _Packed(ys_out[len(plain) + g], offset, size, shape)
        else:
            stacked[r] = ys_out[plain.index(v)]
    for m, r in enumerate(carry_r):
        if r in stacked:  # the final carry is also the last block's row of its ys
            unstacked.setdefault(scan.results[m], _row_key(stacked[r], 0 if reverse else n - 1))
    for r, (kind, value) in passed.items():
        if kind == "shared":
            rep.update((b.results[r], value) for b in blocks)
        else:
            stacked[r] = value
    unstack_bytes = 0  # rows sliced out (those only a later scan reads are removed by DCE)
    for r, ys in stacked.items():
        form = _row_form(ys)
        for k, b in enumerate(blocks):
            if r in carry_r and k == n - 1:
                continue  # the last block's carried value is the scan's final carry
            if b.results[r] in used:
                i = n - 1 - k if reverse else k
                row = _unstack(form, i, out, index)
                unstack_bytes += row.type.nbytes
                rep[b.results[r]] = row
                unstacked[row] = _row_key(ys, i)
    return {
        "callee": callee(first),
        "blocks": n,
        "shared": len(shared),
        "carried": len(carry_j),
        "per_block": len(per),
        "stacked_constants": len(run.constants),
        "carried_also_stacked": len(run.carry_out),
        "reverse": reverse,
        "stacks_reused": reused,
        "xs_packed": packed_xs,
        "xs_selected": len(selected),
        "rows_from_outside": len(odd_of),
        "ys_packed": sum(len(vs) for vs in packs),
        "ys": len(plain) + len(packs),
        "stacked_bytes": stack_bytes,
        "unstacked_bytes": unstack_bytes,
        "loc": first.loc,
    }


def roll(
    fn: Function,
    runs: list[Run],
    pack: int = 1 << 20,
    pack_xs: bool = True,
    select_xs: bool = False,
    select_min_bytes: int = 0,
) -> tuple[Function, list[dict]]:
    """`fn` with each of `runs` (from `find_runs`) rewritten as one scan, and a report per
    run. Ops between a run's blocks that read the chain's values move after the scan;
    each scan's ys of one dtype of at most `pack` bytes each are packed into one (`pack_values`;
    0: none); `pack_xs`, `select_xs` and `select_min_bytes` as `RollLayers`'s."""
    if not runs:
        return fn, []
    ops = fn.ops
    block_of = {i: (ri, k) for ri, run in enumerate(runs) for k, i in enumerate(run.blocks)}
    defer_of: dict[int, int] = {}
    for ri, run in enumerate(runs):
        tainted = {v for i in run.blocks for v in ops[i].results}
        for i in range(run.blocks[0] + 1, run.blocks[-1]):
            if i not in block_of and any(v in tainted for v in ops[i].operands):
                defer_of[i] = ri
                tainted.update(ops[i].results)
    used = {v for op in ops for v in op.operands} | set(fn.results)
    args = frozenset(fn.params)
    readers: dict[Value, set[int]] = {}
    for ri, run in enumerate(runs):
        for v in (v for i in run.blocks for v in ops[i].operands if v in args):
            readers.setdefault(v, set()).add(ri)
    reread = frozenset(v for v, rs in readers.items() if len(rs) > 1)
    rep: dict[Value, Value] = {}
    unstacked: dict[Value, tuple[Value, int]] = {}
    deferred: dict[int, list[Op]] = {ri: [] for ri in range(len(runs))}
    out: list[Op] = []
    index = RowIndices(max(len(run.blocks) for run in runs), out)
    reports = []

    def emit(op: Op):
        out.append(op.rebuilt([rep.get(v, v) for v in op.operands], op.regions))

    for i, op in enumerate(ops):
        if i in block_of:
            ri, k = block_of[i]
            if k == len(runs[ri].blocks) - 1:
                run = runs[ri]
                report = _emit_run(
                    ops, run, rep, unstacked, used, out, pack, index, pack_xs, args,
                    select_xs, select_min_bytes, reread,
                )  # fmt: skip
                reports.append(report)
                for d in deferred[ri]:
                    emit(d)
            continue
        if i in defer_of:
            deferred[defer_of[i]].append(op)
            continue
        emit(op)
    results = [rep.get(v, v) for v in fn.results]
    return Function(fn.name, fn.params, out, results), reports


@dataclass(frozen=True)
class RollLayers:
    """The pass: runs of isomorphic calls rolled into scans (see the module docstring).

    Attributes:
        min_blocks: the fewest calls a run needs to be rolled.
        outline: whether repeated stretches of ops (a Python loop traced without a jitted
            layer) are cut into calls first (`_outline.py`), to be rolled like calls.
        min_block_ops: the fewest ops such a stretch's blocks need.
        pack_ys: whether each scan's stacked outputs of one dtype are packed into one, so
            that a trip writes them with one dynamic-update-slice (`pack_values`): fewer
            launches, for a GPU; the compiler turns it off on CPU, where XLA does not fuse
            the row's concatenate into the write and the step measured 15% slower.
        pack_max_bytes: the largest value (one block's) that is packed.
        pack_xs: whether the per-block operands of one dtype stacked from the blocks'
            values (a layer's parameters) are stacked as one (`stack_packed`): one
            concatenate per call instead of one per parameter.
        select_xs: whether the per-block operands that are the function's arguments are
            not stacked at all: each is a loop constant, and a `case` on the trip's row
            returns the trip's block's values (`select_rows`); the compiler turns it on on
            CPU, where the stack's concatenate is most of XLA's compile of a rolled forward
            pass (0.1 s at 48 layers) and a fresh buffer to write on every call.
        select_min_bytes: with `select_xs`, arguments a later rolled loop reads too (a
            training step's backward reads the forward's parameters) are still stacked,
            once for both loops, when their stack is smaller than this: on CPU a buffer
            under glibc's largest mmap threshold (32 MiB) is reused from call to call, and
            the 12-layer bench step measured 1-3% faster stacked; a larger one is mapped
            afresh on every call, and the 48-layer step measured 15% faster selected.
    """

    name: str = "roll_layers"
    min_blocks: int = 2
    outline: bool = True
    min_block_ops: int = 8
    pack_ys: bool = True
    pack_xs: bool = True
    pack_max_bytes: int = 1 << 20
    select_xs: bool = False
    select_min_bytes: int = 32 << 20

    def __call__(self, fn: Function) -> PassResult:
        work, made = fn, 0
        if self.outline:  # a loop traced flat: its repeated stretches become calls first
            work, made = outline_repeats(fn, self.min_block_ops)
        if not made and not any(op.name == "call" for op in fn.ops):
            return PassResult(fn, False, {"runs_rolled": 0, "rolled": [], "refused": []})
        runs, refused = find_runs(work, self.min_blocks)
        pack = self.pack_max_bytes if self.pack_ys else 0
        new, rolled = roll(work, runs, pack, self.pack_xs, self.select_xs, self.select_min_bytes)
        if not rolled:
            new = fn
        elif made:  # the outlined blocks that were not rolled go back as they were
            new = inline_marked(new)
        report = {
            "runs_rolled": len(rolled),
            "blocks_rolled": sum(r["blocks"] for r in rolled),
            "rolled": rolled,
            "refused": refused,
        }
        return PassResult(new, bool(rolled), report)
