"""One process of `bench.tp_train_mp`: the data-parallel and fully sharded training steps of
`bench.tp_train` on a mesh over every device of the job, from the same start, with the state
donated; writes what the parent compares and times.

    python -m bench.tp_train_mp_worker --out DIR --devices N [--address HOST:PORT
        --num-processes N --process-id K] [size options of bench.tp_train]

With `--num-processes` above 1 the process joins the job through
`purejit.distributed.initialize` (process 0 starts the coordinator) and the mesh spans the
devices of all processes; without it, the mesh is this process's first `--devices` devices
(the single-process reference). Each process writes, for each step `KIND`:

- `DIR/<KIND>_process<K>.npz`: the parameters after `--check-steps` Adam steps, as the shards
  this process holds: key `p<leaf>_<first row>`, raw bits (bfloat16 as uint16); the same
  steps run again from the same start say whether the step is reproducible in-process;
- `DIR/<KIND>_process<K>.hlo.txt` (process 0 only): the optimised HLO that XLA compiled;
- `DIR/process<K>.json`: a psum of fixed values of mixed magnitudes over the mesh (its
  rounding shows the order the collective adds in), the losses of every checked step, the
  step time (median of `--repeats` rounds of `--iters` steps, the steps interleaved),
  compile and check times, XLA's temporary and argument bytes, the leaves' global shapes,
  the device kinds;
and prints "WORKER OK <K>" last.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from bench import tp_train, tp_train_model

KINDS = ("dp", "fsdp")
PROBE_SIZE = 1024


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for this process's files")
    p.add_argument("--devices", type=int, required=True, help="mesh size (all processes)")
    p.add_argument("--address", default=None, help="coordinator host:port")
    p.add_argument("--num-processes", type=int, default=1)
    p.add_argument("--process-id", type=int, default=0)
    p.add_argument("--init-timeout", type=int, default=120, help="seconds to wait for all")
    tp_train.add_size_args(p)
    p.add_argument("--steps", default=",".join(KINDS))
    p.add_argument("--check-steps", type=int, default=10)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    return p.parse_args(argv)


def _host_bits(shard_data) -> np.ndarray:
    """A shard's values on the host, as raw bits where NumPy has no such float (bfloat16)."""
    a = np.asarray(shard_data)
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


def _shards(leaves) -> tuple[dict, int]:
    """{`p<leaf>_<first row>`: bits} of the shards this process holds, and how many local
    copies of a replicated shard differed from the first copy (0 expected)."""
    out, mismatched = {}, 0
    for k, a in enumerate(leaves):
        for s in a.buffer.addressable_shards:
            start = (s.index[0].start or 0) if s.index else 0
            key = f"p{k}_{start}"
            bits = _host_bits(s.data)
            if key in out:  # a second local copy of a replicated shard
                mismatched += int(not np.array_equal(bits, out[key]))
                continue
            out[key] = bits
    return out, mismatched


def _loss_value(loss) -> float:
    """The loss (replicated) read from this process's first shard."""
    return float(np.asarray(loss.buffer.addressable_shards[0].data))


def psum_probe_values(n: int, size: int = PROBE_SIZE) -> np.ndarray:
    """(n, size) float32 values of mixed magnitudes: summed over the n rows in another order,
    many of the sums round differently, so the probe shows the order a collective adds in."""
    rng = np.random.default_rng(1)
    scale = 10.0 ** rng.uniform(-4, 4, (n, size))
    return (rng.standard_normal((n, size)) * scale).astype(np.float32)


def _psum_probe(purejit, mesh) -> list[float]:
    """The psum over the mesh of `psum_probe_values`, device i adding row i."""
    from purejit.sharding import NamedSharding
    from purejit.sharding import PartitionSpec as P

    (axis,) = mesh.axis_names
    vals = psum_probe_values(mesh.shape[axis])
    f = purejit.jit(
        purejit.shard_map(
            lambda v: purejit.lax.psum(v, axis), mesh=mesh, in_specs=P(axis), out_specs=P()
        )
    )
    out = f(purejit.device_put(vals, NamedSharding(mesh, P(axis))))
    return np.asarray(out.buffer.addressable_shards[0].data).ravel().tolist()


def _check_run(step, placed, n: int):
    """`n` steps from the placed start (donated); the final state and every step's loss."""
    st, losses = placed[0], []
    for _ in range(n):
        st, loss = step(st, *placed[1:])
        losses.append(_loss_value(loss))
    return st, losses


def main(argv=None):
    args = _parse(argv)
    import purejit
    from purejit import distributed
    from purejit.sharding import Mesh
    from purejit.sharding import PartitionSpec as P

    pid, nproc = args.process_id, args.num_processes
    t_start = time.perf_counter()
    if nproc > 1:
        distributed.initialize(
            args.address,
            num_processes=nproc,
            process_id=pid,
            initialization_timeout=args.init_timeout,
        )
    t_init = time.perf_counter() - t_start
    devs = purejit.devices()
    if len(devs) < args.devices:
        sys.exit(f"the mesh needs {args.devices} devices, the job has {len(devs)}: {devs}")
    devs = devs[: args.devices]
    local = distributed.local_devices() if nproc > 1 else devs
    L, B, S, D, H, F = tp_train.sizes_from(args, small=False)
    dtype_name = args.dtype or "float32"
    dtype = np.dtype(purejit.numpy.bfloat16 if dtype_name == "bfloat16" else dtype_name)
    kinds = [k for k in args.steps.split(",") if k]
    meshes = {a: Mesh(np.array(devs), (a,)) for a in kinds}
    steps = tp_train_model.make_steps(purejit, meshes, H, L)
    state, x, y = tp_train_model.make_inputs(L, B, S, D, F, dtype)
    tree_map = purejit.tree_util.tree_map

    record = {
        "process_id": pid,
        "num_processes": nproc,
        "mesh_devices": len(devs),
        "local_devices": len(local),
        "platform": devs[0].platform,
        "device_kind": devs[0].device_kind,
        "init_s": t_init,
        "dtype": dtype.name,
        "steps": {},
    }
    # the order the cross-device sum adds in decides the last bits of every pmean / psum
    record["psum_probe"] = _psum_probe(purejit, meshes[kinds[0]])
    runners = {}
    for kind in kinds:
        sh = tp_train_model.shardings(purejit, meshes[kind], tp_train_model.state_specs(P, kind, L))
        placed = [tree_map(purejit.device_put, a, s) for a, s in zip((state, x, y), sh)]
        f = purejit.jit(steps[kind], donate_argnums=0)
        t0 = time.perf_counter()
        compiled = tp_train.compile_once(purejit, f, placed)
        compile_s = time.perf_counter() - t0
        mem = compiled.memory_analysis()
        if pid == 0:
            with open(os.path.join(args.out, f"{kind}_process{pid}.hlo.txt"), "w") as fh:
                fh.write(compiled.as_text())
        t0 = time.perf_counter()
        st, losses = _check_run(f, placed, args.check_steps)
        check_s = time.perf_counter() - t0
        leaves = purejit.tree_util.tree_leaves(st[0])
        bits, mismatched = _shards(leaves)
        np.savez(os.path.join(args.out, f"{kind}_process{pid}.npz"), **bits)
        # the same steps again from the same start, in this process: whether the step itself
        # is reproducible decides what equality across processes can mean
        start = tree_map(purejit.device_put, state, sh[0])
        st, again = _check_run(f, [start, *placed[1:]], args.check_steps)
        rerun = _shards(purejit.tree_util.tree_leaves(st[0]))[0]
        record["steps"][kind] = {
            "losses": losses,
            "compile_s": compile_s,
            "check_s": check_s,
            "temp_bytes": int(mem.temp_size_in_bytes),
            "argument_bytes": int(mem.argument_size_in_bytes),
            "shapes": [list(a.shape) for a in leaves],
            "local_replicas_differing": mismatched,
            "rerun_losses_equal": again == losses,
            "rerun_values_differing": sum(int((bits[k] != rerun[k]).sum()) for k in bits),
        }
        runners[kind] = tp_train.Runner(f, st, *placed[1:])
    t0 = time.perf_counter()
    for kind, (t, h) in tp_train.time_all(runners, args.iters, args.repeats).items():
        record["steps"][kind]["step_s"], record["steps"][kind]["host_s"] = t, h
    record["timing_s"] = time.perf_counter() - t0
    for kind in kinds:  # one compile per step expected: the timed calls hit the cache
        record["steps"][kind]["compiles"] = runners[kind].step.stats.compiles
    record["total_s"] = time.perf_counter() - t_start
    with open(os.path.join(args.out, f"process{pid}.json"), "w") as fh:
        json.dump(record, fh, indent=2)
    print(f"WORKER OK {pid}", flush=True)
    if nproc > 1:
        distributed.shutdown()


if __name__ == "__main__":
    main()
