"""Timed decisions for the collective-matmul pass's `auto` mode.

At the first `auto` compile of a program with candidates, every distinct timing unit of its
shard_map bodies not decided before is timed on the body's devices. A unit
(`passes._timing_units`) is a candidate with its elementwise neighbourhood as the body has
it: an all-gather's matmul with the elementwise chain that consumes its result (a GELU), a
reduce-scatter's matmul with the elementwise chain that produces its operands; an all-gather
candidate whose result reaches a reduce-scatter candidate's matmul through such a chain (the
Megatron MLP) is one joint unit with it, timed both plain against both in each form. Timing a
candidate alone missed what differs around it: the plain MLP pays its GELU as a kernel of its
own, which the rings' steps take into theirs (2 H200s, T = 16384: each ring alone slower, the
MLP with both rings 5% faster). A unit is timed as small SPMD programs, the unit as written
(`_timing_units.Unit.function`) and, for each form of the pass's `auto_forms` (the ring;
chunked collectives, `chunkedK`), the unit with every member in that form (the pass's own
`apply` on it; a joint unit: both rings, both chunked2, ...; never a mix), each through the
passes that follow the collective-matmul pass and the same emission as the real program, so
what is timed is what would run. Each form is timed against its own run of the plain unit:
a few warm-up calls, then rounds of calls between two synchronisations, the two programs
interleaved (alternating which goes first, so drift hits both alike); the median round
decides. The form with the smallest time / plain time is taken when it is faster by more
than `MARGIN`; otherwise the unit stays as written. A form some member cannot take (K does
not divide its rows) is not timed for that unit.

Cost: one unit's timing takes about `BUDGET_S` (2 s), compiles included, unless its
compiles alone take most of it: then it takes the compiles and `MIN_BUDGET_S` (0.2 s) of
runs per unit. Every timing program is compiled first (on two threads on CPU; one after
the other on GPUs, where compiling autotunes the matmuls on the device); the runs share what
is left, at least `MIN_BUDGET_S` per unit, split evenly among its forms. Each round of calls
lasts a tenth of a form's share, so a unit whose calls are tiny runs many of them
(`MAX_CALLS` at most) and a slow one fewer rounds (at least `MIN_ROUNDS` of one call each).
Every form adds a program to compile, so the pass's default `auto_forms` is what keeps a
small unit's deciding near `BUDGET_S` on CPU. Everything counts in the first call's
figures (`timings["calibration"]`, inside "passes"); each decision records where its seconds
went (`UnitDecision`: building, compiling, inputs, runs). A joint unit's programs hold two
matmuls and the chain, the candidates' own programs one matmul each: the MLP compiles one
program per form and the plain one, where candidates alone compiled two per form.
Decisions are kept per (record format, device kind, device count, unit text: the members'
`collective_matmul.signature`s, which name the forms timed, and the unit's function) in
memory and, when `cache_dir` is set, in `cache_dir/collective-matmul-*.json` (records carry
`FORMAT`; one of another format, such as a unit timed for the rings alone, is never read),
so a later compile or process times nothing.

Several processes must take the same decisions, or their programs' collectives do not
match and hang. With `purejit.distributed` initialized, process 0 decides: it loads its
persisted decisions and tells every process which units are still to time; all time
those together (the programs span every process; process 0 also fixes the number of calls),
then process 0 publishes its decisions in the distributed key-value store and every process
uses those.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from purejit.backend import distributed
from purejit.backend import spmd as backend_spmd
from purejit.compiler import spmd
from purejit.compiler.cache_files import read_record, write_record
from purejit.config import config
from purejit.ir import Function, Op, TensorType, Value, verify
from purejit.passes import Pipeline
from purejit.passes._timing_units import Unit, member_key, timing_units
from purejit.passes.collective_matmul import (
    TimedDecision,
    apply,
    find_candidates,
    refusal,
    shard_map_candidates,
)
from purejit.passes.pipeline import pass_names

MARGIN = 0.02  # the ring must be this much faster than the plain program to be taken
BUDGET_S = 2.0  # one program's timing, compiles and runs, all candidates together
MIN_BUDGET_S = 0.2  # the runs of one candidate at least, even when compiling used the budget
ROUNDS = 5  # interleaved rounds of calls per program and candidate
MIN_ROUNDS = 3
MAX_CALLS = 200  # calls per round
_BLOCK = 65521  # timing inputs repeat random values of this period
MAX_KEPT = 1024  # decisions kept in memory (the oldest go first; persisted ones stay)
# persisted records: 3 = a timing unit's decision over the pass's forms (2: rings only;
# 1, unmarked: a lone candidate's)
FORMAT = 3

_memory: dict[tuple, "UnitDecision"] = {}
_lock = threading.Lock()
_generation = [0]  # bumped by `forget`, so a new decision gets fresh key-value names


@dataclass(frozen=True)
class UnitDecision(TimedDecision):
    """A timing unit's decision: `forms` the unit as written against each form (every member
    in it), `form` the best of them, `ring` whether it is taken (for every member).

    Args:
        timed_with: the unit in words (`Unit.describe`: its members and its chain's ops).
        passes_s: seconds building the unit's timing programs, the plain one and one per
            form (the passes after the collective-matmul pass).
        compile_s: seconds emitting and compiling them.
        inputs_s: seconds making their inputs on the devices (one set, shared by them).
        runs_s: seconds running them (warm-up, probe and the timed rounds).
    """

    timed_with: str = ""
    passes_s: float = 0.0
    compile_s: float = 0.0
    inputs_s: float = 0.0
    runs_s: float = 0.0

    def as_dict(self) -> dict:
        return {
            **super().as_dict(),
            "timed_with": self.timed_with,
            "passes_s": self.passes_s,
            "compile_s": self.compile_s,
            "inputs_s": self.inputs_s,
            "runs_s": self.runs_s,
        }


def _time_pair(plain, ring, budget_s: float, agree) -> tuple[float, float]:
    """Seconds per call of the plain and the ring program: the median of interleaved rounds.

    Args:
        plain, ring: `run(k)` runs the program k times and waits for the last call; returns
            the seconds it took.
        budget_s: about how long the rounds may take together.
        agree: `agree([calls, rounds])` gives process 0's numbers (every process must run
            the same calls, or the programs' collectives hang).
    """
    for _ in range(2):  # warm-up: first calls allocate buffers and load kernels
        plain(1), ring(1)
    probe = max(plain(1), ring(1), 1e-7)
    rounds = max(MIN_ROUNDS, min(ROUNDS, int(budget_s / (2 * probe))))
    calls = max(1, min(MAX_CALLS, int(budget_s / (2 * rounds * probe))))
    calls, rounds = agree([calls, rounds])
    p, r = [], []
    for k in range(rounds):
        for prog, out in ((plain, p), (ring, r)) if k % 2 == 0 else ((ring, r), (plain, p)):
            out.append(prog(calls) / calls)
    return statistics.median(p), statistics.median(r)


# the timing function; tests replace it to give each process different timings
time_pair = _time_pair


def repeated(fill: np.ndarray, shape) -> np.ndarray:
    """An array of `shape` holding `fill`'s values over and over (`np.resize`'s result),
    made by repeating its bytes: `np.resize` concatenates one copy per repeat, which took
    2.4 s for one bfloat16 operand on the GPU hosts' NumPy (24 operands: 57 s of a 62 s
    decision, profiled on 2 H200s)."""
    n = int(np.prod(shape, dtype=np.int64))
    raw = np.ascontiguousarray(fill).reshape(-1).view(np.uint8)
    reps = -(-n // fill.size) if fill.size else 0
    out = np.tile(raw, reps)[: n * fill.itemsize]
    return out.view(fill.dtype).reshape(shape)


class _Runner:
    """One compiled timing program; `inputs` gives it its inputs, then `run(k)` times k
    calls."""

    def __init__(self, fn: Function):
        t0 = time.perf_counter()
        layout = spmd.plan_layout(fn)
        self.exe = layout.compile(layout.emit(fn), fn)
        self.compile_s = time.perf_counter() - t0
        self.types = [p.type for p in fn.params]
        self.in_shardings = list(layout.in_shardings)
        self.args, self.inputs_s = None, 0.0

    def inputs(self, like: "_Runner | None" = None) -> None:
        """Make this program's inputs on the devices, or take `like`'s (a program of the
        same unit: the same parameter types and shardings), which then exist once."""
        if like is not None and (like.types, like.in_shardings) == (self.types, self.in_shardings):
            self.args = like.args
            return
        t0 = time.perf_counter()
        # random normal floats, repeated from one block of a prime length: drawing a whole
        # large operand (a 8192 x 32768 weight) would take seconds of the budget, and a
        # matmul's speed does not depend on its values repeating
        block = np.random.default_rng(0).standard_normal(_BLOCK)
        self.args = []
        for t, ns in zip(self.types, self.in_shardings):
            fill = block.astype(t.dtype) if t.dtype.kind in "fc" else np.ones(1, t.dtype)
            self.args.append(backend_spmd.put_sharded(repeated(fill, t.shape), ns))
        self.inputs_s = time.perf_counter() - t0

    def __call__(self, k: int) -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            outs = self.exe.execute(self.args)
        for o in outs:
            o.block_until_ready()
        return time.perf_counter() - t0


def _whole(body: Function, mc: Op) -> Function:
    """`body` as a whole program over `mc`'s devices: replicated inputs (every device gets
    the body's own input shapes), each result sharded along its first dimension (a scalar
    replicated)."""
    axes = tuple(mc.attrs["axis_names"])
    size = len(mc.attrs["device_ids"])
    params = [Value(p.type) for p in body.params]
    outs, specs = [], []
    for r in (v.type for v in body.results):
        if r.rank == 0:
            outs.append(Value(r))
            specs.append(())
        else:
            outs.append(Value(TensorType((r.shape[0] * size, *r.shape[1:]), r.dtype)))
            specs.append((axes, *[()] * (r.rank - 1)))
    attrs = dict(
        mc.attrs,
        in_specs=tuple(tuple(() for _ in p.type.shape) for p in params),
        out_specs=tuple(specs),
        check_vma=False,
    )
    op = Op("manual_computation", params, attrs, outs, [body], mc.loc)
    return verify(Function("collective_matmul_timing", params, [op], outs))


def unit_functions(unit: Unit, unroll: bool, forms: tuple = ("ring",)) -> tuple[Function, ...]:
    """The plain body of timing unit `unit` (the unit as written) and, for each of `forms`,
    the unit with every member in that form (the same chain around them in all)."""
    plain, members = unit.function()
    found = [c for c in find_candidates(plain) if any(c.collective is m for m in members)]
    if len(found) != len(members):
        raise NotImplementedError(
            f"collective_matmul timing: the unit {unit.describe()!r} has {len(members)} "
            f"candidates but its function shows {len(found)}"
        )
    return (plain, *(apply(plain, found, unroll=unroll, form=f) for f in forms))


def programs(unit: Unit, mc: Op, unroll: bool, tail: Pipeline, forms=("ring",)) -> list:
    """The plain timing program of timing unit `unit` of `mc`'s body and one per form of
    `forms`, after the passes `tail` (those after the collective-matmul pass)."""
    return [tail.run(_whole(b, mc))[0] for b in unit_functions(unit, unroll, forms)]


def _load(key) -> UnitDecision | None:
    rec = read_record(config.read("cache_dir"), "collective-matmul", key)
    if rec is None or rec.get("format") != FORMAT:  # a record of another format: time anew
        return None
    try:
        return UnitDecision(**{**rec["decision"], "source": "loaded"})
    except (TypeError, KeyError):
        return None


def _store(key, d: UnitDecision) -> None:
    rec = {"format": FORMAT, "decision": d.as_dict()}
    write_record(config.read("cache_dir"), "collective-matmul", key, rec)


def _time_all(todo: list, unroll: bool, tail: Pipeline, agree) -> dict:
    """{key: UnitDecision} for every (key, timing unit, manual op, forms) of `todo`, timed
    now: every program compiled first, then the runs share what is left of `BUDGET_S`."""
    if not todo:
        return {}
    t0 = time.perf_counter()
    progs, passes_s, first = [], [], []
    for _, unit, mc, forms in todo:
        t1 = time.perf_counter()
        first.append(len(progs))
        progs += programs(unit, mc, unroll, tail, forms)
        passes_s.append(time.perf_counter() - t1)
    mc = todo[0][2]
    if backend_spmd.device_by_id(int(mc.attrs["device_ids"][0])).platform == "cpu":
        with ThreadPoolExecutor(2) as pool:  # compiling releases the GIL
            runners = list(pool.map(_Runner, progs))
    else:
        # one at a time: XLA autotunes a GPU matmul by timing kernels on the device and keeps
        # the winner for the process (the user's program reuses it); a second compile
        # running beside it would skew that choice
        runners = [_Runner(f) for f in progs]
    for i, (_, _, _, forms) in enumerate(todo):  # a unit's programs share one set of inputs
        base = runners[first[i]]
        for r in runners[first[i] : first[i] + 1 + len(forms)]:
            r.inputs(None if r is base else base)
    out = {}
    for i, (key, unit, _, forms) in enumerate(todo):
        left = BUDGET_S - (time.perf_counter() - t0)
        budget = max(left / (len(todo) - i), MIN_BUDGET_S)
        mine = runners[first[i] : first[i] + 1 + len(forms)]
        t1 = time.perf_counter()
        rows = []
        for j, f in enumerate(forms):  # each form against its own run of the plain unit
            # what is left of the unit's share, split among the forms still to time (a
            # form's warm-up calls, outside its rounds, come out of the later forms' share)
            left = budget - (time.perf_counter() - t1)
            share = max(left / (len(forms) - j), MIN_BUDGET_S / len(forms))
            what = f"calls/{i}/{j}"
            pair = time_pair(mine[0], mine[1 + j], share, lambda v, w=what: agree(w, v))
            rows.append((f, *pair, pair[1] < (1.0 - MARGIN) * pair[0]))
        form, plain_s, form_s, faster = min(rows, key=lambda r: r[2] / r[1])
        out[key] = UnitDecision(
            plain_s,
            form_s,
            faster,
            "timed",
            form,
            tuple(rows),
            timed_with=unit.describe(),
            passes_s=passes_s[i],
            compile_s=sum(r.compile_s for r in mine),
            inputs_s=sum(r.inputs_s for r in mine),
            runs_s=time.perf_counter() - t1,
        )
    return out


def _shared(todo: list, unroll: bool, tail: Pipeline) -> dict:
    """Process 0's decisions for `todo`, the same in every process of the job."""
    keys = [t[0] for t in todo]
    digest = hashlib.sha256(repr((keys, _generation[0])).encode()).hexdigest()[:16]
    name = "purejit/collective-matmul/" + digest
    if distributed.process_index() == 0:

        def agree(what, value):
            distributed.kv_set(f"{name}/{what}", json.dumps(value))
            return value

        known = {key: _load(key) for key in keys}
        left = [t for t in todo if known[t[0]] is None]
        distributed.kv_set(name + "/plan", json.dumps([keys.index(t[0]) for t in left]))
        timed = _time_all(left, unroll, tail, agree)
        for key, d in timed.items():
            _store(key, d)
        got = {**{k: d for k, d in known.items() if d is not None}, **timed}
        distributed.kv_set(name, json.dumps([got[key].as_dict() for key in keys]))
        return got
    plan = json.loads(distributed.kv_get(name + "/plan"))
    # take part in process 0's timing: same programs, same calls; its decisions are used
    _time_all(
        [todo[k] for k in plan], unroll, tail, lambda what, _: json.loads(
            distributed.kv_get(f"{name}/{what}")
        )
    )  # fmt: skip
    shared = json.loads(distributed.kv_get(name))
    return {key: UnitDecision(**{**d, "source": "shared"}) for key, d in zip(keys, shared)}


def units(fn: Function, p) -> list[tuple[Op, Unit, str]]:
    """(manual op, timing unit, unit text) for every timing unit of `fn`'s shard_map bodies,
    in the order the pass visits their candidates (the text as collective-matmul pass `p`
    keys its decisions: `key_signature`, with the forms it times)."""
    bodies: dict[int, tuple[Op, list]] = {}
    for mc, c in shard_map_candidates(fn):
        bodies.setdefault(id(mc), (mc, []))[1].append(c)
    out = []
    for mc, cands in bodies.values():
        n = len(mc.attrs["device_ids"])
        for unit in timing_units(mc.regions[0], cands):
            out.append((mc, unit, unit.text(p.key_signature(n))))
    return out


def _decisions(fn: Function, p, tail: Pipeline) -> dict:
    """{key: UnitDecision} for every candidate of `fn`'s shard_map bodies whose timing unit
    some form of `p.auto_forms` applies to (the key collective-matmul pass `p` looks its
    decision up under, `_timing_units.member_key`)."""
    p.check()  # an unknown or pipelined form raises before anything is timed
    todo, sigs = [], {}
    for mc, unit, text in units(fn, p):
        forms = tuple(f for f in p.auto_forms if all(refusal(c, f) is None for c in unit.members))
        if not forms:  # no form every member takes: nothing to time, the unit stays
            continue
        dev = backend_spmd.device_by_id(int(mc.attrs["device_ids"][0]))
        key = (f"format {FORMAT}", str(dev.device_kind), len(mc.attrs["device_ids"]), text)
        if member_key(text, 0) not in sigs:
            todo.append((key, unit, mc, forms))
        for i in range(len(unit.members)):
            sigs[member_key(text, i)] = key
    with _lock:
        missing = [t for t in todo if t[0] not in _memory]
        if missing:
            if distributed.is_initialized() and distributed.process_count() > 1:
                got = _shared(missing, p.unroll, tail)
            else:
                got = {t[0]: _load(t[0]) for t in missing}
                left = [t for t in missing if got[t[0]] is None]
                timed = _time_all(left, p.unroll, tail, lambda what, v: v)
                for key, d in timed.items():
                    _store(key, d)
                got.update(timed)
            _memory.update(got)
        out = {sig: _memory[key] for sig, key in sigs.items()}
        for key in list(_memory)[: max(len(_memory) - MAX_KEPT, 0)]:
            del _memory[key]
        return out


def decide(pipeline: Pipeline, timings: dict, fn: Function) -> Pipeline:
    """`pipeline` with every collective-matmul pass that asks for timed decisions given
    them for the function it will see (`fn` after the passes before it); the seconds spent
    go to `timings["calibration"]` (about 0 when everything was decided before)."""
    passes = list(pipeline.passes)
    if not any(getattr(p, "needs_timing", False) for p in passes):
        return pipeline
    t0 = time.perf_counter()
    for i, p in enumerate(passes):
        if not getattr(p, "needs_timing", False) or p.name in pipeline.disable:
            continue
        seen = fn if i == 0 else _part(pipeline, passes[:i]).run(fn)[0]
        after = [q for q in passes[i + 1 :] if not hasattr(q, "needs_timing")]
        passes[i] = p.timed(_decisions(seen, p, _part(pipeline, after)))
    timings["calibration"] = timings.get("calibration", 0.0) + time.perf_counter() - t0
    return replace(pipeline, passes=passes)


def _part(pipeline: Pipeline, passes: list) -> Pipeline:
    disable = [d for d in pipeline.disable if d in pass_names(passes)]
    return Pipeline(passes, disable, None, False, pipeline.verify_each)


def forget() -> None:
    """Drop the in-memory decisions (tests; with several processes, every process must call
    it at the same point)."""
    with _lock:
        _memory.clear()
        _generation[0] += 1
