"""What every pass shares: the pass protocol and the result a pass returns.

Passes and the pass manager both import this module, and nothing here imports a pass, so
the manager can list the standard passes without the passes depending on the manager.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from purejit.ir import Function, Op, get_op


@dataclass
class PassResult:
    """What a pass returns: the new function, whether it changed, and a small report."""

    fn: Function
    changed: bool
    report: dict = field(default_factory=dict)


class Pass(Protocol):
    """A pass: a `name` and `__call__(fn) -> PassResult`, never mutating `fn`."""

    name: str

    def __call__(self, fn: Function) -> PassResult: ...


def has_effect(op: Op) -> bool:
    """Whether `op` or an op in its regions has an effect besides its results (the
    `side_effect` or `collective` trait, or no `pure`): such an op is never removed, merged
    or folded, even when it is a pure `case` or `while` around a `debug.print`."""
    traits = get_op(op.name).traits
    if "side_effect" in traits or "collective" in traits or "pure" not in traits:
        return True
    if not op.regions:
        return False
    # an op's regions never change (passes build new ops), so the walk below is made once
    # per op: passes ask again for every op of a loop body or a case's branches each time
    got = getattr(op, "_effect", None)
    if got is None:
        got = op._effect = any(has_effect(inner) for r in op.regions for inner in r.ops)
    return got
