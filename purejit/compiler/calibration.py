"""What the collective-matmul pass's `auto` mode decides with, found on the devices.

`calibrate` runs before the passes of a compile. A collective-matmul pass in `auto` mode
with `decide="timed"` (the default) gets timed decisions: each candidate's plain and ring
programs timed on the program's devices (`purejit.compiler.candidate_timing`). One with
`decide="model"` gets the cost model's inputs instead, measured once per (device kind,
device count) on the program's devices: link bandwidth, the plain collective's rate, matmul
rate, overlap and the fixed costs of a ring step and of the plain program
(`purejit.backend.calibration.measure`, 1-2 s on 8 CPU devices of a 2-core machine); the
result is kept in memory and, when `cache_dir` is set, in `cache_dir/calibration-*.json`,
so a later process loads it instead of measuring.

Several processes must take the same decision, or their programs' collectives do not match
and hang. With `purejit.distributed` initialized, process 0 decides: it loads its persisted
calibration (or decisions) or, when there is none, tells every process to measure with it
(the programs span every process); then it publishes its figures in the distributed
key-value store and every process uses those. Without a distributed runtime, the in-memory
or persisted figures are used as they are.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import replace

from purejit.backend import calibration as _measure
from purejit.backend import distributed, pjrt, spmd
from purejit.compiler import candidate_timing
from purejit.compiler.cache_files import read_record, write_record
from purejit.config import config
from purejit.passes.collective_matmul import Calibration

_memory: dict[tuple[str, int], Calibration] = {}
_lock = threading.Lock()
_generation = [0]  # bumped by `forget`, so a new decision gets fresh key-value names
# the measuring function; tests replace it to give each process different figures
measure = _measure.measure


def _load(key) -> Calibration | None:
    rec = read_record(config.read("cache_dir"), "calibration", key)
    if rec is None or "plain_latency_s" not in rec.get("calibration", {}):
        # none, or figures from before the model measured it all (without `plain_latency_s`,
        # `step_latency_s` was a bare transfer's cost, not a ring step's)
        return None
    return Calibration(**rec["calibration"])


def _store(key, cal: Calibration) -> None:
    write_record(config.read("cache_dir"), "calibration", key, {"calibration": cal.as_dict()})


def _measured(devices) -> Calibration:
    m = measure(devices)
    return Calibration(
        m["link_bytes_per_s"],
        m["flops_per_s"],
        m["step_latency_s"],
        "measured",
        m["overlap"],
        m["collective_bytes_per_s"],
        m["plain_latency_s"],
    )


def _shared(key, devices) -> Calibration:
    """Process 0's calibration, the same in every process of the job."""
    digest = hashlib.sha256(repr((key, _generation[0])).encode()).hexdigest()[:16]
    name = "purejit/calibration/" + digest
    if distributed.process_index() == 0:
        cal = _load(key)
        distributed.kv_set(name + "/plan", "measure" if cal is None else "loaded")
        if cal is None:
            cal = _measured(devices)
            _store(key, cal)
        distributed.kv_set(name, json.dumps(cal.as_dict()))
        return cal
    if distributed.kv_get(name + "/plan") == "measure":
        measure(devices)  # take part in the ring; process 0's figures are the ones used
    return replace(Calibration(**json.loads(distributed.kv_get(name))), source="shared")


def calibration(devices=None) -> tuple[Calibration, float]:
    """The calibration for `devices` (default every device) and the seconds it took now."""
    devices = list(devices or pjrt.devices())
    key = _measure.device_key(devices)
    t0 = time.perf_counter()
    with _lock:
        cal = _memory.get(key)
        if cal is None:
            if distributed.is_initialized() and distributed.process_count() > 1:
                cal = _shared(key, devices)
            else:
                cal = _load(key)
                if cal is None:
                    cal = _measured(devices)
                    _store(key, cal)
            _memory[key] = cal
    return cal, time.perf_counter() - t0


def program_devices(fn) -> list:
    """The devices of `fn`'s shard_map bodies (the only places collective matmuls occur),
    in device-id order; empty when it has none."""
    ids = set()
    for op in fn.walk():
        if op.name == "manual_computation":
            ids.update(int(i) for i in op.attrs["device_ids"])
    return [spmd.device_by_id(i) for i in sorted(ids)]


def calibrate(pipeline, timings: dict, fn):
    """`pipeline` with every pass that asks for a calibration given the one of the devices
    `fn` runs on, and every one that asks for timed decisions given them
    (`candidate_timing.decide`); the seconds spent go to `timings["calibration"]` (about 0
    when the figures were known). A program without shard_map bodies has nothing to decide:
    left as is."""
    pipeline = candidate_timing.decide(pipeline, timings, fn)
    passes = list(pipeline.passes)
    if not any(getattr(p, "needs_calibration", False) for p in passes):
        return pipeline
    devices = program_devices(fn)
    if len(devices) < 2:
        return pipeline
    cal, seconds = calibration(devices)
    timings["calibration"] = timings.get("calibration", 0.0) + seconds
    new = [p.calibrated(cal) if getattr(p, "needs_calibration", False) else p for p in passes]
    return replace(pipeline, passes=new)


def forget() -> None:
    """Drop the in-memory calibrations and timed decisions (tests; with several processes,
    every process must call it at the same point)."""
    candidate_timing.forget()
    with _lock:
        _memory.clear()
        _generation[0] += 1
