"""How `roll_layers` turns per-block values into stacks.

A scan takes each per-block value as a stack along a new leading axis (its xs) and returns
what each block makes as a stack too (its ys). A stack built inside the program is written
on every call (unless the compiler passes it in as an argument: `stacked_params`, which
keeps the per-layer arrays as row views of one stack between calls), and every row read
outside the loop or every column read inside it is a copy unless XLA fuses it into its
reader. These helpers choose the stacks: an earlier scan's stack read as it is or by row
index, and values of one dtype packed side by side in one row (one write or one
concatenate instead of one each).
"""

from __future__ import annotations

from purejit.ir import Function, Op, Value


def new_op(name: str, operands, attrs: dict, regions=(), loc=None) -> Op:
    return Op.inferred(name, operands, attrs, regions, loc)


def stack_rows(values: list[Value], out: list[Op], unstacked: dict) -> tuple[Value, bool]:
    """`values` stacked along a new leading axis (ops appended to `out`), and whether an
    earlier scan's ys were read as they are (`earlier_rows`)."""
    earlier = earlier_rows(values, out, unstacked)
    if earlier is not None:
        return earlier, True
    rows = []
    for v in values:
        op = new_op("reshape", [v], {"shape": [1, *v.type.shape]})
        out.append(op)
        rows.append(op.results[0])
    op = new_op("concatenate", rows, {"dimension": 0})
    out.append(op)
    return op.results[0], False


def earlier_rows(values: list[Value], out: list[Op], unstacked: dict) -> Value | None:
    """An earlier scan's ys when `values` are consecutive rows of it, in order: the ys
    itself, or one slice of it (appended to `out`); else None."""
    src = [unstacked.get(v) for v in values]
    n = len(values)
    if all(src) and len({id(s[0]) for s in src}) == 1 and all(len(s) == 2 for s in src):
        ys, a = src[0][0], src[0][1]
        if [s[1] for s in src] == list(range(a, a + n)):
            if a == 0 and ys.type.shape[0] == n:
                return ys
            # rows a..a+n-1 of the earlier ys: one slice
            shape = ys.type.shape
            attrs = {
                "start_indices": [a] + [0] * (len(shape) - 1),
                "limit_indices": [a + n, *shape[1:]],
                "strides": [1] * len(shape),
            }
            op = new_op("slice", [ys], attrs)
            out.append(op)
            return op.results[0]
    return None


def stack_packed(per_block: list[list[Value]], out: list[Op], unstacked: dict):
    """Per-block operands of one dtype (`per_block[m]`: operand m's value in each block, in
    scan order) stacked as one: row k holds block k's values flattened, side by side. Each
    per-layer parameter is copied into a stack on every call (built in the program): one
    concatenate writes them all, where a stack each would be a kernel each, and the loops
    take one stack instead of one per parameter. Returns the stack and, per operand, its
    `(offset, size, shape)` in a row; records each value's row and columns in `unstacked`
    for the scans that read them later (the backward pass)."""
    cols, offset = [], 0
    for values in per_block:
        t = values[0].type
        cols.append((offset, t.size, tuple(t.shape)))
        offset += t.size
    flat = []
    for k in range(len(per_block[0])):
        for values in per_block:
            op = new_op("reshape", [values[k]], {"shape": [values[k].type.size]})
            out.append(op)
            flat.append(op.results[0])
    cat = new_op("concatenate", flat, {"dimension": 0})
    stack = new_op("reshape", cat.results, {"shape": [len(per_block[0]), offset]})
    out += [cat, stack]
    for values, c in zip(per_block, cols):
        for k, v in enumerate(values):
            unstacked.setdefault(v, (stack.results[0], k, c))
    return stack.results[0], cols


def rows_of(values: list[Value], unstacked: dict):
    """`(stack, rows, columns, odd)` when `values` are rows of one earlier stack (ys or
    stacked xs) other than all of it in order (which is read as it is), or the same columns
    of rows of a packed ys (`columns`: `(offset, size, shape)`, else None); else None.

    One value of at least three may come from elsewhere (`odd`: its position; its row is
    -1): the backward pass reads each layer's input, which is the previous layer's saved
    output except for the first layer, whose input comes from before the loop. Else None.
    """
    src = [unstacked.get(v) for v in values]
    keys = [(id(s[0]), s[2:]) if s else None for s in src]
    common = max(set(keys), key=keys.count)
    odd = [i for i, key in enumerate(keys) if key != common]
    if common is None or len(odd) > (1 if len(values) >= 3 else 0):
        return None
    first = src[keys.index(common)]
    stack, cols = first[0], first[2] if len(first) > 2 else None
    idx = [-1 if i in odd else s[1] for i, s in enumerate(src)]
    if not odd and cols is None and idx == list(range(stack.type.shape[0])):
        return None
    return stack, idx, cols, odd[0] if odd else None


def pack_values(values: list[Value], keep: set, max_bytes: int):
    """Groups of at least two of a body's ys `values` (not in `keep`, at most `max_bytes`
    each) of one dtype, each returned as one row: a `concatenate` of the values flattened.

    A scan writes each ys into its stack with one dynamic-update-slice per trip: one kernel
    per saved value and layer, where the unrolled program keeps the value in its own
    buffer. Packed, a layer's saved values of one dtype are one row, written at once. A
    large value stays a ys of its own: its write costs its bytes more than a launch, and a
    back end that does not fuse the row's concatenate into the write would copy it twice.

    Returns:
        (the groups, the ops to append to the body, each packed value's (group, offset,
        size, shape)); the body returns each group's row (the `concatenate` ops' results).
    """
    groups: dict = {}
    for v in values:
        if v not in keep and 0 < v.type.nbytes <= max_bytes:
            groups.setdefault(v.type.dtype, []).append(v)
    packs = [vs for vs in groups.values() if len(vs) > 1]
    ops, where = [], {}
    for g, vs in enumerate(packs):
        flat, offset = [], 0
        for v in vs:
            size = v.type.size
            r = new_op("reshape", [v], {"shape": [size]})
            ops.append(r)
            flat.append(r.results[0])
            where[v] = (g, offset, size, tuple(v.type.shape))
            offset += size
        ops.append(new_op("concatenate", flat, {"dimension": 0}))
    return packs, ops, where


def direction(per_block: list[list[Value]], unstacked: dict) -> bool:
    """Whether the scan runs in reverse: when more per-block operands are an earlier scan's
    ys in reverse order than in order (the backward pass of a rolled forward pass)."""
    fwd = rev = 0
    for values in per_block:
        src = [unstacked.get(v) for v in values]
        if not all(src) or len({id(s[0]) for s in src}) != 1:
            continue
        idx = [s[1] for s in src]
        fwd += idx == list(range(idx[0], idx[0] + len(idx)))
        rev += idx == list(range(idx[0], idx[0] - len(idx), -1))
    return rev > fwd


def select_rows(per_block: list[list[Value]], index: Value, results: list[Value]):
    """Per-block operands read without a stack: the scan takes each block's values as loop
    constants and a `case` on the trip's row `index` returns block k's values in branch k
    (`per_block[m][k]`: operand m's value in block k, in scan order), as `results`.

    A stack of a layer's parameters built in the program is written on every call and XLA's
    CPU compiler spends about 0.25 ms of LLVM per operand of its concatenate (0.1 s for the
    384 parameters of a 48-layer transformer), the stack a fresh 36 MiB buffer per call
    there. The case copies one block's values per trip instead, into buffers the loop
    reuses, and its branches are plain copies, no generated code.

    Returns:
        (the distinct values, each a loop constant; a body parameter for each; the `case`
        op, whose results are `results`).
    """
    consts = list(dict.fromkeys(v for values in per_block for v in values))
    pos = {v: i for i, v in enumerate(consts)}
    types = [v.type for v in consts]
    params = list(map(Value, types))
    branches = []
    for k in range(len(per_block[0])):
        own = list(map(Value, types))  # a branch takes every operand of the case
        branches.append(Function(f"row_{k}", own, [], [own[pos[vs[k]]] for vs in per_block]))
    case = Op("case", [index, *params], {}, results, branches)
    return consts, params, case
