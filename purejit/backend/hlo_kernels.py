"""The kernels of a compiled XLA executable, read from its HLO text.

A kernel is every top-level instruction that computes (a fusion, a custom call, a lone op),
looking inside call/while/conditional bodies; purejit's fusion groups are matched to kernels
by the `purejit.fusion.N` op names XLA keeps from the emitted locations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from purejit.backend.fusion_routes import TAG

# instructions that launch nothing: views, plumbing and control (whose bodies are walked)
_FREE = {
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
    "partition-id", "replica-id", "opt-barrier", "add-dependency", "domain",
}  # fmt: skip
_CONTROL = {"call", "while", "conditional", "async-start", "async-done"}
_COMP_HEAD = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_CALLS = re.compile(r"\b(?:calls|to_apply|body|condition)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_OP_NAME = re.compile(r'op_name="([^"]*)"')


@dataclass
class Kernel:
    """One kernel of a compiled executable: a top-level fusion, custom call or lone op."""

    name: str
    opcode: str
    kind: str  # fusion kind (kLoop, kInput, kCustom, ...) or the opcode
    op_names: set = field(default_factory=set)  # op_name metadata inside it

    def groups(self) -> set[int]:
        """purejit fusion groups (by number) whose ops are in this kernel."""
        return {int(n[len(TAG) :]) for n in self.op_names if n.startswith(TAG)}


def _split_instruction(line: str):
    """(name, opcode, rest) of an HLO instruction line, or None."""
    line = line.strip()
    line = line.removeprefix("ROOT ")
    if not line.startswith("%") or " = " not in line:
        return None
    name, rhs = line.split(" = ", 1)
    if rhs.startswith("("):  # tuple shape: skip to the matching parenthesis
        depth = 0
        for i, c in enumerate(rhs):
            depth += c == "("
            depth -= c == ")"
            if depth == 0:
                rhs = rhs[i + 1 :].lstrip()
                break
    else:
        rhs = rhs.split(" ", 1)[1] if " " in rhs else ""
    m = re.match(r"([\w\-]+)\(", rhs)
    return (name.lstrip("%"), m.group(1), rhs) if m else None


def parse_hlo(text: str) -> tuple[dict[str, list], str | None]:
    """Computations of an HLO module text: {name: [(name, opcode, rest), ...]}, entry name."""
    comps: dict[str, list] = {}
    entry, current = None, None
    for line in text.splitlines():
        head = _COMP_HEAD.match(line.strip())
        if head and not line.startswith(" "):
            current = head.group(2)
            comps[current] = []
            if head.group(1):
                entry = current
            continue
        if current is not None:
            if line.strip() == "}":
                current = None
                continue
            inst = _split_instruction(line)
            if inst:
                comps[current].append(inst)
    return comps, entry


def kernels(hlo_text: str) -> list[Kernel]:
    """The kernels XLA launches: every top-level instruction that computes (fusions, custom
    calls, lone ops), looking inside call/while/conditional bodies."""
    comps, entry = parse_hlo(hlo_text)
    out: list[Kernel] = []

    def names_in(comp: str, seen: set) -> set:
        if comp in seen or comp not in comps:
            return set()
        seen.add(comp)
        found = set()
        for _, _, rest in comps[comp]:
            found.update(_OP_NAME.findall(rest))
            for callee in _CALLS.findall(rest):
                found |= names_in(callee, seen)
        return found

    def walk(comp: str, depth: int):
        if depth > 32 or comp not in comps:
            return
        for name, opcode, rest in comps[comp]:
            if opcode in _FREE:
                continue
            callees = _CALLS.findall(rest)
            for branches in _BRANCHES.findall(rest):
                callees += [b.strip().lstrip("%") for b in branches.split(",") if b.strip()]
            if opcode in _CONTROL:
                for c in callees:
                    walk(c, depth + 1)
                continue
            kind = re.search(r"kind=(k\w+)", rest)
            op_names = set(_OP_NAME.findall(rest))
            for c in callees:
                op_names |= names_in(c, set())
            out.append(Kernel(name, opcode, kind.group(1) if kind else opcode, op_names))

    if entry is not None:
        walk(entry, 0)
    return out
