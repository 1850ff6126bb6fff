"""The pass manager: runs an ordered list of named passes over a Function.

A pass is any object with a `name` and `__call__(fn) -> PassResult`; it must not mutate
the function it is given. After every pass the verifier runs. The manager can disable passes
by name, dump the IR after each pass to a folder, and records time and op counts per pass
(what `explain` shows).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from purejit.ir import Function, print_function, verify


@dataclass
class PassResult:
    fn: Function
    changed: bool
    report: dict = field(default_factory=dict)


class Pass(Protocol):
    name: str

    def __call__(self, fn: Function) -> PassResult: ...


@dataclass
class PassRecord:
    """What one pass did: the IR after it, op counts, time and its own report."""

    name: str
    ops_before: int
    ops_after: int
    seconds: float
    changed: bool
    report: dict
    ir: str


def default_passes() -> list[Pass]:
    from purejit.passes.dce import DCE

    return [DCE()]


@dataclass
class Pipeline:
    """An ordered pipeline. `disable` names passes to skip; `dump_dir` writes each stage."""

    passes: Sequence[Pass] = field(default_factory=default_passes)
    disable: Sequence[str] = ()
    dump_dir: str | None = None
    keep_ir: bool = True

    def run(self, fn: Function) -> tuple[Function, list[PassRecord]]:
        verify(fn)
        records = [PassRecord("trace", 0, fn.op_count(), 0.0, False, {}, self._text(fn))]
        self._dump(0, "trace", fn)
        unknown = set(self.disable) - {p.name for p in self.passes}
        if unknown:
            raise ValueError(f"disable names unknown passes {sorted(unknown)}")
        for k, p in enumerate(self.passes, start=1):
            if p.name in self.disable:
                continue
            before = fn.op_count()
            t0 = time.perf_counter()
            res = p(fn)
            dt = time.perf_counter() - t0
            verify(res.fn)
            fn = res.fn
            records.append(
                PassRecord(p.name, before, fn.op_count(), dt, res.changed, res.report, self._text(fn))
            )
            self._dump(k, p.name, fn)
        return fn, records

    def _text(self, fn):
        return print_function(fn) if self.keep_ir else ""

    def _dump(self, k, name, fn):
        if self.dump_dir:
            os.makedirs(self.dump_dir, exist_ok=True)
            with open(os.path.join(self.dump_dir, f"{k:02d}_{name}.pjir"), "w") as f:
                f.write(print_function(fn) + "\n")


def run(fn: Function, pipeline: Pipeline | None = None) -> tuple[Function, list[PassRecord]]:
    """Run `pipeline` (default: the standard one) over `fn`."""
    return (pipeline or Pipeline()).run(fn)


PassFactory = Callable[[], Pass]
