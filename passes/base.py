"""What every pass shares: the pass protocol and the result a pass returns.

Passes and the pass manager both import this module, and nothing here imports a pass, so
the manager can list the standard passes without the passes depending on the manager.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from purejit.ir import Function


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
