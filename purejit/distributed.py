"""Several processes (hosts), one SPMD program: `purejit.distributed.initialize`.

Each process runs the same Python program. After `initialize`, `purejit.devices()` lists the
devices of every process (`local_devices()` only this process's); a `Mesh` over all of them
compiles one program for all, and each process feeds and reads the shards on its own
devices:

    # process k of 2, on every host:
    purejit.distributed.initialize("host0:1234", num_processes=2, process_id=k)
    mesh = Mesh(np.array(purejit.devices()), ("i",))
    xs = purejit.device_put(x, NamedSharding(mesh, P("i")))   # x: the same global array
    ys = purejit.jit(purejit.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(xs)
    mine = [np.asarray(s.data) for s in ys.buffer.addressable_shards]

`device_put` of a host array places only the local shards, so every process must pass the
same global value. Results are global arrays of which each process holds its shards
(`addressable_shards`); a replicated result (out_specs `P()`) reads back whole everywhere.
On CPU, cross-process collectives use gloo over TCP; on GPUs, NCCL.
"""

from __future__ import annotations

from typing import Sequence

from purejit.backend import distributed as _backend


def initialize(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids: Sequence[int] | None = None,
    *,
    initialization_timeout: int = 300,
) -> None:
    """Start (process 0) or join (the others) the distributed runtime.

    Args:
        coordinator_address: `host:port` of process 0's coordinator service.
        num_processes: how many processes take part.
        process_id: this process's index, 0 to num_processes - 1.
        local_device_ids: which local devices this process uses (default: all).
        initialization_timeout: seconds to wait for every process to join.
    Must be called before any device is used. On clusters that JAX can detect (Slurm, Open
    MPI, TPU pods), the arguments may be left out.
    """
    _backend.initialize(
        coordinator_address,
        num_processes,
        process_id,
        local_device_ids,
        initialization_timeout=initialization_timeout,
    )


def shutdown() -> None:
    """Leave the distributed runtime."""
    _backend.shutdown()


def is_initialized() -> bool:
    return _backend.is_initialized()


def process_index() -> int:
    """This process's index (0 without a distributed runtime)."""
    return _backend.process_index()


def process_count() -> int:
    """How many processes take part (1 without a distributed runtime)."""
    return _backend.process_count()


def local_devices() -> list:
    """The devices this process drives."""
    return _backend.local_devices()
