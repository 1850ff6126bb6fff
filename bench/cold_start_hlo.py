"""What a rolled program spends moving per-layer arrays in and out of stacks, read from the
compiled HLO (XLA's optimised module text, `compiled.as_text()`).

With the stacks built in the program (`compiler_options={"stacked_params": False}`, or where a
stack cannot be an argument) a list of per-layer parameters is copied into one stack on
every call, the loop's stacked outputs (a forward scan's saved residuals, a backward scan's
per-layer gradients) are buffers the program fills (XLA zero-initialises them) and whose rows
are sliced back out where something outside the loop reads a layer's value. Counted on the
entry computation only (the loop bodies' own reads of their slices are the layer's work),
as bytes written per call:

    stack      instructions that concatenate (a fusion whose computation holds `concatenate`,
               whatever else XLA fused into it)
    ys_init    constant broadcasts that become a loop's operand, and their copies
    unstack    instructions reading a loop's result through a `slice`/`dynamic-slice`

Fusions that compute (an update of a layer's parameter reading a slice of the stacked
gradients) are left out: the unrolled program does that work too.
"""

from __future__ import annotations

import re

_BYTES = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s16": 2, "u16": 2, "f32": 4,
          "s32": 4, "u32": 4, "f64": 8, "s64": 8, "u64": 8, "c64": 8, "c128": 16}  # fmt: skip
_MOVES = {"parameter", "slice", "dynamic-slice", "bitcast", "reshape", "copy", "transpose",
          "concatenate", "broadcast", "constant", "tuple", "get-tuple-element"}  # fmt: skip
_INSTR = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = ([a-z0-9]+)\[([0-9,]*)\]\S* ([\w\-]+)\((.*)")


def _nbytes(dtype: str, dims: str) -> int:
    n = _BYTES.get(dtype, 4)
    for d in filter(None, dims.split(",")):
        n *= int(d)
    return n


def _computations(text: str) -> dict[str, list[str]]:
    comps: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        head = re.match(r"^(ENTRY )?%([\w.\-]+) ", line)
        if head and line.rstrip().endswith("{"):
            name = "ENTRY" if head.group(1) else head.group(2)
            comps[name] = []
        elif line.startswith("}"):
            name = None
        elif name is not None:
            comps[name].append(line)
    return comps


def _ops(text: str) -> set[str]:
    """The opcodes of the instructions in `text` (a result type may carry a layout:
    `f32[2,64]{1,0} add(`)."""
    return set(re.findall(r"= \S+ ([a-z][a-z0-9\-]*)\(", text))


_NOT_KERNELS = {"parameter", "constant", "bitcast", "tuple", "get-tuple-element", "while"}


def kernel_counts(text: str) -> dict:
    """`{"entry": n, "loop_bodies": [n, ...]}`: the instructions that launch work in the
    entry computation and in each of its while loops' bodies (fusions, custom calls such as
    cuBLAS gemms, copies, unfused ops; not parameters, constants, bitcasts, tuples, nor
    the while itself). On a GPU each is a kernel launch (a launch-bound step's cost); on a
    CPU a proxy for it. A loop body's count is paid once per trip."""
    comps = _computations(text)
    op = re.compile(r"^\s*(?:ROOT )?%[\w.\-]+ = (?:\(.*\)|\S+) ([a-z][a-z0-9\-]*)\(")

    def count(lines: list[str]) -> int:
        ops = [m.group(1) for m in map(op.match, lines) if m]
        return sum(o not in _NOT_KERNELS for o in ops)

    entry = comps.get("ENTRY", [])
    bodies = re.findall(r" while\(.*body=%([\w.\-]+)", "\n".join(entry))
    return {"entry": count(entry), "loop_bodies": [count(comps.get(b, [])) for b in bodies]}


def stacking_bytes(text: str) -> dict[str, int]:
    """`{"stack": B, "ys_init": B, "unstack": B, "loops": n}` for the compiled HLO `text`."""
    comps = _computations(text)
    out = {"stack": 0, "ys_init": 0, "unstack": 0, "loops": 0}
    entry = comps.get("ENTRY", [])
    instrs = []
    for line in entry:
        m = _INSTR.match(line)
        if m:
            instrs.append((m.group(1), m.group(2), m.group(3), m.group(4), m.group(5), line))
    loops = set(re.findall(r"^\s*%([\w.\-]+) = \(.*\) while\(", "\n".join(entry), re.M))
    out["loops"] = len(loops)
    loop_results = {
        name
        for name, _, _, op, rest, _ in instrs
        if op == "get-tuple-element" and any(f"%{w})" in rest for w in loops)
    }
    consts = {name for name, _, _, op, _, _ in instrs if op == "constant"}
    zeros: set[str] = set()

    def body(line: str) -> str:
        m = re.search(r"calls=%([\w.\-]+)", line)
        return "\n".join(comps.get(m.group(1), [])) if m else ""

    def moves_only(inner: str) -> bool:  # a fusion that computes nothing, only moves data
        return _ops(inner) <= _MOVES

    for name, dtype, dims, op, rest, line in instrs:
        nbytes = _nbytes(dtype, dims)
        operands = re.findall(r"%([\w.\-]+)", rest.split("),")[0])
        inner = body(line) if op == "fusion" else ""
        if op == "concatenate" or " concatenate(" in inner:
            out["stack"] += nbytes  # a stack written, whatever XLA fused into its rows
        elif inner and not moves_only(inner):
            continue  # arithmetic reading a slice (an update of a layer's parameter) is work
        elif (
            (op == "broadcast" or " broadcast(" in inner)
            and operands
            and all(u in consts for u in operands)
        ):
            if dims.count(",") >= 1:  # a stacked buffer, not a scalar's splat
                zeros.add(name)
                out["ys_init"] += nbytes
        elif op == "copy" and operands and operands[0] in zeros:
            zeros.add(name)
            out["ys_init"] += nbytes
        elif any(u in loop_results for u in operands) and (
            op in ("slice", "dynamic-slice") or " slice(" in inner or " dynamic-slice(" in inner
        ):
            out["unstack"] += nbytes
    return out


_KINDS = ("row reads", "row writes", "loop copies", "counter", "layout copies", "compute")
_LINE = re.compile(r"^\s*(?:ROOT )?%[\w.\-]+ = (\(.*\)|\S+) ([a-z][a-z0-9\-]*)\(")


def _kind(opcode: str, result: str, inner: list[str]) -> str:
    """What one launched instruction of a loop body is for (see `trip_kernels`)."""
    if re.match(r"^[su]\d+\[\]", result):
        return "counter"
    if opcode == "copy":
        return "loop copies"
    if opcode in ("dynamic-slice", "dynamic-update-slice", "concatenate"):
        inner = [f"%x = {result} {opcode}("]
    # the fused computation's array-valued instructions (scalars are index arithmetic)
    ops = {m.group(2) for m in map(_LINE.match, inner) if m and not m.group(1).endswith("[]")}
    ops -= {"parameter", "constant"}
    if "dynamic-update-slice" in ops:  # whatever XLA fused into it: a stack's write
        return "row writes"
    if not ops or not ops <= _MOVES | {"dynamic-slice"}:
        return "compute"
    if "dynamic-slice" in ops:
        return "row reads"
    if "concatenate" in ops:  # a trip's values packed into one row, to be written
        return "row writes"
    return "layout copies"


def trip_kernels(text: str) -> list[dict[str, int]]:
    """For each while loop of the entry computation (in the order of `kernel_counts`), its
    body's launched instructions by what they are for:

        row reads      copies of a row of a stacked array (a layer's weight, a saved value)
                       that XLA does not fuse into its reader (a dot's operand)
        row writes     writes of a trip's saved values or gradients into their stacks
                       (dynamic-update-slices, whatever XLA fused into them) and the
                       concatenates packing them into one row
        loop copies    copies XLA inserts to keep a loop-carried value it overwrites
        counter        the loop counter's arithmetic (scalar integers)
        layout copies  transposes and other data moves without a dynamic index (the
                       unrolled layer has these too)
        compute        everything else: the layer's own kernels

    The first four are what a trip adds to the unrolled layer's kernels."""
    comps = _computations(text)
    entry = "\n".join(comps.get("ENTRY", []))
    out = []
    for body in re.findall(r" while\(.*body=%([\w.\-]+)", entry):
        kinds = dict.fromkeys(_KINDS, 0)
        for line in comps.get(body, []):
            m = _LINE.match(line)
            if not m or m.group(2) in _NOT_KERNELS:
                continue
            called = re.search(r"calls=%([\w.\-]+)", line)
            inner = comps.get(called.group(1), []) if called else []
            kinds[_kind(m.group(2), m.group(1), inner)] += 1
        out.append(kinds)
    return out
