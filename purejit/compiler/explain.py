"""`purejit.explain(f, *args)`: what the compiler did to one program, and what XLA made of it.

Printed, an `Explanation` shows
    - the program is one graph (purejit traces the whole function; it never splits it),
    - every pass with its op counts, time and report, and the IR after each pass under the
      pass's name (stages a pass left unchanged are named, not printed again),
    - purejit's kernels: the fusion groups and lone ops with the bytes each reads and
      writes, and the whole program's memory traffic run op by op against fused,
    - XLA's side: the kernels in the compiled executable, matched to purejit's groups
      through the `purejit.fusion.N` locations the emitter puts on every group, and
      `cost_analysis()` flops and bytes next to purejit's estimates, with each difference
      flagged, and the collectives XLA scheduled, each with whether it overlaps compute,
    - for programs that differentiate (`grad`, `value_and_grad`, `vjp` under jit): the
      residuals each forward pass saves for its backward pass (shape, dtype, bytes, the
      user's line), what automatic rematerialisation recomputes instead, and the total.
"""

from __future__ import annotations

from typing import Any
from dataclasses import dataclass, field

from purejit.backend import fusion, hlo_collectives, pjrt, stablehlo
from purejit.compiler.compiled import Compiled
from purejit.passes import cost


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _report_text(report: dict) -> str:
    parts = []
    for k, v in report.items():
        if isinstance(v, (list, dict)):
            continue
        parts.append(f"{k}={v}")
    return ", ".join(parts)


@dataclass
class Explanation:
    """Everything `explain` found; `str()` gives the readable report."""

    name: str
    stages: list  # PassRecord per pass run ("trace" first)
    kernels: list  # purejit's predicted kernels (cost.KernelEstimate), emission order
    eager_bytes: int
    fused_bytes: int
    flops: int
    fusion: str  # "xla" or the route that realises purejit's groups
    xla_kernels: list = field(default_factory=list)  # backend.fusion.Kernel
    xla_cost: dict = field(default_factory=dict)
    platform: str = ""
    differences: list = field(default_factory=list)
    graphs: int = 1
    transforms: list = field(default_factory=list)  # what transformations made of ops (vmap)
    residuals: list = field(default_factory=list)  # purejit.passes.remat.Record per grad
    attention: list = field(default_factory=list)  # hand-written attention fused or refused
    # the compiled program's collectives and whether XLA scheduled each to overlap compute
    collectives: list = field(default_factory=list)  # backend.hlo_collectives.Collective
    layers: dict = field(default_factory=dict)  # roll_layers' report: rolled and refused runs
    stacks: Any = None  # a StackPlan: stacks of leaves passed / returned as one argument

    @property
    def saved_bytes(self) -> int:
        """Bytes the forward passes save for the backward passes (inputs not counted)."""
        return sum(r.saved_bytes for r in self.residuals if not r.inner)

    @property
    def groups(self) -> list:
        """purejit's fusion groups (the kernels that are `fusion` ops)."""
        return [k for k in self.kernels if k.group is not None]

    @property
    def kernels_match(self) -> bool:
        """Whether XLA's kernels are exactly purejit's (no difference flagged)."""
        return not self.differences

    def __str__(self) -> str:
        return "\n".join(self._lines())

    __repr__ = __str__

    def _lines(self) -> list[str]:
        out = [
            f"purejit.explain: {self.name}",
            (
                f"graphs: {self.graphs} (the whole function is traced into one program; "
                + (
                    "the host loop runs it as programs of its own, below)"
                    if "split" in (self.layers.get("host") or {})
                    else "purejit never splits it)"
                )
            ),
            "fusion: "
            + (
                "xla (purejit's groups are inlined; XLA fuses the flat program)"
                if self.fusion == "xla"
                else f"purejit via {self.fusion} (each group is handed to XLA as one kernel)"
            ),
        ]
        if self.transforms:
            out += ["", "transformations"] + [f"  - {t}" for t in self.transforms]
        if self.attention:
            out += ["", "attention (hand-written attention as one fused kernel)"]
            out += _attention_lines(self.attention)
        if self.layers.get("rolled") or self.layers.get("refused") or self.layers.get("host"):
            out += ["", "repeated layers (compiler_options={'roll_layers': True})"]
            out += _layer_lines(self.layers, self.stacks)
        if self.residuals:
            out += ["", "residuals (saved by the forward pass for the backward pass)"]
            out += _residual_lines(self.residuals)
        out += [
            "",
            "passes",
            f"  {'pass':<18}{'round':>5}  {'ops':>13}  {'changed':>7}  {'ms':>7}  report",
        ]
        for r in self.stages:
            rnd = str(r.iteration) if r.iteration else ""
            ops = (
                f"{r.ops_before:>5} -> {r.ops_after:<5}"
                if r.name != "trace"
                else f"{r.ops_after:>13}"
            )
            changed = "yes" if r.changed else ("" if r.name == "trace" else "no")
            out.append(
                f"  {r.name:<18}{rnd:>5}  {ops:>13}  {changed:>7}  {r.seconds * 1e3:7.2f}  "
                f"{_report_text(r.report)}"
            )
        out += ["", "IR after each pass"]
        for r in self.stages:
            where = f" [{r.group} round {r.iteration}]" if r.group else ""
            if r.name != "trace" and not r.changed:
                out.append(f"=== {r.name}{where}: unchanged ({r.ops_after} ops) ===")
                continue
            out.append(f"=== {r.name}{where} ({r.ops_after} ops) ===")
            out += (r.ir or "(IR not kept: Pipeline(keep_ir=False))").splitlines()
        out += ["", "kernels (purejit's plan)"]
        out.append(f"  {'#':>3}  {'kernel':<16}{'read':>10}{'write':>10}{'eager':>10}  ops")
        for k in self.kernels:
            label = f"fusion/{k.op.attrs['kind']}" if k.group is not None else k.op.name
            tag = str(k.group) if k.group is not None else "-"
            ops = ", ".join(k.ops) if k.group is not None else ""
            out.append(
                f"  {tag:>3}  {label:<16}{_size(k.bytes_read):>10}{_size(k.bytes_written):>10}"
                f"{_size(k.bytes_eager):>10}  {ops}"
            )
        n_eager = sum(
            not cost.is_view(o)
            for k in self.kernels
            for o in (k.op.regions[0].ops if k.group is not None else [k.op])
        )
        ratio = self.eager_bytes / self.fused_bytes if self.fused_bytes else 1.0
        out.append(
            f"  memory traffic: op by op {_size(self.eager_bytes)} in {_n(n_eager, 'kernel')} "
            f"(every op reads its inputs and writes its result: 2 round trips per op) -> "
            f"fused {_size(self.fused_bytes)} in {_n(len(self.kernels), 'kernel')} (1 read + "
            f"1 write each), {ratio:.1f}x less"
        )
        out += ["", f"XLA ({self.platform})"]
        out.append(f"  kernels: {len(self.xla_kernels)} (purejit predicts {len(self.kernels)})")
        for k in self.xla_kernels:
            groups = sorted(k.groups())
            src = f"groups {groups}" if groups else "lone op(s)"
            out.append(f"    {k.name:<28} {k.kind:<10} <- {src}")
        if self.collectives:
            k = sum(c.overlapped for c in self.collectives)
            out.append(
                f"  collectives: {len(self.collectives)}, {k} scheduled to overlap compute "
                "(read from the compiled schedule)"
            )
            out += [f"    {c}" for c in self.collectives]
        xf, xb = self.xla_cost.get("flops"), self.xla_cost.get("bytes accessed")
        if xf is not None or xb is not None:
            out.append(
                f"  cost_analysis: flops {xf:.0f} (purejit estimates {self.flops}), bytes "
                f"accessed {_size(xb or 0)} (purejit estimates {_size(self.fused_bytes)})"
            )
        out += ["", "differences"]
        out += [f"  - {d}" for d in self.differences] or [
            "  none: XLA's kernels are purejit's groups and lone ops"
        ]
        return out


def _attention_lines(entries) -> list[str]:
    """One line per fusion or refusal, with the user's line."""
    out = []
    for e in entries:
        at = f"{e.get('loc') or '-'} ({'under grad' if e['where'] == 'grad' else 'jit'})"
        if e["where"] == "shardings" and e["fused"]:  # passes/attention_sharding.py
            out.append(
                f"  per device {e.get('loc') or '-'}: {e['op']} in a manual computation, "
                f"batch split over {list(e['batch_axes'])}"
            )
        elif e["fused"]:
            extra = ", bias" if e.get("bias") else ""
            extra += ", grouped-query heads" if e.get("grouped") else ""
            out.append(f"  fused    {at}: mask {e['mask']}, scale {e['scale']:.6g}{extra}")
        else:
            out.append(f"  refused  {at}: {e['reason']}")
    if any(e["fused"] for e in entries):
        out.append(
            "  fusion changes result bits (the kernel's own rounding); "
            "compiler_options={'fused_attention': False} keeps the program as written"
        )
    return out


def _stack_lines(plan) -> list[str]:
    """One line per stack of leaves the program takes or returns as one argument."""
    out = []
    for g in plan.groups:
        out.append(
            f"  argument: {len(g.leaves)} leaves ({g.leaves[0]}..{max(g.leaves)}) as one "
            f"{g.stack_type} stack{' (donated)' if g.donated else ''}: "
            f"{_size(g.stack_type.nbytes)} no longer copied into it per call when they are "
            "its row views"
        )
    for h in plan.out_groups:
        out.append(
            f"  result: {len(h.leaves)} outputs returned as one {h.stack_type} stack, each a "
            "row view of it (the next call takes the stack as it is)"
        )
    return out


def _layer_lines(report: dict, stacks=None) -> list[str]:
    """One line per run of calls rolled into a scan or left unrolled, with the reason; and
    the stacks the program takes as arguments (`stacks`, a StackPlan or None)."""
    out = []
    for r in report.get("rolled", []):
        extra = ", reverse" if r["reverse"] else ""
        if r["stacks_reused"]:
            extra += f", {r['stacks_reused']} stacks read from an earlier scan as they are"
        if r.get("stacked_bytes") and stacks is not None:
            extra += f"; stacks {_size(r['stacked_bytes'])} of parameters (arguments below)"
        elif r.get("stacked_bytes"):
            extra += f"; copies {_size(r['stacked_bytes'])} per call to stack parameters"
        if r.get("xs_selected"):
            extra += f"; {r['xs_selected']} per-block parameters read per trip by a case, unstacked"
        out.append(
            f"  rolled   {r['callee']} at {r.get('loc') or '-'}: {r['blocks']} blocks -> one scan "
            f"({r['carried']} carried, {r['per_block']} per-block stacked, {r['shared']} "
            f"shared, {r['stacked_constants']} constants stacked{extra})"
        )
    for r in report.get("refused", []):
        out.append(f"  refused  {r['callee']} at {r.get('loc') or '-'}: {r['reason']}")
    out += _host_lines(report.get("host"))
    stacked = sum(r.get("stacked_bytes", 0) for r in report.get("rolled", []))
    if stacks is not None:
        out += _stack_lines(stacks)
        stacked -= stacks.stacked_bytes
    if stacked > 0 and "split" not in (report.get("host") or {}):
        out.append(
            f"  (off by default: stacking copies {_size(stacked)} per call in the program; "
            "the rule: docs/benchmarks/roll_layers_cpu.md)"
        )
    return out


def _host_lines(host: dict | None) -> list[str]:
    """The host loop's line (`roll_layers="host"`): its programs, or why it was refused."""
    if not host:
        return []
    if "refused" in host:
        return [f"  host loop refused (runs as the rolled program): {host['refused']}"]
    r = host["split"]
    loops = ", ".join(
        f"{lp['trips']} trips{' reversed' if lp['reverse'] else ''}"
        + (f", {lp['per_run']} a launch" if lp.get("per_run", 1) > 1 else "")
        for lp in r["loops"]
    )
    out = [
        f"  host loop: {r['programs']} programs ({len(r['loops'])} loop bodies, each compiled "
        f"once: {loops}; {r['glue_programs']} between them), {r['launches']} launches a call, "
        "no stacks"
    ]
    for f in r.get("folded", ()):
        if "folded" in f:
            f = f["folded"]
            out.append(
                f"    folded into the loop body at {f['loc']}: each layer's {f['ops_per_row']} "
                f"ops after the loop ({f['per_row_inputs']} per-layer inputs)"
            )
    return out


def _residual_line(r) -> str:
    note = ""
    if r.free:
        note = " (an input: not copied)"
    elif not r.read:
        note = " (no backward pass reads it: DCE removes it)"
    return f"      {str(r.type):<22}{_size(r.nbytes):>10}  {r.what:<26}{r.loc or '-'}{note}"


def _residual_lines(records) -> list[str]:
    """What each differentiation saved and recomputed, as JAX's print_saved_residuals."""
    out = []
    for rec in records:
        where = f"{rec.where}{' at ' + rec.loc if rec.loc else ''}"
        ratio = f", {rec.saved_bytes / rec.all_bytes:.2f}x" if rec.all_bytes else ""
        out.append(
            f"  {where}, remat {rec.mode}: {_n(len(rec.saved), 'array')}, "
            f"{_size(rec.saved_bytes)} (saving everything: {_size(rec.all_bytes)}{ratio})"
            + (", stacked by the loop (listed below as its outputs)" if rec.inner else "")
        )
        out += [_residual_line(r) for r in rec.saved]
        if rec.recomputed:
            nbytes = sum(r.nbytes for r in rec.recomputed)
            out.append(
                f"    recomputed in the backward pass by {_n(rec.recompute_ops, 'op')}: "
                f"{_n(len(rec.recomputed), 'residual')}, {_size(nbytes)}"
            )
            out += [_residual_line(r) for r in rec.recomputed]
    total = sum(rec.saved_bytes for rec in records if not rec.inner)
    out.append(f"  total saved: {_size(total)}")
    return out


def _compare(ex: Explanation) -> list[str]:
    """Every way XLA's kernels differ from purejit's plan, in words."""
    diffs = []
    by_group: dict[int, list] = {}
    for k in ex.xla_kernels:
        for gid in k.groups():
            by_group.setdefault(gid, []).append(k)
    for k in ex.groups:
        found = by_group.get(k.group, [])
        if not found:
            diffs.append(f"group {k.group} ({', '.join(k.ops)}): no XLA kernel holds its ops")
        elif len(found) > 1:
            names = ", ".join(x.name for x in found)
            diffs.append(f"group {k.group} was split by XLA into {len(found)} kernels ({names})")
    for k in ex.xla_kernels:
        gs = sorted(k.groups())
        if len(gs) > 1:
            diffs.append(f"XLA merged groups {gs} into one kernel ({k.name})")
    lone_pj = sum(1 for k in ex.kernels if k.group is None)
    lone_xla = sum(1 for k in ex.xla_kernels if not k.groups())
    if lone_pj != lone_xla:
        diffs.append(
            f"purejit predicts {lone_pj} kernels for ops outside groups, XLA made {lone_xla}"
            + (" (XLA fused some of them into other kernels)" if lone_xla < lone_pj else "")
        )
    if len(ex.xla_kernels) != len(ex.kernels):
        diffs.append(f"kernel count: purejit {len(ex.kernels)}, XLA {len(ex.xla_kernels)}")
    xb = ex.xla_cost.get("bytes accessed")
    if xb and ex.fused_bytes and not 0.5 <= xb / ex.fused_bytes <= 2.0:
        diffs.append(
            f"bytes: XLA's cost_analysis says {_size(xb)}, purejit estimates "
            f"{_size(ex.fused_bytes)} ({xb / ex.fused_bytes:.2f}x)"
        )
    xf = ex.xla_cost.get("flops")
    if xf and ex.flops and not 0.5 <= xf / ex.flops <= 2.0:
        diffs.append(f"flops: XLA counts {xf:.0f}, purejit estimates {ex.flops}")
    return diffs


def _jit_entries(report: dict) -> list[dict]:
    out = [{"where": "jit", "fused": True, **e} for e in report.get("fused", [])]
    return out + [{"where": "jit", "fused": False, **e} for e in report.get("refused", [])]


def explain_lowered(lowered, *, compiled=None) -> Explanation:
    """The explanation of a `Lowered` (compiles it unless `compiled` is given)."""
    compiled = compiled or lowered.compile()
    fn = lowered.fn  # runs the deferred reporting passes (fusion plan, buffer plan)
    xla = compiled
    if fn is not lowered.emitted and "mhlo.fusion" not in lowered.module:
        # the module was emitted before the fusion plan existed; XLA's kernels are matched
        # to purejit's groups through the group tags that emitting the fused IR adds (the
        # same program for XLA: the groups are inlined again, tagged `purejit.fusion.N`)
        exe = pjrt.compile(stablehlo.emit(fn), fn.param_types, fn.result_types)
        xla = Compiled(lowered, exe)
    kernels = cost.predicted_kernels(fn)
    eager, fused = cost.traffic(fn)
    route = "xla"
    if "mhlo.fusion" in lowered.module:
        route = "mhlo.fusion"
    elif 'inlineable = "false"' in lowered.module:
        route = "call"
    ex = Explanation(
        name=lowered.name,
        stages=list(lowered.records),
        kernels=kernels,
        eager_bytes=eager,
        fused_bytes=fused,
        flops=sum(k.flops for k in kernels),
        fusion=route,
        xla_kernels=fusion.kernels(xla.as_text()),
        xla_cost=dict(xla.cost_analysis() or {}),
        platform=pjrt.platform(),
    )
    ex.collectives = hlo_collectives.collectives(xla.as_text())
    ex.residuals = list(getattr(lowered, "residuals", []))
    ex.attention = list(getattr(lowered, "attention", []))
    for r in lowered.records:  # the jit pipeline's own run (forward-only programs)
        if r.name == "fuse_attention":
            ex.attention += _jit_entries(r.report)
        if r.name == "roll_layers":
            ex.layers = r.report
    host = getattr(lowered, "host_route", None)
    if host is not None:
        ex.layers = {**ex.layers, "host": host.report}
    ex.stacks = getattr(lowered, "stack_plan", None)
    ex.differences = _compare(ex)
    return ex
