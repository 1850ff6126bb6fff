"""The collectives of a compiled XLA executable and whether XLA scheduled them to overlap
compute, read from its HLO text (a static reading of the schedule, not a trace).

A scheduled module lists each computation's instructions in execution order. A collective
XLA made asynchronous is a start/done pair (`all-gather-start` ... `all-gather-done`, or
`async-start` / `async-done` around a computation holding the collective); the instructions
scheduled between the two run while the transfer is in flight. It overlaps compute when at
least one of them computes (not a view, a constant, plumbing or another transfer). A
synchronous collective (XLA's CPU backend emits these) overlaps nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from purejit.backend.hlo_kernels import _BRANCHES, _CALLS, _FREE, parse_hlo

KINDS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
    "ragged-all-to-all",
)
_NOT_COMPUTE = _FREE | {"copy-start", "copy-done", "async-update", "send", "recv"}
_NOT_COMPUTE |= {"send-done", "recv-done"}


@dataclass(frozen=True)
class Collective:
    """One collective of the compiled program."""

    kind: str  # "all-gather", "reduce-scatter", ...
    name: str  # the instruction (the start's, for an async pair)
    computation: str  # where it is scheduled ("main", a while body, ...)
    asynchronous: bool  # a start/done pair
    ops_between: int  # computing instructions scheduled between start and done
    between: tuple = ()  # their opcodes, schedule order

    @property
    def overlapped(self) -> bool:
        return self.asynchronous and self.ops_between > 0

    def __str__(self) -> str:
        if not self.asynchronous:
            how = "synchronous: overlaps nothing"
        elif self.overlapped:
            shown = ", ".join(self.between[:4]) + (", ..." if len(self.between) > 4 else "")
            how = f"async, overlaps {self.ops_between} op(s) ({shown})"
        else:
            how = "async, nothing scheduled between start and done: not overlapped"
        return f"{self.kind:<20} {self.name:<32} in {self.computation}: {how}"


def _kind_of(opcode: str, rest: str, comps: dict) -> str | None:
    """The collective kind an instruction starts (sync or async), else None."""
    if opcode in KINDS:
        return opcode
    if opcode.endswith("-start") and opcode[: -len("-start")] in KINDS:
        return opcode[: -len("-start")]
    if opcode == "async-start":
        for callee in _CALLS.findall(rest):
            for _, op, _ in comps.get(callee, []):
                if op in KINDS:
                    return op
    return None


def _is_done(opcode: str, rest: str, start: str) -> bool:
    if not (opcode == "async-done" or opcode.endswith("-done")):
        return False
    return re.search(rf"%{re.escape(start)}\b(?![\w.\-])", rest) is not None


def collectives(hlo_text: str) -> list[Collective]:
    """Every collective of a compiled HLO module, walking the entry and the bodies of
    control flow (while, conditional, call) in schedule order."""
    comps, entry = parse_hlo(hlo_text)
    out: list[Collective] = []
    seen: set = set()

    def walk(comp: str, depth: int):
        if depth > 32 or comp not in comps or comp in seen:
            return
        seen.add(comp)
        insts = comps[comp]
        for i, (name, opcode, rest) in enumerate(insts):
            if opcode in ("while", "conditional", "call"):
                callees = _CALLS.findall(rest)
                for branches in _BRANCHES.findall(rest):
                    callees += [b.strip().lstrip("%") for b in branches.split(",") if b.strip()]
                for c in callees:
                    walk(c, depth + 1)
                continue
            kind = _kind_of(opcode, rest, comps)
            if kind is None:
                continue
            if opcode == kind:
                out.append(Collective(kind, name, comp, False, 0))
                continue
            between = []
            for _, op2, rest2 in insts[i + 1 :]:
                if _is_done(op2, rest2, name):
                    break
                starts_or_ends = op2.endswith("-start") or op2.endswith("-done")
                if op2 not in _NOT_COMPUTE and op2 not in KINDS and not starts_or_ends:
                    between.append(op2)
            out.append(Collective(kind, name, comp, True, len(between), tuple(between)))

    if entry is not None:
        walk(entry, 0)
    return out
