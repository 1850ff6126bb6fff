"""One stacked output for the rows a loop's body returns several times, for the host loop.

A scan's body may return one buffer as several ys: values an `optimization_barrier` passes
through (its results are its operands, value for value) are the same value. The attention
rewrite's projection split (`passes/split_projection.py`) holds the layer's normalised input
with each of the q, k and v weight's columns behind a barrier of its own, and the backward
reads each barrier's copy: three ys, one value. Within one program XLA gives a barrier's
result its operand's buffer, so the unrolled program keeps that value once. A program's
outputs are buffers of their own: split into programs (`_segments.py`), the forward body
would return it three times, and XLA would copy it twice a trip (bench's transformer at
d=1024, batch 8 x seq 1024: 32 MiB a layer, the host route's excess over the unrolled
step's peak memory on an H200; docs/benchmarks/roll_layers_cpu.md, "Session 20, third
pass").

`merge_same_rows` keeps, of the ys of a top-level scan that are one value (the same value,
or barrier results whose operands are, through any chain of barriers), the first: the others
leave the body, and whatever read their stacked output reads the kept one's, which holds
the same rows. The body's ops (its barriers included) are unchanged.
"""

from __future__ import annotations

from purejit.ir import Function, Op, Value
from purejit.passes.base import has_effect


def _root(v: Value, made: dict) -> Value:
    """`v` through the barriers it comes out of: the value it is equal to."""
    while v in made and made[v][0].name == "optimization_barrier":
        op, i = made[v]
        v = op.operands[i]
    return v


def merge_same_rows(fn: Function) -> tuple[Function, list[dict]]:
    """`fn` with each top-level scan's repeated ys returned once (module docstring), and
    one report entry per scan changed: its position among the ops and the ys merged."""
    report: list[dict] = []
    same: dict[Value, Value] = {}
    ops = []
    for at, op in enumerate(fn.ops):
        operands = [same.get(v, v) for v in op.operands]
        changed = operands != op.operands
        dups: dict[int, int] = {}
        if op.name == "scan" and not has_effect(op):
            body = op.regions[0]
            made = {r: (o, i) for o in body.ops for i, r in enumerate(o.results)}
            first: dict[Value, int] = {}
            for j in range(int(op.attrs["num_carry"]), len(body.results)):
                key = _root(body.results[j], made)
                if key in first and body.results[first[key]].type == body.results[j].type:
                    dups[j] = first[key]
                else:
                    first.setdefault(key, j)
        if not dups:
            ops.append(Op(op.name, operands, op.attrs, op.results, op.regions, op.loc)
                       if changed else op)  # fmt: skip
            continue
        kept = [j for j in range(len(body.results)) if j not in dups]
        new_body = Function(body.name, body.params, body.ops, [body.results[j] for j in kept])
        results = [op.results[j] for j in kept]
        ops.append(Op(op.name, operands, op.attrs, results, [new_body], op.loc))
        for j, k in dups.items():
            same[op.results[j]] = op.results[k]
        nc = int(op.attrs["num_carry"])
        report.append(
            {"op": at, "merged": sorted((j - nc, k - nc) for j, k in dups.items()),
             "bytes_per_trip": sum(body.results[j].type.nbytes for j in dups)}
        )  # fmt: skip
    if not report:
        return fn, report
    return Function(fn.name, fn.params, ops, [same.get(v, v) for v in fn.results]), report
