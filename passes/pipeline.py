"""The pass manager: runs an ordered list of named passes over a Function.

A pass is any object with a `name` and `__call__(fn) -> PassResult`; it must not mutate
the function it is given. The verifier checks the result of the pipeline; with
`verify_each=True` (default: the environment variable `PUREJIT_VERIFY_EACH_PASS`, which the
test suite sets; `purejit.jit` passes `purejit.config`'s `verify_each_pass`) it checks the
input and the result of every pass that changed the function, and when the final check
fails the pipeline is re-run that way to name the pass at fault. A pass that reports no
change hands its input on unchanged; a pass marked `idempotent` is skipped when its input
is its own last output. The manager can disable passes by name, dump the IR after each pass
to a folder, repeat a group of passes until none of them changes the function
(`FixedPoint`), and records time, op counts and each pass's own report (what `explain`
shows).

    Pipeline([FixedPoint([ConstantFold(), Simplify(), CSE(), DCE()]), Fusion()],
             disable=["fusion"], dump_dir="/tmp/ir").run(fn)
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from purejit.ir import Function, VerifyError, print_function, verify
from purejit.passes.base import Pass, PassResult
from purejit.passes.constant_fold import ConstantFold
from purejit.passes.cse import CSE
from purejit.passes.dce import DCE
from purejit.passes.expand_threefry import ExpandThreefry
from purejit.passes.fusion import Fusion
from purejit.passes.guard_aliased_update import GuardAliasedUpdate
from purejit.passes.inline import Inline
from purejit.passes.layout import LayoutAssignment
from purejit.passes.merge_threefry import MergeThreefry
from purejit.passes.liveness import BufferAssignment
from purejit.passes.roll_layers import RollLayers
from purejit.passes.simplify import Simplify

__all__ = [
    "FixedPoint",
    "Pass",
    "PassRecord",
    "PassResult",
    "Pipeline",
    "default_passes",
    "pass_names",
    "run",
]


@dataclass
class PassRecord:
    """What one pass did: the IR after it, op counts, time and its own report.

    `iteration` counts the rounds of an enclosing `FixedPoint` group (0 outside one) and
    `group` names that group. `ir_source` is the text, or the function itself until `ir` is
    first read (printing every stage of every compile would cost more than the passes).
    """

    name: str
    ops_before: int
    ops_after: int
    seconds: float
    changed: bool
    report: dict
    ir_source: str | Function = ""
    iteration: int = 0
    group: str | None = None

    @property
    def ir(self) -> str:
        """The IR after this pass, as text."""
        if not isinstance(self.ir_source, str):
            self.ir_source = print_function(self.ir_source)
        return self.ir_source


@dataclass(frozen=True)
class FixedPoint:
    """Run `passes` in order, again and again, until a round changes nothing.

    Attributes:
        passes: the passes of one round.
        name: the group's name (disabling it disables every pass in it).
        max_iterations: an upper bound on the rounds; reaching it is recorded, not an error.
    """

    passes: Sequence[Pass]
    name: str = "cleanup"
    max_iterations: int = 8

    def __call__(self, fn: Function) -> PassResult:
        """Run the group on its own (without records), as an ordinary pass."""
        changed, rounds = False, 0
        for rounds in range(1, self.max_iterations + 1):
            round_changed = False
            for p in self.passes:
                res = p(fn)
                fn, round_changed = res.fn, round_changed or res.changed
            changed |= round_changed
            if not round_changed:
                break
        return PassResult(fn, changed, {"rounds": rounds})


def default_passes(
    layout_options: dict | None = None,
    threefry_options: dict | None = None,
    roll_layers: bool = False,
    roll_options: dict | None = None,
    **fusion_options,
) -> list[Pass]:
    """The standard pipeline: (with `roll_layers`, roll chains of isomorphic calls into
    scans;) inline calls; fold, simplify, CSE and DCE to a fixed point; merge independent
    threefry hashes and expand them into their rounds; then layout, the guard against XLA's
    aliased in-place updates, fusion and the buffer plan.

    Args:
        roll_layers: whether repeated layers become one scan (`passes/roll_layers.py`).
        roll_options: options of that pass (`pack_ys`: the GPU's choice).
        layout_options: options of the layout pass (`explicit_copies` on GPU).
        threefry_options: options of `expand_threefry` (`rolled_max_size`: the rolled loop
            on CPU) and `merge_threefry` (`merge_barrier`: materialise merged hashes).
        **fusion_options: options of the fusion pass (`multi_output`, `exclude_ops`,
            `elementwise_after_reduction`): what a back end that realises purejit's groups
            as kernels can take.
    """
    cleanup = FixedPoint([ConstantFold(), Simplify(), CSE(), DCE()], name="cleanup")
    # layout before fusion (it moves transposes across elementwise ops); the buffer plan
    # last, on the program that is emitted
    layout = LayoutAssignment(**(layout_options or {}))
    # threefry hashes stay one op through the cleanup, so the merge sees them whole; then
    # they are expanded
    threefry = dict(threefry_options or {})
    merge = MergeThreefry(barrier=threefry.pop("merge_barrier", False))
    expand = ExpandThreefry(**threefry)
    # calls first: every later pass sees the whole program (XLA would inline them anyway)
    fusion = Fusion(**fusion_options)
    # the guard after layout (it may add the transposes XLA turns into bitcasts), before fusion
    guard = GuardAliasedUpdate()
    passes = [Inline(), cleanup, merge, expand, layout, guard, fusion, BufferAssignment()]
    # rolling reads the calls, so it runs before they are inlined
    return [RollLayers(**(roll_options or {})), *passes] if roll_layers else passes


def pass_names(passes: Sequence[Pass]) -> list[str]:
    """Every name a pipeline knows, groups and the passes inside them."""
    out = []
    for p in passes:
        out.append(p.name)
        if isinstance(p, FixedPoint):
            out += pass_names(p.passes)
    return out


@dataclass
class Pipeline:
    """An ordered pipeline. `disable` names passes to skip; `dump_dir` writes each stage."""

    passes: Sequence[Pass] = field(default_factory=default_passes)
    disable: Sequence[str] = ()
    dump_dir: str | None = None
    keep_ir: bool = True
    verify_each: bool | None = None  # None: the PUREJIT_VERIFY_EACH_PASS environment variable

    def names(self) -> list[str]:
        return pass_names(self.passes)

    def _unknown_disabled(self) -> set:
        return set(self.disable) - set(self.names())

    def split(self, deferrable: Sequence[str]) -> tuple["Pipeline", "Pipeline | None"]:
        """`(head, tail)`: `tail` holds the longest run of passes at the end whose names are
        all in `deferrable` (passes the caller does not need to emit the program, e.g. an
        analysis that only reports), None when there is none or when stages are dumped."""
        passes = list(self.passes)
        k = len(passes)
        while k and passes[k - 1].name in deferrable:
            k -= 1
        if k == len(passes) or self.dump_dir or self._unknown_disabled():
            return self, None  # (`run` reports unknown names)

        def part(ps):
            disable = [d for d in self.disable if d in pass_names(ps)]
            return Pipeline(ps, disable, None, self.keep_ir, self.verify_each)

        return part(passes[:k]), part(passes[k:])

    def run(self, fn: Function) -> tuple[Function, list[PassRecord]]:
        """Run every enabled pass over `fn`, verify, and return the result and one record
        per pass run (the first record, "trace", is the input)."""
        unknown = self._unknown_disabled()
        if unknown:
            raise ValueError(
                f"disable names unknown passes {sorted(unknown)}; this pipeline has {self.names()}"
            )
        each = self.verify_each
        if each is None:
            each = verify_each_default()
        try:
            return self._run_all(fn, each)
        except VerifyError:
            if each:
                raise
        # the result is malformed: run again checking every stage, to name the pass at fault
        return self._run_all(fn, True)

    def _run_all(self, fn: Function, each: bool):
        if each:
            verify(fn)
        counts = _OpCounts()
        records = [PassRecord("trace", 0, counts(fn), 0.0, False, {}, self._text(fn))]
        self._dump(0, "trace", fn)
        last_out: dict[int, Function] = {}
        for p in self.passes:
            fn = self._run_item(p, fn, records, each, last_out, counts)
        if not each:
            verify(fn)
        return fn, records

    def _run_item(self, p, fn, records, each, last_out, counts, group=None, it=0):
        if p.name in self.disable:
            return fn
        if isinstance(p, FixedPoint):
            for round_ in range(1, p.max_iterations + 1):
                n = len(records)
                for q in p.passes:
                    fn = self._run_item(q, fn, records, each, last_out, counts, p.name, round_)
                if not any(r.changed for r in records[n:]):
                    break
            else:
                if records and records[-1].group == p.name:
                    records[-1].report["not_converged_after"] = p.max_iterations
            return fn
        if getattr(p, "idempotent", False) and last_out.get(id(p)) is fn:
            return fn  # nothing changed since this pass's own output
        before = counts(fn)
        t0 = time.perf_counter()
        res = p(fn)
        dt = time.perf_counter() - t0
        if res.changed:
            if each:
                try:
                    verify(res.fn)
                except VerifyError as e:
                    raise VerifyError(f"after pass {p.name!r}: {e}") from None
            fn = res.fn
        last_out[id(p)] = fn
        text = self._text(fn)
        after = counts(fn) if res.changed else before
        records.append(
            PassRecord(p.name, before, after, dt, res.changed, res.report, text, it, group)
        )
        self._dump(len(records) - 1, p.name if not it else f"{p.name}.{it}", fn)
        return fn

    def _text(self, fn):
        return fn if self.keep_ir else ""

    def _dump(self, k: int, name: str, fn: Function):
        if self.dump_dir:
            os.makedirs(self.dump_dir, exist_ok=True)
            with open(os.path.join(self.dump_dir, f"{k:02d}_{name}.pjir"), "w") as f:
                f.write(print_function(fn) + "\n")


class _OpCounts:
    """`fn.op_count()` for the functions of one pipeline run, each function counted once:
    a pass hands on the regions it leaves alone, so most of a program's regions are the
    same objects from pass to pass (functions are never changed in place)."""

    def __init__(self):
        # id -> (function or its copy class, count): copies of one function (a layer's
        # calls) have one count
        self._seen: dict[int, tuple[object, int]] = {}

    def __call__(self, fn: Function) -> int:
        key = fn if fn.copy_class is None else fn.copy_class
        got = self._seen.get(id(key))
        if got is not None and got[0] is key:
            return got[1]
        n = len(fn.ops)
        for op in fn.ops:
            for r in op.regions:
                n += self(r)
        self._seen[id(key)] = (key, n)
        return n


def run(fn: Function, pipeline: Pipeline | None = None) -> tuple[Function, list[PassRecord]]:
    """Run `pipeline` (default: the standard one) over `fn`."""
    return (pipeline or Pipeline()).run(fn)


def verify_each_default() -> bool:
    """Whether pipelines without a `verify_each` verify after every pass: the environment
    variable `PUREJIT_VERIFY_EACH_PASS` (`1` or `true`), read when a pipeline runs."""
    return os.environ.get("PUREJIT_VERIFY_EACH_PASS", "0") in ("1", "true", "True")
