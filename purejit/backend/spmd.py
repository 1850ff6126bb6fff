"""Multi-device runtime: sharded buffers, SPMD compilation and `execute_sharded`.

A global array split over devices is one `jax.Array` made from its per-device buffers
(`make_array_from_single_device_arrays`); purejit computes every shard's slice itself
(`purejit.sharding.NamedSharding.devices_indices_map`), jax only moves the bytes.

An SPMD program is compiled once for all devices of its mesh with `num_partitions = N`,
`use_spmd_partitioning` and Shardy, and a device assignment in partition-id order. Before
every `execute_sharded` the shard of each argument on each device is checked (shape and
dtype) against what the executable expects: jaxlib crashes on wrong shard shapes.
"""

from __future__ import annotations

import collections
import functools
from typing import Sequence

import numpy as np

from purejit.backend import callback_errors, pjrt
from purejit.ir import TensorType


class ShardingMismatchError(ValueError):
    """A sharded argument does not fit the compiled program's parameter sharding."""


@functools.lru_cache(maxsize=None)
def _jax():
    # jax loads on the first device call, so `import purejit` stays fast
    import jax

    return jax


def _is_local(dev) -> bool:
    return dev.process_index == _jax().process_index()


@functools.lru_cache(maxsize=256)
def jax_sharding(ns):
    """The jax.sharding.NamedSharding with the same mesh, axis names and spec as `ns`."""
    jsh = _jax().sharding
    mesh = jsh.Mesh(ns.mesh.devices, ns.mesh.axis_names)
    return jsh.NamedSharding(mesh, jsh.PartitionSpec(*ns.spec))


def sharding_parts(buf) -> tuple[np.ndarray, tuple[str, ...], tuple] | None:
    """How a jax.Array is split over several devices, as plain data, or None.

    Returns:
        (the mesh's devices array, its axis names, the partition spec as a tuple with one
        entry per dimension: None, an axis name or a tuple of names), from which
        `purejit.sharding` builds its `NamedSharding`; None for an array on one device or
        with a sharding other than a NamedSharding.
    """
    jsh = getattr(buf, "sharding", None)
    if jsh is None or len(jsh.device_set) <= 1:
        return None
    if isinstance(jsh, _jax().sharding.NamedSharding):
        spec = tuple(tuple(p) if isinstance(p, (list, tuple)) else p for p in jsh.spec)
        return jsh.mesh.devices, tuple(jsh.mesh.axis_names), spec
    return None


def put_sharded(host: np.ndarray, ns):
    """Split the global host array over `ns`'s devices; returns a global jax.Array."""
    jax = _jax()
    host = np.asarray(host)
    ns.shard_shape(host.shape)  # raises on shapes that do not divide
    shards = [
        jax.device_put(np.array(host[idx], order="C"), dev)  # ascontiguousarray makes 0-d 1-d
        for dev, idx in ns.devices_indices_map(host.shape).items()
        if _is_local(dev)
    ]
    return jax.make_array_from_single_device_arrays(host.shape, jax_sharding(ns), shards)


def assemble(shape: Sequence[int], ns, bufs: Sequence):
    """One global jax.Array of `shape` laid out as `ns` from this process's per-device
    buffers (one per addressable device of `ns`), without copying them."""
    return _jax().make_array_from_single_device_arrays(tuple(shape), jax_sharding(ns), list(bufs))


def is_local(dev) -> bool:
    """Whether this process drives device `dev`."""
    return _is_local(dev)


def _norm_index(idx, shape):
    return tuple(s.indices(n)[:2] for s, n in zip(idx, shape))


@functools.lru_cache(maxsize=1024)
def _same_layout(jsh, ns, shape) -> bool:
    have = jsh.devices_indices_map(shape)
    want = ns.devices_indices_map(shape)
    if {d.id for d in have} != {d.id for d in want}:
        return False
    want_ids = {d.id: _norm_index(i, shape) for d, i in want.items()}
    return all(_norm_index(i, shape) == want_ids[d.id] for d, i in have.items())


def place(buf, ns, t: TensorType):
    """`buf` laid out as `ns` says: as is when it already is, else resharded through host."""
    jax = _jax()
    if isinstance(buf, jax.Array) and _same_layout(buf.sharding, ns, t.shape):
        return buf
    if isinstance(buf, jax.Array) and not buf.is_fully_addressable:
        raise ShardingMismatchError(
            f"argument {t} is sharded as {buf.sharding} across processes, but the program "
            f"expects {ns!r}; reshard it (purejit.device_put) before the call"
        )
    return put_sharded(np.asarray(buf), ns)


# ---- OpSharding (what the compiled program expects) ---------------------------------------


def op_sharding_tiles(op, rank: int) -> dict[int, tuple[int, ...]]:
    """For each partition id, the tile coordinates (one per dimension) an OpSharding gives it.

    A replicated value gives an empty map (every partition holds tile (0, ..., 0))."""
    kind = str(op.type).rsplit(".", 1)[-1]
    if kind == "REPLICATED":
        return {}
    if kind != "OTHER":
        raise NotImplementedError(f"compiled sharding of type {kind} is not supported")
    dims = [int(d) for d in op.tile_assignment_dimensions]
    if len(op.tile_assignment_devices):
        devs = np.array(list(op.tile_assignment_devices)).reshape(dims)
    else:
        shape = [int(d) for d in op.iota_reshape_dims]
        devs = np.arange(int(np.prod(shape))).reshape(shape)
        devs = devs.transpose([int(p) for p in op.iota_transpose_perm]).reshape(dims)
    return {int(devs[idx]): tuple(idx[:rank]) for idx in np.ndindex(*dims)}


def _check_program(exe, kind: str, shardings, types, getter):
    """Check XLA's compiled parameter/result shardings place every shard where purejit will."""
    try:
        ops = getter()
    except Exception:  # noqa: BLE001 - some jaxlib builds cannot report them
        return
    if ops is None:  # a program of one device reports none (a mesh of one device)
        return
    if len(ops) != len(types):
        raise ShardingMismatchError(
            f"compiled program has {len(ops)} {kind} shardings, purejit expects {len(types)}"
        )
    for i, (op, ns, t) in enumerate(zip(ops, shardings, types)):
        tiles = op_sharding_tiles(op, t.rank)
        want = ns.shard_shape(t.shape)
        counts = tuple(max((x[d] for x in tiles.values()), default=0) + 1 for d in range(t.rank))
        if tuple(-(-n // k) for n, k in zip(t.shape, counts)) != want:
            raise ShardingMismatchError(
                f"{kind} {i} ({t}): XLA compiled {list(counts)} tiles per dimension, purejit's "
                f"sharding {ns.spec!r} gives per-device shape {list(want)}"
            )
        for p, (dev, idx) in enumerate(ns.devices_indices_map(t.shape).items()):
            start = tuple(sl.indices(n)[0] for sl, n in zip(idx, t.shape))
            tile = tiles.get(p, (0,) * t.rank)
            got = tuple(k * w for k, w in zip(tile, want))
            if got != start:
                raise ShardingMismatchError(
                    f"{kind} {i} ({t}): XLA compiled partition {p} to hold the shard at "
                    f"{list(got)}, purejit's sharding {ns.spec!r} puts {list(start)} there"
                )


def _pooled(sharding, pool: list):
    """The object of `pool` equal to `sharding` (added when there is none)."""
    for s in pool:
        if s == sharding:
            return s
    pool.append(sharding)
    return sharding


# ---- pacing on the CPU backend --------------------------------------------------------------
# jaxlib's CPU client runs each device's share of an SPMD program on one thread pool of
# max(#cores, #devices) threads, and the task that enqueues a device's share blocks on a
# per-device semaphore (32 computations in flight) once too many calls are pending. With
# enough unsynchronised calls queued, every pool thread ends up waiting on a semaphore while
# the shares that would release it, and the peers a collective's rendezvous waits for, have
# no thread left: the rendezvous aborts the process after 40 s. Keeping at most
# CPU_MAX_IN_FLIGHT SPMD calls pending (waiting on the oldest before the next launch) keeps
# the semaphores from ever filling.

CPU_MAX_IN_FLIGHT = 4
_in_flight: collections.deque = collections.deque()


def _pace(platform: str):
    if platform != "cpu":
        return
    while len(_in_flight) >= CPU_MAX_IN_FLIGHT:
        for a in _in_flight.popleft():
            if not a.is_deleted():  # a donated output: the call it went to is tracked too
                a.block_until_ready()


def _launched_on_cpu(out) -> None:
    """A call that jaxlib's C++ dispatch ran on CPU devices (`out`: one of its outputs):
    tracked and paced as `_execute` does its own."""
    _in_flight.append([out])
    _pace("cpu")


# ---- compile and execute ------------------------------------------------------------------


def compile_options(devices: Sequence, *, disable_passes: Sequence[str] = ()):
    """CompileOptions for one SPMD program over `devices` (in partition-id order)."""
    from jaxlib import xla_client

    opts = xla_client.CompileOptions()
    opts.num_replicas = 1
    opts.num_partitions = len(devices)
    build = opts.executable_build_options
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True
    build.allow_spmd_sharding_propagation_to_parameters = [False]
    build.allow_spmd_sharding_propagation_to_output = [False]
    opts.device_assignment = xla_client.DeviceAssignment.create(
        np.array([[d.id for d in devices]], dtype=np.int64)
    )
    overrides = pjrt.xla_option_overrides()  # `PUREJIT_XLA_OPTIONS`, as for one device
    if overrides:
        opts.env_option_overrides = list(overrides)
    if disable_passes:
        build.debug_options.xla_disable_hlo_passes = ",".join(disable_passes)
    return opts


class SpmdExecutable:
    """A program compiled for every device of a mesh; `execute` takes global arrays."""

    def __init__(self, exe, devices, param_types, result_types, in_shardings, out_shardings):
        self._exe = exe
        self.devices = list(devices)
        self.param_types = list(param_types)
        self.result_types = list(result_types)
        self.in_shardings = list(in_shardings)
        self.out_shardings = list(out_shardings)
        self._local = [d for d in self.devices if _is_local(d)]
        # one jax sharding object per distinct sharding: an output fed back as an argument
        # (a training step's state) then matches its parameter by identity, no comparison
        pool: list = []
        self._jax_in = [_pooled(jax_sharding(ns), pool) for ns in self.in_shardings]
        self._jax_out = [_pooled(jax_sharding(ns), pool) for ns in self.out_shardings]
        # jaxlib wraps the shards into global arrays in C++: making 300 outputs one by one
        # with `make_array_from_single_device_arrays` cost a data-parallel training step on
        # 2 GPUs milliseconds of host time a call
        self._handlers = pjrt.array_result_handlers(self.result_types, self._jax_out)
        self._shard_types = [
            TensorType(ns.shard_shape(t.shape), t.dtype)
            for ns, t in zip(self.in_shardings, self.param_types)
        ]
        _check_program(
            exe, "parameter", self.in_shardings, self.param_types, exe.get_parameter_shardings
        )
        _check_program(
            exe, "result", self.out_shardings, self.result_types, exe.get_output_shardings
        )

    @property
    def jax_in_shardings(self) -> list:
        """The jax sharding of each parameter (outputs fed back share these objects)."""
        return self._jax_in

    @property
    def jax_out_shardings(self) -> list:
        return self._jax_out

    @property
    def cpu_launch_hook(self):
        """What jaxlib's C++ dispatch calls with an output of each call it runs of this
        program, to pace calls on the CPU backend as `execute` does; None elsewhere."""
        return _launched_on_cpu if self.devices[0].platform == "cpu" else None

    def _validate(self, i: int, b, same: bool) -> None:
        """Check argument `i`; `same`: its sharding is the parameter's (shapes follow)."""
        t, st = self.param_types[i], self._shard_types[i]
        if tuple(b.shape) != t.shape or np.dtype(b.dtype) != t.dtype:
            raise ShardingMismatchError(
                f"argument {i}: array {b.dtype}{list(b.shape)} where {t} is expected"
            )
        if same or b.sharding == self._jax_in[i]:
            return  # jax made it from shards of exactly this layout
        shards = b.addressable_shards
        if {s.device.id for s in shards} != {d.id for d in self._local}:
            raise ShardingMismatchError(
                f"argument {i}: shards live on devices {sorted(s.device.id for s in shards)}"
                f", the program runs on {sorted(d.id for d in self._local)}"
            )
        for s in shards:
            if tuple(s.data.shape) != st.shape or np.dtype(s.data.dtype) != st.dtype:
                raise ShardingMismatchError(
                    f"argument {i} ({t}): shard on device {s.device.id} is "
                    f"{s.data.dtype}{list(s.data.shape)}, the program expects {st}"
                )

    def execute(self, buffers: Sequence) -> list:
        """Run on global arrays (resharded as needed); returns global jax.Arrays."""
        return self._execute(buffers, checked=False)

    def execute_unchecked(self, buffers: Sequence) -> list:
        """`execute` for callers that checked every argument's global shape and dtype against
        the parameters (purejit's dispatch, from the Arrays' avals): an argument whose
        sharding is the parameter's own object (an output of this program fed back, or an
        argument placed for it) is taken as is, with no per-argument work in Python. Shard
        shapes still follow: equal global shape and identical sharding give them."""
        return self._execute(buffers, checked=True)

    def _execute(self, buffers: Sequence, checked: bool) -> list:
        if len(buffers) != len(self.param_types):
            raise ShardingMismatchError(
                f"program takes {len(self.param_types)} arrays, got {len(buffers)}"
            )
        bufs = list(buffers)
        for i, js in enumerate(self._jax_in):
            sh = getattr(bufs[i], "sharding", None)
            if checked and sh is js:
                continue
            same = sh is js or sh == js
            if not same:
                bufs[i] = place(bufs[i], self.in_shardings[i], self.param_types[i])
            self._validate(i, bufs[i], same)
        _pace(self.devices[0].platform)
        try:
            results = self._exe.execute_sharded(bufs)
            if self._handlers:
                outs = results.consume_with_handlers(self._handlers)
            else:
                outs = self._assemble(results.disassemble_into_single_device_arrays())
        except Exception as e:  # a host callback's exception comes back as itself
            callback_errors.reraise(e)
            raise
        if self.devices[0].platform == "cpu":
            _in_flight.append(outs[:1])
        return outs

    def _assemble(self, per_device) -> list:
        jax = _jax()
        return [
            jax.make_array_from_single_device_arrays(t.shape, js, list(arrs))
            for arrs, js, t in zip(per_device, self._jax_out, self.result_types)
        ]

    def hlo_text(self) -> str:
        return self._exe.hlo_modules()[0].to_string()

    def cost_analysis(self) -> dict:
        return dict(self._exe.cost_analysis())

    def memory_analysis(self):
        return self._exe.get_compiled_memory_stats()


def compile(
    module_text: str,
    devices: Sequence,
    param_types: list[TensorType],
    result_types: list[TensorType],
    in_shardings: Sequence,
    out_shardings: Sequence,
    *,
    disable_xla_passes: Sequence[str] = (),
) -> SpmdExecutable:
    """Compile an SPMD StableHLO module for `devices` (partition-id order)."""
    from jaxlib import xla_client

    client = devices[0].client
    exe = pjrt.compile_step["fn"](
        client,
        module_text,
        xla_client.DeviceList(tuple(d for d in devices)),
        compile_options(devices, disable_passes=disable_xla_passes),
    )
    return SpmdExecutable(exe, devices, param_types, result_types, in_shardings, out_shardings)


def device_by_id(device_id: int):
    """The device (of any process) with this global id."""
    for d in _jax().devices():
        if d.id == device_id:
            return d
    raise ValueError(
        f"no device with id {device_id}; devices are {[d.id for d in _jax().devices()]}"
    )
