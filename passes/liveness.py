"""Liveness and buffer assignment: where every value lives, and the peak memory it needs.

`memory_plan(fn)` walks the top-level ops in program order (the schedule), computes each
value's live range `[defined, last use]`, and assigns buffers:

* parameters own their buffers; a parameter's buffer is reusable after its last use only if
  it is donated (the caller keeps the others);
* an elementwise op whose operand dies at that op writes its result in place, into the
  operand's buffer, when the byte sizes match (`a = exp(x); b = a * 2` reuses `a`);
* other results take the best-fitting free buffer of a dead value, or a new one;
* results of the function are outputs: they get their own buffers, are written in place
  over a dying operand, or, for donated parameters paired by `pair_aliases`, into that
  parameter's buffer (what `tf.aliasing_output` asks XLA to do);
* constants live in the executable (counted apart, as XLA does), and a value that is larger
  than its operands and only feeds elementwise ops (`broadcast_in_dim` of a scalar, `iota`)
  is assumed fused into its users, as every XLA backend does, and gets no buffer.

The peak is the largest sum of live buffers at any op: comparable to XLA's
`peak_memory_in_bytes` (arguments + outputs + temporaries), while `temp_bytes` compares with
`temp_size_in_bytes`. The plan is of purejit's program, before XLA fuses it further, so it
is an upper estimate where XLA fuses more than purejit's fusion pass did.

`BufferAssignment` is the pass form: it leaves the function unchanged and reports the plan.
Regions are not planned on their own: an op with regions counts as one op.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from purejit.ir import Function, TensorType, Value
from purejit.passes.base import PassResult


def pair_aliases(
    param_types: Sequence[TensorType], donated: Sequence[bool], result_types: Sequence[TensorType]
) -> tuple[dict[int, int], list[int]]:
    """Pair each donated parameter with the first unclaimed result of the same type.

    Returns:
        `(aliases, unusable)`: parameter index -> result index, and the donated parameters
        no result could reuse.
    """
    if len(donated) != len(param_types):
        raise ValueError(f"{len(donated)} donation flags for {len(param_types)} parameters")
    free = list(range(len(result_types)))
    aliases: dict[int, int] = {}
    unusable: list[int] = []
    for i, (t, d) in enumerate(zip(param_types, donated)):
        if not d:
            continue
        hit = next((o for o in free if result_types[o] == t), None)
        if hit is None:
            unusable.append(i)
        else:
            free.remove(hit)
            aliases[i] = hit
    return aliases, unusable


@dataclass
class Buffer:
    """One allocation of the plan and the values that live in it, one after another."""

    index: int
    size: int
    kind: str  # "param", "output" or "temp"
    donated: bool = False
    residents: list[Value] = field(default_factory=list)


@dataclass
class MemoryPlan:
    """The buffer plan of one function and its memory numbers (bytes)."""

    fn_name: str
    buffers: list[Buffer]
    assignment: dict[Value, int]  # value -> buffer index (virtual/constant values absent)
    live_range: dict[Value, tuple[int, int]]  # value -> (defined, last use); params at -1
    in_place: set[Value]  # results written over a dying operand
    virtual: set[Value]  # values assumed fused into their users (no buffer)
    constants: set[Value]
    names: dict[Value, str]
    op_names: list[str]
    peak_bytes: int
    peak_at: int  # op index of the peak (-1: before the first op)
    aliases: dict[int, int] = field(default_factory=dict)  # param index -> result index
    alias_bytes: int = 0
    fixed: frozenset = frozenset()  # the function's parameters and results

    def _sum(self, kind: str) -> int:
        return sum(b.size for b in self.buffers if b.kind == kind)

    @property
    def param_bytes(self) -> int:
        return self._sum("param")

    @property
    def output_bytes(self) -> int:
        """All results, those written into donated parameters included (as XLA counts)."""
        return self._sum("output") + self.alias_bytes

    @property
    def temp_bytes(self) -> int:
        return self._sum("temp")

    @property
    def constant_bytes(self) -> int:
        return sum(v.type.nbytes for v in self.constants)

    @property
    def unplanned_temp_bytes(self) -> int:
        """Temporaries without any reuse: every value that is neither a parameter nor a
        result of the function in a buffer of its own."""
        return sum(v.type.nbytes for v in self.assignment if v not in self.fixed)

    def summary(self) -> dict:
        """The numbers as a flat dict (what the pass reports)."""
        return {
            "peak_bytes": self.peak_bytes,
            "peak_at_op": self.peak_at,
            "param_bytes": self.param_bytes,
            "output_bytes": self.output_bytes,
            "temp_bytes": self.temp_bytes,
            "temp_bytes_without_reuse": self.unplanned_temp_bytes,
            "alias_bytes": self.alias_bytes,
            "constant_bytes": self.constant_bytes,
            "buffers": len(self.buffers),
            "in_place": len(self.in_place),
        }

    def format(self, max_buffers: int = 40) -> str:
        """A readable plan: the totals, then one line per buffer with its values in order."""
        kinds = {k: sum(b.kind == k for b in self.buffers) for k in ("param", "output", "temp")}
        at = "entry" if self.peak_at < 0 else f"op #{self.peak_at} {self.op_names[self.peak_at]}"
        lines = [
            (
                f"memory plan of @{self.fn_name}: {len(self.assignment)} values in "
                f"{len(self.buffers)} buffers ({kinds['param']} params, "
                f"{kinds['output']} outputs, {kinds['temp']} temps)"
            ),
            f"  peak live      {_fmt(self.peak_bytes)} at {at}",
            (
                f"  params {_fmt(self.param_bytes)}, outputs {_fmt(self.output_bytes)}, "
                f"temps {_fmt(self.temp_bytes)} "
                f"(without reuse {_fmt(self.unplanned_temp_bytes)}), "
                f"aliased {_fmt(self.alias_bytes)}, constants {_fmt(self.constant_bytes)}"
            ),
        ]
        if self.virtual:
            names = ", ".join(self.names[v] for v in sorted(self.virtual, key=lambda v: v.id))
            lines.append(f"  fused into users (no buffer): {names}")
        lines.append("  buffer  kind    size        values [defined, last use]")
        for b in self.buffers[:max_buffers]:
            kind = b.kind + ("*" if b.donated else "")
            vals = " -> ".join(
                f"{self.names[v]}{list(self.live_range[v])}"
                + (" in place" if v in self.in_place else "")
                for v in b.residents
            )
            lines.append(f"  b{b.index:<6} {kind:<7} {_fmt(b.size):<11} {vals}")
        if len(self.buffers) > max_buffers:
            lines.append(f"  ... {len(self.buffers) - max_buffers} more buffers")
        if any(b.donated for b in self.buffers):
            lines.append("  (* donated parameter)")
        return "\n".join(lines)

    def format_vs_xla(self, stats) -> str:
        """purejit's numbers next to XLA's for the same program.

        Args:
            stats: what `Compiled.memory_analysis()` returns (XLA's CompiledMemoryStats:
                `peak_memory_in_bytes`, `temp_size_in_bytes`, `argument_size_in_bytes`,
                `output_size_in_bytes`, `alias_size_in_bytes`).
        """
        rows = [
            ("peak", self.peak_bytes, getattr(stats, "peak_memory_in_bytes", None)),
            ("temporaries", self.temp_bytes, stats.temp_size_in_bytes),
            ("arguments", self.param_bytes, stats.argument_size_in_bytes),
            ("outputs", self.output_bytes, stats.output_size_in_bytes),
            ("aliased", self.alias_bytes, stats.alias_size_in_bytes),
        ]
        lines = [f"  {'bytes':<12}{'purejit plan':>14}{'XLA':>14}"]
        for name, ours, xla in rows:
            theirs = "n/a" if xla is None else _fmt(int(xla))
            lines.append(f"  {name:<12}{_fmt(ours):>14}{theirs:>14}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"<memory plan @{self.fn_name}: peak {_fmt(self.peak_bytes)}>"


def _fmt(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _printed_names(fn: Function) -> dict[Value, str]:
    """The `%N` names `print_function` gives, so the plan reads next to the IR text."""
    names: dict[Value, str] = {}

    def define(v):
        names[v] = f"%{len(names)}"

    def body(f: Function):
        for op in f.ops:
            for r in op.results:
                define(r)
            for region in op.regions:
                for p in region.params:
                    define(p)
                body(region)

    for p in fn.params:
        define(p)
    body(fn)
    return names


def _fused_into_users(fn: Function, users: dict[Value, list[int]]) -> set[Value]:
    """Values larger than their operands that only feed elementwise ops (broadcasts, iotas)."""
    out: set[Value] = set()
    returned = set(fn.results)
    for op in fn.ops:
        if op.regions or len(op.results) != 1 or "pure" not in op.opdef.traits:
            continue
        (r,) = op.results
        if r in returned or not users.get(r):
            continue
        if r.type.nbytes <= sum(v.type.nbytes for v in op.operands):
            continue
        if all(fn.ops[k].is_elementwise for k in users[r]):
            out.add(r)
    return out


def memory_plan(fn: Function, *, donated: Sequence[bool] | None = None) -> MemoryPlan:
    """Live ranges, buffer assignment and peak live bytes of `fn`'s top level.

    Args:
        fn: a verified IR function; its op order is the schedule. A `purejit.Lowered` is
            accepted too: its optimised function and its donated arguments are used.
        donated: one bool per parameter; donated parameters are paired with outputs of the
            same type (`pair_aliases`) and their buffers are reusable after their last use.
    Returns:
        A MemoryPlan (`.format()` prints it, `.summary()` gives the numbers,
        `.format_vs_xla(compiled.memory_analysis())` compares with XLA).
    """
    if not isinstance(fn, Function) and isinstance(getattr(fn, "fn", None), Function):
        plan_of = getattr(fn, "donation", None)  # a purejit.Lowered
        if donated is None and plan_of is not None:
            donated = plan_of.donated
        fn = fn.fn
    n = len(fn.ops)
    donated = list(donated) if donated is not None else [False] * len(fn.params)
    aliases, _ = pair_aliases(fn.param_types, donated, fn.result_types)
    defined: dict[Value, int] = {p: -1 for p in fn.params}
    users: dict[Value, list[int]] = {}
    for k, op in enumerate(fn.ops):
        for v in op.operands:
            users.setdefault(v, []).append(k)
        for r in op.results:
            defined[r] = k
    outputs = set(fn.results)
    constants = {op.results[0] for op in fn.ops if op.has_trait("constant") and op.results}
    constants -= outputs
    virtual = _fused_into_users(fn, users) - constants
    last: dict[Value, int] = {}
    for v, k in defined.items():
        last[v] = n if v in outputs else max(users.get(v, [k]))
    for p, d in zip(fn.params, donated):
        if not d:
            last[p] = n  # the caller keeps its buffer
    # a fused value is computed where its users read it: its operands live until then
    for k in reversed(range(n)):
        op = fn.ops[k]
        if op.results and op.results[0] in virtual:
            for v in op.operands:
                last[v] = max(last[v], last[op.results[0]])

    buffers: list[Buffer] = []
    assign: dict[Value, int] = {}
    in_place: set[Value] = set()
    free: list[tuple[int, int]] = []  # (size, buffer index), sorted

    def new_buffer(v: Value, kind: str, is_donated: bool = False) -> int:
        buffers.append(Buffer(len(buffers), v.type.nbytes, kind, is_donated))
        return len(buffers) - 1

    def place(v: Value, b: int):
        assign[v] = b
        buffers[b].residents.append(v)

    alias_target: dict[int, Value] = {}  # donated parameter's buffer -> its paired result
    alias_of: dict[Value, int] = {}

    def release(v: Value):
        b = assign.get(v)
        if b is None or buffers[b].residents[-1] is not v:
            return
        buf = buffers[b]
        if buf.kind == "output" or (buf.kind == "param" and not buf.donated):
            return
        if buf.kind == "param" and buf.index in alias_target:
            return  # kept for the output that will be written into it
        bisect.insort(free, (buf.size, b))

    for i, p in enumerate(fn.params):
        place(p, new_buffer(p, "param", donated[i]))
    for i, o in aliases.items():
        alias_target[assign[fn.params[i]]] = fn.results[o]
        alias_of[fn.results[o]] = assign[fn.params[i]]

    dies_at: dict[int, list[Value]] = {}
    for v, k in last.items():
        dies_at.setdefault(k, []).append(v)
    for k, op in enumerate(fn.ops):
        dying = [v for v in dict.fromkeys(op.operands) if last[v] == k and v in assign]
        claimed: set[int] = set()
        for r in op.results:
            if r in virtual or r in constants:
                continue
            b = _choose(r, op, k, dying, claimed, assign, buffers, last, alias_of)
            if b is not None:
                if any(assign[v] == b for v in dying):
                    in_place.add(r)
            elif r in outputs:
                b = new_buffer(r, "output")
            else:
                j = bisect.bisect_left(free, (r.type.nbytes, -1))
                if j < len(free):
                    b = free.pop(j)[1]
                else:
                    b = new_buffer(r, "temp")
            if r in outputs and buffers[b].kind == "temp":
                buffers[b].kind = "output"
            claimed.add(b)
            place(r, b)
        for v in dies_at.get(k, ()):
            if v in assign:
                release(v)  # a no-op when a result of this op was written over `v`

    peak, peak_at = _peak(buffers, assign, defined, last, n)
    alias_bytes = sum(
        fn.results[o].type.nbytes
        for i, o in aliases.items()
        if assign.get(fn.results[o]) == assign[fn.params[i]]
    )
    return MemoryPlan(
        fn.name,
        buffers,
        assign,
        {v: (defined[v], last[v]) for v in assign},
        in_place,
        virtual,
        constants,
        _printed_names(fn),
        [op.name for op in fn.ops],
        peak,
        peak_at,
        aliases,
        alias_bytes,
        frozenset(fn.params) | outputs,
    )


def _choose(r, op, k, dying, claimed, assign, buffers, last, alias_of):
    """A buffer for result `r` of op #k written in place, or None for a fresh one."""
    b = alias_of.get(r)
    if b is not None:
        holder = buffers[b].residents[-1]
        # the donated parameter (or whatever lives there) must be dead by now; an
        # elementwise op may overwrite an operand it reads at the same position
        free_now = last[holder] < k or (holder in dying and _can_overwrite(op, holder, r))
        if free_now and b not in claimed:
            return b
    for v in dying:
        if not _can_overwrite(op, v, r):
            continue
        b = assign[v]
        buf = buffers[b]
        if b in claimed or buf.size != r.type.nbytes or buf.residents[-1] is not v:
            continue
        if buf.kind == "param" and not buf.donated:
            continue
        if buf.kind == "output" or b in alias_of.values():
            continue  # already holds a result of the function, or reserved for one
        return b
    return None


def _can_overwrite(op, v: Value, r: Value) -> bool:
    """Whether `op` may write its result `r` over its operand `v`: it is elementwise, or a
    loop fusion that reads `v` only elementwise on the way to `r` (as XLA allows)."""
    if op.is_elementwise:
        return True
    if not op.has_trait("fusion") or v.type.shape != r.type.shape:
        return False
    if op.attrs.get("kind") != "loop":
        return False
    (body,) = op.regions
    k = op.results.index(r)
    touched = {p for p, x in zip(body.params, op.operands) if x is v}
    for inner in body.ops:
        if any(x in touched for x in inner.operands):
            if not inner.is_elementwise:
                return False
            touched.update(inner.results)
    return body.results[k] in touched


def _peak(buffers, assign, defined, last, n) -> tuple[int, int]:
    """The largest total of live buffers at any position -1..n-1, and where it happens."""
    delta = [0] * (n + 3)
    for buf in buffers:
        spans = sorted((defined[v], last[v]) for v in buf.residents)
        if buf.kind == "param" and not buf.donated:
            spans = [(-1, n)]
        elif buf.kind == "output":
            # an output buffer stays allocated from its first writer to the end
            spans = [(spans[0][0], n)]
        merged: list[list[int]] = []
        for s, e in spans:
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        for s, e in merged:
            delta[s + 1] += buf.size
            delta[min(e, n - 1) + 2] -= buf.size
    best, at, cur = 0, -1, 0
    for i in range(n + 1):
        cur += delta[i]
        if cur > best:
            best, at = cur, i - 1
    return best, at


@dataclass(frozen=True)
class BufferAssignment:
    """The pass form of `memory_plan`: the function is returned unchanged, the report holds
    the plan's numbers and the plan itself under `"plan"`."""

    name: str = "buffer_assignment"

    def __call__(self, fn: Function) -> PassResult:
        plan = memory_plan(fn)
        return PassResult(fn, False, {**plan.summary(), "plan": plan})
