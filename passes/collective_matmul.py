"""Collective matmul: overlap an all-gather or a reduce-scatter with the matmul it feeds.

Two rewrites (the "collective matmul" decomposition of Wang et al., ASPLOS 2023), on every
function body, shard_map bodies (`manual_computation` regions) included:

    y = dot_general(all_gather(x), w)      # x gathered along a free dimension d
      -> a ring of n steps: multiply the shard held now, send it to the next device
         (collective_permute), write the partial product into block (p - s) mod n of y

    y = reduce_scatter(dot_general(x, w))  # scattered along an output dimension that comes
                                           # from a free dimension of x (or w), with "add"
      -> a ring of n steps: acc = collective_permute(acc) + dot(block (p - s - 1) mod n of x, w)

`p` is the device's position in its replica group, read from `partition_id`; ring neighbours
are the next device of each replica group. A ring is a `while` loop (one step's buffers live
at a time; `unroll=True` emits the steps one after the other instead). It never materialises
the gathered operand or the unscattered product, so `temp_size_in_bytes` falls, and each
step's transfer can run while the step multiplies.

A second form, `form="chunkedK"` (`passes/_chunked.py`), keeps the fast collective and cuts
it with the matmul into K pieces (K all-gathers each feeding its own matmul; K matmuls each
feeding its own reduce-scatter), so that one piece's transfer can run while another piece
multiplies; the pieces are put back where the plain program puts them. `form="pipelinedK"`
carries the pieces through a whole proved layer (all-gather, matmul, elementwise ops, matmul,
reduce-scatter: `passes/_chunked_layer.py`), so no row moves at all.

Which candidates are rewritten (`mode="auto"`) is decided by timing them: `purejit.jit`
builds, for each distinct timing unit of a shard_map body (`_timing_units`: a candidate
with its elementwise neighbourhood as the body has it, a GELU after an all-gather's matmul,
the chain before a reduce-scatter's; an all-gather candidate joined to a reduce-scatter
candidate through such a chain is one unit with it), small programs over the body's devices:
the unit as written and the unit with each form of `auto_forms` applied to all its members
(both rings, both chunked2, ...; never a mix), times each form against the plain program and
hands the pass the outcome (`timed`, `TimedDecision`; `purejit.compiler.candidate_timing`):
the form that beat the plain program by the largest ratio, for every member of the unit, or
none. A decision is kept under its unit's text and the form set
(`_timing_units.decision_keys` over `key_signature`). A candidate without a timed decision
(outside a shard_map body) stays as written. The older cost model of bytes and flops
(`estimate_seconds`, a measured `Calibration`) is still there: `decide="model"` makes
`purejit.jit` measure a calibration instead, and a pass run by hand with `calibration=`
uses it. `mode="on"` rewrites every candidate (in `form`), `"off"` none.

Guarantees: results are unchanged up to the order of floating-point sums (the ring adds the
reduce-scatter's terms in ring order; the chunked and pipelined forms compute each element as
the plain program does, on sub-blocks). Never touches: collectives whose result has other
uses, gathers along contracting or batch dimensions, reductions other than "add", ops in
regions of control flow (only top-level bodies and manual computation bodies are visited).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from purejit.ir import Function, Op, Value, print_function
from purejit.passes import _chunked, _chunked_layer, _rings, _timing_units
from purejit.passes._dot_dims import dot_dims, output_dim, source_dim
from purejit.passes.base import PassResult


def dot_flops(op: Op) -> int:
    _, _, lc, _ = dot_dims(op)
    k = int(np.prod([op.operands[0].type.shape[d] for d in lc], dtype=np.int64))
    return 2 * op.results[0].type.size * k


@dataclass(frozen=True)
class Candidate:
    kind: str  # "all_gather->dot" or "dot->reduce_scatter"
    collective: Op
    dot: Op
    side: int  # which dot operand is gathered / sliced
    dim: int  # that operand's dimension
    out_dim: int  # the result dimension that is gathered / scattered
    n: int  # devices per replica group


@dataclass(frozen=True)
class Calibration:
    """The cost model's inputs, measured on the devices the program runs on.

    Args:
        link_bytes_per_s: bandwidth of one device's link to its ring neighbour.
        flops_per_s: one device's matmul rate.
        step_latency_s: fixed cost of one ring step: what a ring costs beyond its bytes
            at the link rate and its flops at the matmul rate, per step (launches, the
            updates, the loops, the output's zeroing). Measured by timing a tensor-parallel
            MLP's two rings as the pass emits them.
        source: where the figures come from ("measured", "shared", "injected", ...).
        overlap: the share (0 to 1) of the shorter of a step's transfer and multiply that
            runs during the longer one. 1 is the ideal ring; measured on 4 H200s, rings of
            NCCL transfers and cuBLAS matmuls hid little, and the ring lost to the plain
            collective on every shape.
        collective_bytes_per_s: the rate of the plain all-gather / reduce-scatter (bytes a
            device receives per second); None: `link_bytes_per_s`. Over NVSwitch on 4 H200s
            it was 1.6x a ring link's, and pricing the plain collective at a link's rate made
            `auto` choose rings that lost (1.4x and 1.6x the plain program).
        plain_latency_s: fixed cost of the plain program (the collective, then the
            matmul): what it costs beyond its bytes at the collective's rate and its flops
            at the matmul rate. Measured by timing the MLP's all-gather, matmuls and
            reduce-scatter. None: two step latencies. On 2 H200s, priced at two bare
            transfers' fixed cost (about 80 us), the plain program came out 33-58 us above
            its measured time per collective + matmul on the small shapes while the rings
            were priced within about 20 us, and `auto` chose rings that lost 1.09-1.12x.
    """

    link_bytes_per_s: float
    flops_per_s: float
    step_latency_s: float
    source: str = "injected"
    overlap: float = 1.0
    collective_bytes_per_s: float | None = None
    plain_latency_s: float | None = None

    def as_dict(self) -> dict:
        return {
            "link_bytes_per_s": self.link_bytes_per_s,
            "flops_per_s": self.flops_per_s,
            "step_latency_s": self.step_latency_s,
            "source": self.source,
            "overlap": self.overlap,
            "collective_bytes_per_s": self.collective_bytes_per_s,
            "plain_latency_s": self.plain_latency_s,
        }


def estimate_seconds(moved: float, flops: float, n: int, cal: Calibration) -> tuple[float, float]:
    """The cost model: seconds of the plain program (collective, then the whole matmul) and
    of the ring, for a collective moving `moved` bytes into (or out of) each device around
    a matmul of `flops` on each device, over `n` devices.

    plain = moved / collective rate + flops / matmul rate + plain latency
    ring  = one block's multiply + (n - 1) * (max(a, b) + (1 - overlap) * min(a, b)
            + step latency), a = one block's transfer at the link rate, b = its multiply
    """
    t_comm = moved / cal.link_bytes_per_s
    t_comp = flops / cal.flops_per_s
    t_coll = moved / (cal.collective_bytes_per_s or cal.link_bytes_per_s)
    fixed = 2 * cal.step_latency_s if cal.plain_latency_s is None else cal.plain_latency_s
    plain = t_coll + t_comp + fixed
    a, b = t_comm / (n - 1), t_comp / n  # one step's transfer and multiply
    step = max(a, b) + (1.0 - cal.overlap) * min(a, b) + cal.step_latency_s
    return plain, t_comp / n + (n - 1) * step


@dataclass(frozen=True)
class TimedDecision:
    """What timing one timing unit's programs found (`purejit.compiler.candidate_timing`):
    the plain unit against each form of the pass's `auto_forms`, every member in that form.

    Args:
        plain_s: seconds per call of the plain unit (timed beside `form`).
        ring_s: seconds per call of the unit in `form`.
        ring: whether `form` is taken (faster than the plain unit by more than the
            timing's margin) for every member of the unit.
        source: "timed" (measured now), "loaded" (a persisted decision), "shared"
            (process 0's, through the distributed key-value store), "injected" ...
        form: the best form timed (the smallest seconds / plain seconds): "ring" or
            "chunkedK".
        forms: `(form, plain_s, form_s, faster)` of every form timed, each beside its own
            run of the plain unit (`faster`: by more than the margin); empty: only `form`,
            as `plain_s`, `ring_s` and `ring` say.
    """

    plain_s: float
    ring_s: float
    ring: bool
    source: str = "timed"
    form: str = "ring"
    forms: tuple = ()

    def __post_init__(self):  # a decision read back from JSON has lists
        object.__setattr__(self, "forms", tuple(tuple(f) for f in self.forms))

    def per_form(self) -> dict:
        """{form: {"plain_s", "ring_s", "ring"}} of every form timed ("ring": faster than
        the plain unit by more than the margin)."""
        rows = self.forms or ((self.form, self.plain_s, self.ring_s, self.ring),)
        return {f: {"plain_s": p, "ring_s": r, "ring": bool(b)} for f, p, r, b in rows}

    def as_dict(self) -> dict:
        return {
            "plain_s": self.plain_s,
            "ring_s": self.ring_s,
            "ring": self.ring,
            "source": self.source,
            "form": self.form,
            "forms": [list(f) for f in self.forms],
        }


@dataclass(frozen=True)
class CollectiveMatmul:
    """The pass. Options are its fields.

    Args:
        mode: "auto" (each candidate as decided), "on" (every candidate) or "off".
        decide: how `purejit.jit` decides for "auto": "timed" (time each candidate's plain
            and ring programs on the devices) or "model" (the cost model over a measured
            `Calibration`).
        decisions: the timed decisions, `(key, TimedDecision)` pairs (the key of a
            candidate: `_timing_units.decision_keys`); `purejit.jit`
            fills them in for "auto" (`timed`).
        calibration: the cost model's measured inputs, used for "auto" when no decisions
            are given; `purejit.jit` fills it in for `decide="model"`.
        unroll: emit the ring's steps one after the other instead of as a `while` loop (the
            loop keeps one step's buffers live; unrolled, XLA may schedule steps freely).
        form: what "on" makes of every candidate: "ring" or "chunkedK", the collective and
            the matmul cut into K pieces whose collectives run one after the other
            (`passes/_chunked.py`; "chunkedK_free": independent pieces, for XLA to arrange);
            a candidate K does not divide is left as written, with the reason in the report.
            "pipelinedK": each proved all-gather -> matmul -> elementwise ops -> matmul ->
            reduce-scatter layer cut into K row pieces that each go through the whole layer
            (`passes/_chunked_layer.py`), the other candidates chunkedK; not timed by auto.
        auto_forms: the forms "auto" times beside the plain program, each applied to every
            member of a timing unit (each against its own run of the plain unit; the form
            set is part of a decision's key): a unit takes the form that beats the plain
            program by the largest ratio, if it beats it by more than the margin. The
            default times the ring alone: on 2 H200s chunked2 and chunked4 were slower than
            the plain program on every shape timed (4096 to 16384 x 2048, 8192 x 8192; 1.13-1.35x
            as programs) and doubled the compiles of a decision (2.0-3.9 s with three forms).
    """

    name: str = "collective_matmul"
    mode: str = "auto"
    calibration: Calibration | None = None
    unroll: bool = False
    decide: str = "timed"
    decisions: tuple | None = None
    form: str = "ring"
    auto_forms: tuple[str, ...] = ("ring",)

    @property
    def needs_calibration(self) -> bool:
        return (
            self.mode == "auto"
            and self.decide == "model"
            and self.calibration is None
            and self.decisions is None
        )

    @property
    def needs_timing(self) -> bool:
        return (
            self.mode == "auto"
            and self.decide == "timed"
            and self.decisions is None
            and self.calibration is None
        )

    def key_signature(self, mesh_size: int | None):
        """`signature` of a candidate over `mesh_size` devices as this pass's timed decisions
        key it (its rings' unrolling, the forms `auto` times)."""
        return lambda c: signature(c, mesh_size, self.unroll, self.auto_forms)

    def calibrated(self, cal: Calibration) -> "CollectiveMatmul":
        return replace(self, calibration=cal)

    def timed(self, decisions: dict) -> "CollectiveMatmul":
        """This pass with timed decisions, `{key: TimedDecision}`."""
        return replace(self, decisions=tuple(sorted(decisions.items())))

    def estimate(self, c: Candidate) -> dict:
        """Estimated seconds with and without the ring (the cost model); without a
        calibration, only the bytes and flops."""
        full = (
            c.collective.results[0].type
            if c.kind.startswith("all_gather")
            else c.dot.results[0].type
        )
        moved = full.nbytes * (c.n - 1) / c.n
        est = {"kind": c.kind, "devices": c.n, "bytes": int(moved), "flops": dot_flops(c.dot)}
        cal = self.calibration
        if cal is None:
            return est
        plain, ring = estimate_seconds(moved, dot_flops(c.dot), c.n, cal)
        return {**est, "plain_s": plain, "ring_s": ring}

    def _keys(self, body: Function, cands: list, mesh_size: int | None) -> dict:
        """{candidate: the key of its timed decision} (`_timing_units.decision_keys`)."""
        if self.mode != "auto" or self.decisions is None or not cands:
            return {}
        sig = self.key_signature(mesh_size)
        return _timing_units.decision_keys(body, find_candidates(body), sig)

    def check(self) -> None:
        """Raise ValueError on an option that is none of the pass's (before any timing)."""
        if self.mode not in ("auto", "on", "off"):
            raise ValueError(f"collective_matmul: mode must be auto, on or off, not {self.mode!r}")
        if self.decide not in ("timed", "model"):
            raise ValueError(
                f"collective_matmul: decide must be timed or model, not {self.decide!r}"
            )
        for f in (self.form, *self.auto_forms):
            _chunked.chunks_of(f)  # a name that is no form raises ValueError
        if any(_chunked.pipelined(f) for f in self.auto_forms):
            raise ValueError(
                "collective_matmul: auto does not time pipelined forms (a whole layer); force "
                "one with mode='on', form='pipelinedK'"
            )

    def _decide(self, c: Candidate, mesh_size: int | None, est: dict, key=None) -> dict:
        if self.mode == "off":
            return {**est, "rewritten": False}
        if self.mode == "on":
            form = _chunked.single(self.form)  # outside a proved layer: the chunked form
            why = refusal(c, form)
            if why is not None:
                return {**est, "rewritten": False, "form": None, "refused": why}
            return {**est, "rewritten": True, "form": form}
        if self.decisions is not None:
            return self._timed(c, mesh_size, est, key)
        if self.calibration is None:
            raise ValueError(
                "collective_matmul: mode='auto' needs timed decisions or the devices' figures; "
                "run it through purejit.jit (which times the candidates) or pass "
                "calibration=Calibration(...)"
            )
        ring = est["ring_s"] < est["plain_s"]
        return {**est, "rewritten": ring, "form": "ring" if ring else None}

    def _timed(self, c: Candidate, mesh_size: int | None, est: dict, key) -> dict:
        """The form `c`'s timing unit's decision takes (the same for every member)."""
        got = None if key is None else dict(self.decisions).get(key)
        if got is None and mesh_size is None:  # outside a shard_map body: no devices
            return {
                **est,
                "rewritten": False,
                "form": None,
                "timed": "no timing (outside shard_map)",
            }
        if got is None:  # candidate_timing times only forms every member of a unit takes
            why = [f"{f}: {r}" for f in self.auto_forms if (r := refusal(c, f)) is not None]
            why = "; ".join(why) if why else "none given for its timing unit"
            return {**est, "rewritten": False, "form": None, "timed": f"no timed decision ({why})"}
        form = got.form if got.ring else None
        why = None if form is None else refusal(c, form)
        if why is not None:  # an injected decision of a form this candidate cannot take
            return {**est, "rewritten": False, "form": None, "refused": why}
        est = {**est, **got.as_dict(), "timed": got.source, "forms": got.per_form()}
        return {**est, "rewritten": form is not None, "form": form}

    def __call__(self, fn: Function) -> PassResult:
        self.check()
        report = {"candidates": [], "rewritten": 0}
        if self.calibration is not None:
            report["calibration"] = self.calibration.as_dict()
        new = self._function(fn, report, None)
        timed = [c for c in report["candidates"] if "forms" in c]
        if timed:  # explain prints scalar report entries: one line for every decision
            report["timed"] = "; ".join(_timed_line(c) for c in timed)
        return PassResult(new, report["rewritten"] > 0, report)

    def _function(self, fn: Function, report, mesh_size: int | None) -> Function:
        ops = []
        for op in fn.ops:
            if op.name == "manual_computation":
                body = self._function(op.regions[0], report, len(op.attrs["device_ids"]))
                op = Op(op.name, op.operands, op.attrs, op.results, [body], op.loc)
            ops.append(op)
        body = Function(fn.name, fn.params, ops, fn.results)
        candidates = find_candidates(body)
        layers = []
        if self.mode == "on" and _chunked.pipelined(self.form):
            k, chain = _chunked.chunks_of(self.form), _chunked.chained(self.form)
            layers = _chunked_layer.find_layers(body, candidates, k, chain)
        in_layer = {id(c) for layer in layers for c in (layer.gather, layer.scatter)}
        chosen = []
        keys = self._keys(body, candidates, mesh_size)
        for c in candidates:
            if id(c) in in_layer:
                est = {**self.estimate(c), "rewritten": True, "form": self.form}
            else:
                est = self._decide(c, mesh_size, self.estimate(c), keys.get(c))
            report["candidates"].append(est)
            if est["rewritten"] and id(c) not in in_layer:
                chosen.append((c, est["form"]))
        if not chosen and not layers:
            return body
        report["rewritten"] += len(chosen) + 2 * len(layers)
        cs, forms = [c for c, _ in chosen], [f for _, f in chosen]
        return apply(body, cs, unroll=self.unroll, forms=forms, layers=layers)


def _timed_line(c: dict) -> str:
    """`kind timed plain P us, ring R us, chunked2 C us (plain P2 us), chose FORM (source,
    as UNIT)`."""
    forms = c["forms"]
    # each form was timed against its own run of the plain program: shown where it differs
    parts = [
        f"{f} {d['ring_s'] * 1e6:.1f} us"
        + ("" if d["plain_s"] == c["plain_s"] else f" (plain {d['plain_s'] * 1e6:.1f} us)")
        for f, d in forms.items()
    ]
    unit = f", as {c['timed_with']}" if c.get("timed_with") else ""
    return (
        f"{c['kind']} timed plain {c['plain_s'] * 1e6:.1f} us, {', '.join(parts)}, "
        f"chose {c['form'] or 'plain'} ({c['timed']}{unit})"
    )


def refusal(c: Candidate, form: str) -> str | None:
    """Why candidate `c` cannot take `form` ("ring" or "chunkedK"); None when it can."""
    k = _chunked.chunks_of(form)
    if k is None:
        return None
    sp = _chunked.split(c, k, _chunked.chained(form))
    return sp if isinstance(sp, str) else None


def shard_map_candidates(fn: Function) -> list[tuple[Op, Candidate]]:
    """Every candidate of `fn`'s shard_map bodies with the `manual_computation` op it is in
    (the devices it runs on), in the order the pass visits them."""
    out = []
    for op in fn.ops:
        if op.name == "manual_computation":
            body = op.regions[0]
            out += shard_map_candidates(body)
            out += [(op, c) for c in find_candidates(body)]
    return out


def candidate_function(c: Candidate) -> Function:
    """The candidate alone: a function of the collective's and the matmul's other inputs
    that runs the collective and the matmul as written (what timing runs as the plain
    program; `apply` on it gives the ring)."""
    fresh: dict[Value, Value] = {}

    def new(v: Value) -> Value:
        if v not in fresh:
            fresh[v] = Value(v.type)
        return fresh[v]

    first, second = (
        (c.collective, c.dot) if c.kind.startswith("all_gather") else (c.dot, c.collective)
    )
    params = [new(v) for v in first.operands]
    params += [new(v) for v in second.operands if v is not first.results[0] and v not in fresh]
    ops = [
        Op(op.name, [new(v) for v in op.operands], op.attrs, [new(r) for r in op.results],
           op.regions, op.loc)
        for op in (first, second)
    ]  # fmt: skip
    return Function(c.kind.replace("->", "_"), params, ops, [new(second.results[0])])


def signature(
    c: Candidate, mesh_size: int | None, unroll: bool = False, forms: tuple = ("ring",)
) -> str:
    """What a timed decision is kept under (with its timing unit's function): the candidate
    alone as text (the collective, its replica groups and gathered or scattered dimension,
    the matmul's dimension numbers, the types and dtypes), the size of the mesh it runs on
    and the forms timed (chunked collectives and their number; the ring's loop or unrolled
    steps, where the ring is among them)."""
    head = f"mesh {mesh_size} forms {','.join(forms)}"
    if "ring" in forms:
        head += f" unroll {unroll}"
    return head + "\n" + print_function(candidate_function(c))


def find_candidates(fn: Function) -> list[Candidate]:
    """Every rewritable all_gather->dot and dot->reduce_scatter pair of `fn`'s own body."""
    uses: dict[Value, int] = {}
    producer: dict[Value, Op] = {}
    for op in fn.ops:
        for v in op.operands:
            uses[v] = uses.get(v, 0) + 1
        for r in op.results:
            producer[r] = op
    for v in fn.results:
        uses[v] = uses.get(v, 0) + 1
    out, taken = [], set()
    for op in fn.ops:
        if op.name == "dot_general":
            for side in (0, 1):
                g = producer.get(op.operands[side])
                if g is None or g.name != "all_gather" or uses[g.results[0]] != 1 or id(g) in taken:
                    continue
                if op.operands[0] is op.operands[1]:
                    continue
                d = int(g.attrs["all_gather_dim"])
                od = output_dim(op, side, d)
                n = len(g.attrs["replica_groups"][0])
                if od is not None and n > 1:
                    out.append(Candidate("all_gather->dot", g, op, side, d, od, n))
                    taken.add(id(g))
                    break
        elif op.name == "reduce_scatter" and op.attrs["computation"] == "add":
            dot = producer.get(op.operands[0])
            if dot is None or dot.name != "dot_general" or uses[dot.results[0]] != 1:
                continue
            if any(c.dot is dot for c in out):
                continue
            src = source_dim(dot, int(op.attrs["scatter_dimension"]))
            n = len(op.attrs["replica_groups"][0])
            if src is not None and n > 1:
                out.append(
                    Candidate(
                        "dot->reduce_scatter",
                        op,
                        dot,
                        src[0],
                        src[1],
                        int(op.attrs["scatter_dimension"]),
                        n,
                    )
                )
    return out


def apply(
    fn: Function,
    chosen: list[Candidate],
    *,
    unroll: bool = False,
    form: str = "ring",
    forms: list[str] | None = None,
    layers: list = (),
) -> Function:
    """Rewrite the chosen candidates of `fn`'s body; returns a new function.

    Args:
        unroll: the rings' steps unrolled (form "ring").
        form: the form of every chosen candidate, "ring" or "chunkedK" ("pipelinedK" is
            chunkedK for a lone candidate); `forms`, one per candidate, overrides it. A
            candidate that cannot take its form raises ValueError (the pass checks `refusal`
            first).
        layers: proved whole layers (`_chunked_layer.find_layers`; their candidates are not
            among `chosen`), each rewritten into pipelined pieces where its reduce-scatter was.
    """
    forms = forms or [_chunked.single(form)] * len(chosen)
    removed = {id(c.collective if c.kind.startswith("all_gather") else c.dot) for c in chosen}
    at = {
        id(c.dot if c.kind.startswith("all_gather") else c.collective): (c, f)
        for c, f in zip(chosen, forms)
    }
    for layer in layers:
        removed |= {id(layer.gather.collective), id(layer.gather.dot), id(layer.scatter.dot)}
        removed |= {id(op) for op in layer.region}
        at[id(layer.scatter.collective)] = (layer, None)
    subst: dict[Value, Value] = {}
    ops: list[Op] = []
    for op in fn.ops:
        if id(op) in removed:
            continue
        hit = at.get(id(op))
        if hit is None:
            operands = [subst.get(v, v) for v in op.operands]
            ops.append(Op(op.name, operands, op.attrs, op.results, op.regions, op.loc))
            continue
        c, f = hit
        if f is None:  # a whole layer
            new_ops, value = _chunked_layer.emit(c, lambda v: subst.get(v, v))
            ops.extend(new_ops)
            subst[op.results[0]] = value
            continue
        gather = c.kind.startswith("all_gather")
        k = _chunked.chunks_of(f)
        if k is None:
            rewrite = _rings.all_gather_dot if gather else _rings.dot_reduce_scatter
            new_ops, value = rewrite(c, lambda v: subst.get(v, v), unroll)
        else:
            sp = _chunked.split(c, k, _chunked.chained(f))
            if isinstance(sp, str):
                raise ValueError(f"collective_matmul: {c.kind}: {sp}")
            rewrite = _chunked.all_gather_dot if gather else _chunked.dot_reduce_scatter
            new_ops, value = rewrite(c, lambda v: subst.get(v, v), sp)
        ops.extend(new_ops)
        subst[op.results[0]] = value
    return Function(fn.name, fn.params, ops, [subst.get(v, v) for v in fn.results])
