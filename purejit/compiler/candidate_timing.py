"""Timed decisions for the collective-matmul pass's `auto` mode.

At the first `auto` compile of a program with candidates, every distinct candidate of its
shard_map bodies (`collective_matmul.signature`: the collective, its replica groups and
dimension, the matmul's dimension numbers, the types, the mesh size) not decided before is
timed on the body's devices: two small SPMD programs, the plain pattern as the user wrote it
(`candidate_function`) and the ring the pass makes of it (the pass's own `apply`), each
through the passes that follow the collective-matmul pass and the same emission as the real
program, so what is timed is what would run. Both run a few warm-up calls, then rounds of
calls between two synchronisations, plain and ring interleaved (alternating which goes
first, so drift hits both alike); the median round decides. The ring is taken only when
it is faster by more than `MARGIN`; otherwise the program stays as written. Each form the
pass's `auto_forms` names (the ring; chunked collectives, `chunkedK`) is timed so, against the
plain program, and kept under its own signature; the pass takes the best of those it beat.

Cost: one program's timing takes about `BUDGET_S` (2 s), compiles included, unless its
compiles alone take most of it: then it takes the compiles and `MIN_BUDGET_S` (0.2 s) of
runs per candidate. Every timing program is compiled first (on two threads on CPU;
one after the other on GPUs, where compiling autotunes the matmuls on the device); the runs
share what is left, at least `MIN_BUDGET_S` per candidate. Each round of calls lasts a tenth
of a candidate's share, so a candidate whose calls are tiny runs many of them
(`MAX_CALLS` at most) and a slow one fewer rounds (at least `MIN_ROUNDS` of one call each).
Everything counts in the first call's figures (`timings["calibration"]`, inside "passes").
Decisions are kept per (device kind, device count, signature) in memory and, when
`cache_dir` is set, in `cache_dir/collective-matmul-*.json`, so a later compile or process
times nothing.

Several processes must take the same decisions, or their programs' collectives do not
match and hang. With `purejit.distributed` initialized, process 0 decides: it loads its
persisted decisions and tells every process which candidates are still to time; all time
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
from dataclasses import replace

import numpy as np

from purejit.backend import distributed
from purejit.backend import spmd as backend_spmd
from purejit.compiler import spmd
from purejit.compiler.cache_files import read_record, write_record
from purejit.config import config
from purejit.ir import Function, Op, TensorType, Value, verify
from purejit.passes import Pipeline
from purejit.passes.collective_matmul import (
    TimedDecision,
    apply,
    candidate_function,
    find_candidates,
    refusal,
    shard_map_candidates,
    signature,
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

_memory: dict[tuple, TimedDecision] = {}
_lock = threading.Lock()
_generation = [0]  # bumped by `forget`, so a new decision gets fresh key-value names


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


class _Runner:
    """One compiled timing program with its inputs; `run(k)` times k calls."""

    def __init__(self, fn: Function):
        layout = spmd.plan_layout(fn)
        self.exe = layout.compile(layout.emit(fn), fn)
        # random normal floats, repeated from one block of a prime length: drawing a whole
        # large operand (a 8192 x 32768 weight) would take seconds of the budget, and a
        # matmul's speed does not depend on its values repeating
        block = np.random.default_rng(0).standard_normal(_BLOCK)
        self.args = []
        for p, ns in zip(fn.params, layout.in_shardings):
            t = p.type
            fill = block.astype(t.dtype) if t.dtype.kind in "fc" else np.ones(1, t.dtype)
            self.args.append(backend_spmd.put_sharded(np.resize(fill, t.shape), ns))

    def __call__(self, k: int) -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            outs = self.exe.execute(self.args)
        for o in outs:
            o.block_until_ready()
        return time.perf_counter() - t0


def _whole(body: Function, mc: Op) -> Function:
    """`body` as a whole program over `mc`'s devices: replicated inputs (every device gets
    the body's own input shapes), the result sharded along its first dimension."""
    axes = tuple(mc.attrs["axis_names"])
    size = len(mc.attrs["device_ids"])
    params = [Value(p.type) for p in body.params]
    r = body.results[0].type
    out = Value(TensorType((r.shape[0] * size, *r.shape[1:]), r.dtype))
    attrs = dict(
        mc.attrs,
        in_specs=tuple(tuple(() for _ in p.type.shape) for p in params),
        out_specs=((axes, *[()] * (r.rank - 1)),),
        check_vma=False,
    )
    op = Op("manual_computation", params, attrs, [out], [body], mc.loc)
    return verify(Function("collective_matmul_timing", params, [op], [out]))


def programs(c, mc: Op, how: dict, tail: Pipeline) -> tuple[Function, Function]:
    """The plain and the rewritten timing programs of candidate `c` of `mc`'s body (`how`:
    `apply`'s keywords, the form), after the passes `tail` (those after the
    collective-matmul pass)."""
    plain = candidate_function(c)
    (one,) = find_candidates(plain)
    ring = apply(plain, [one], **how)
    return tuple(tail.run(_whole(b, mc))[0] for b in (plain, ring))


def _load(key) -> TimedDecision | None:
    rec = read_record(config.read("cache_dir"), "collective-matmul", key)
    try:
        return None if rec is None else TimedDecision(**{**rec["decision"], "source": "loaded"})
    except (TypeError, KeyError):
        return None


def _store(key, d: TimedDecision) -> None:
    write_record(config.read("cache_dir"), "collective-matmul", key, {"decision": d.as_dict()})


def _time_all(todo: list, how: dict, tail: Pipeline, agree) -> dict:
    """{key: TimedDecision} for every (key, candidate, manual op) of `todo`, timed now: every
    program compiled first, then the runs share what is left of `BUDGET_S`."""
    if not todo:
        return {}
    t0 = time.perf_counter()
    progs = [f for _, c, mc in todo for f in programs(c, mc, how, tail)]
    mc = todo[0][2]
    if backend_spmd.device_by_id(int(mc.attrs["device_ids"][0])).platform == "cpu":
        with ThreadPoolExecutor(2) as pool:  # compiling releases the GIL
            runners = list(pool.map(_Runner, progs))
    else:
        # one at a time: XLA autotunes a GPU matmul by timing kernels on the device and keeps
        # the winner for the process (the user's program reuses it); a second compile
        # running beside it would skew that choice
        runners = [_Runner(f) for f in progs]
    out = {}
    for i, (key, _, _) in enumerate(todo):
        left = BUDGET_S - (time.perf_counter() - t0)
        budget = max(left / (len(todo) - i), MIN_BUDGET_S)
        pair = runners[2 * i : 2 * i + 2]
        plain_s, ring_s = time_pair(*pair, budget, lambda v, i=i: agree(f"calls/{i}", v))
        out[key] = TimedDecision(plain_s, ring_s, ring_s < (1.0 - MARGIN) * plain_s)
    return out


def _shared(todo: list, how: dict, tail: Pipeline) -> dict:
    """Process 0's decisions for `todo`, the same in every process of the job."""
    keys = [key for key, _, _ in todo]
    digest = hashlib.sha256(repr((keys, _generation[0])).encode()).hexdigest()[:16]
    name = "purejit/collective-matmul/" + digest
    if distributed.process_index() == 0:

        def agree(what, value):
            distributed.kv_set(f"{name}/{what}", json.dumps(value))
            return value

        known = {key: _load(key) for key in keys}
        left = [t for t in todo if known[t[0]] is None]
        distributed.kv_set(name + "/plan", json.dumps([keys.index(t[0]) for t in left]))
        timed = _time_all(left, how, tail, agree)
        for key, d in timed.items():
            _store(key, d)
        got = {**{k: d for k, d in known.items() if d is not None}, **timed}
        distributed.kv_set(name, json.dumps([got[key].as_dict() for key in keys]))
        return got
    plan = json.loads(distributed.kv_get(name + "/plan"))
    # take part in process 0's timing: same programs, same calls; its decisions are used
    _time_all(
        [todo[k] for k in plan], how, tail, lambda what, _: json.loads(
            distributed.kv_get(f"{name}/{what}")
        )
    )  # fmt: skip
    shared = json.loads(distributed.kv_get(name))
    return {key: TimedDecision(**{**d, "source": "shared"}) for key, d in zip(keys, shared)}


def _decisions(fn: Function, how: dict, tail: Pipeline) -> dict:
    """{signature: TimedDecision} for every candidate of `fn`'s shard_map bodies that can take
    the form `how` names (`apply`'s keywords)."""
    todo, sigs = [], {}
    for mc, c in shard_map_candidates(fn):
        if refusal(c, how["form"]) is not None:
            continue
        sig = signature(c, len(mc.attrs["device_ids"]), **how)
        dev = backend_spmd.device_by_id(int(mc.attrs["device_ids"][0]))
        key = (str(dev.device_kind), len(mc.attrs["device_ids"]), sig)
        if sig not in sigs:
            sigs[sig] = key
            todo.append((key, c, mc))
    with _lock:
        missing = [t for t in todo if t[0] not in _memory]
        if missing:
            if distributed.is_initialized() and distributed.process_count() > 1:
                got = _shared(missing, how, tail)
            else:
                got = {key: _load(key) for key, _, _ in missing}
                left = [t for t in missing if got[t[0]] is None]
                timed = _time_all(left, how, tail, lambda what, v: v)
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
        got = {}
        for how in p.timed_rewrites():  # each form against the plain program
            got.update(_decisions(seen, how, _part(pipeline, after)))
        passes[i] = p.timed(got)
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
