"""The PJRT runtime: devices, compilation, buffers and execution, through jaxlib.

PJRT's `execute` checks shapes but not dtypes (an int32 buffer passed for float32 is silently
reinterpreted), so `Executable.execute` checks both before every call.
"""

from __future__ import annotations

import functools
import os
import weakref
from typing import Sequence

import numpy as np

from purejit.backend import callback_errors, dispatch
from purejit.backend.mlir_context import context
from purejit.config import config
from purejit.ir import TensorType


class ExecuteTypeError(TypeError):
    pass


@functools.lru_cache(maxsize=None)
def _jax():
    # jax loads on the first device call, so `import purejit` stays fast
    import jax

    return jax


_x64_synced = [False]


def set_x64(flag: bool) -> None:
    """Keep jax's x64 flag (used by device_put) in step with purejit's enable_x64.

    PJRT transfers go through jax.device_put, which narrows 64-bit host data unless jax's
    own flag agrees with purejit's; `config.update("enable_x64", ...)` calls this.
    """
    _jax().config.update("jax_enable_x64", bool(flag))
    _x64_synced[0] = True


config.watch("enable_x64", set_x64)


@functools.lru_cache(maxsize=None)
def several_devices() -> bool:
    """Whether this process sees more than one device (then arguments may sit on a device
    other than the program's, and dispatch checks where they are)."""
    return len(_jax().devices()) > 1


def devices(platform: str | None = None) -> list:
    return list(_jax().devices(platform) if platform else _jax().devices())


@functools.lru_cache(maxsize=None)
def _first_device():
    return devices()[0]


@functools.lru_cache(maxsize=16)
def _first_of_platform(platform: str):
    return devices(platform)[0]


def default_device():
    """The device of uncommitted arrays and computations: the `default_device` option (a
    device or a platform name) when set, else the first device."""
    dev = config.read("default_device")
    if dev is None:
        return _first_device()
    return _first_of_platform(dev) if isinstance(dev, str) else dev


def live_buffers(platform: str | None = None) -> list:
    """Every device buffer (jax.Array) alive in the PJRT client of `platform` (default: the
    default device's)."""
    client = default_device().client if platform is None else devices(platform)[0].client
    return list(client.live_arrays())


def platform() -> str:
    return default_device().platform


def is_gpu() -> bool:
    """Whether the default device is a GPU (PJRT names them gpu, cuda or rocm)."""
    return platform() in ("gpu", "cuda", "rocm")


def to_device(value: np.ndarray, device=None):
    """Copy a host array into a PJRT buffer (a jax.Array) on `device`."""
    if value.dtype.itemsize == 8 and value.dtype.kind in "iufc" and not _x64_synced[0]:
        set_x64(config.enable_x64)
    if type(value) is np.ndarray:
        return dispatch.put(value, device or default_device(), enable_x64=config.enable_x64)
    return _jax().device_put(value, device or default_device())


def is_committed_to_one_device(buf) -> bool:
    """Whether jax.Array `buf` lives on one device and is committed to it (JAX's rule: a
    jitted computation runs where its committed arguments are)."""
    return bool(getattr(buf, "_committed", False)) and len(buf.devices()) == 1


def committed_device_of(bufs, what: str):
    """The one device other than the default that buffers of `bufs` are committed to, else
    None (all on the default device or uncommitted, or one device in the process): where an
    eager op on them runs, as JAX runs a computation where its committed arguments are.

    Raises:
        ValueError: buffers committed to two such devices, naming them and `what`.
    """
    if not several_devices():
        return None
    found = default = None
    for b in bufs:
        if not is_committed_to_one_device(b):
            continue
        (dev,) = b.devices()
        default = default_device() if default is None else default
        if dev == default or dev == found:
            continue
        if found is not None:
            raise ValueError(
                f"{what}: its operands are committed to two devices, {found} and {dev}; "
                "move them to one device first (purejit.device_put(x, device))"
            )
        found = dev
    return found


def on_device(buf, device):
    """`buf` itself when it lives on `device` alone, else a copy of it there."""
    devs = buf.devices()
    return buf if len(devs) == 1 and device in devs else _jax().device_put(buf, device)


def is_buffer(x) -> bool:
    return isinstance(x, _jax().Array)


def buffer_type(buf) -> TensorType:
    return TensorType(tuple(buf.shape), np.dtype(buf.dtype))


@functools.lru_cache(maxsize=None)
def xla_option_overrides() -> tuple[tuple[str, object], ...]:
    """XLA options set on every compile purejit makes, from `PUREJIT_XLA_OPTIONS`
    (`name=value,name=value`, or `;` between them where a value holds commas, as a list
    option's does; values `true`/`false`, integers, or text), as
    `jax.jit(...).lower(...).compile(compiler_options=...)` sets them for one program."""
    out = []
    text = os.environ.get("PUREJIT_XLA_OPTIONS", "")
    for item in text.split(";" if ";" in text else ","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip().startswith("xla_"):
            raise ValueError(
                f"PUREJIT_XLA_OPTIONS: {item.strip()!r} is not name=value with an XLA option "
                "name (xla_...); example: PUREJIT_XLA_OPTIONS=xla_gpu_autotune_level=2"
            )
        v = value.strip()
        parsed: object = v
        if v.lower() in ("true", "false"):
            parsed = v.lower() == "true"
        elif v.lstrip("-").isdigit():
            parsed = int(v)
        out.append((name.strip(), parsed))
    return tuple(out)


def _assigned(device, dev):
    """The device a one-device program is assigned to explicitly: the one asked for, or the
    default device when `default_device` moved it off the first (which XLA assumes)."""
    if device is not None or dev is _first_device():
        return device
    return dev


def compile_options(*, disable_passes: Sequence[str] = (), device=None):
    """XLA's compile options for a one-device program (on `device`, default: replica 0 on
    device 0)."""
    from jaxlib import xla_client

    opts = xla_client.CompileOptions()
    if device is not None:
        opts.executable_build_options.device_assignment = xla_client.DeviceAssignment.create(
            np.array([[device.id]])
        )
    overrides = xla_option_overrides()
    if overrides:
        opts.env_option_overrides = list(overrides)
    if disable_passes:
        build = opts.executable_build_options
        debug = build.debug_options
        debug.xla_disable_hlo_passes = ",".join(disable_passes)
    return opts


def array_result_handlers(result_types, shardings) -> list:
    """jaxlib's C++ result handlers (what jax's own dispatch uses) for committed arrays of
    these types and jax shardings: jaxlib wraps a program's outputs into jax.Arrays itself.
    [] when this jaxlib has no such API (the callers' Python paths work)."""
    try:
        from jax._src.core import ShapedArray
        from jaxlib import xla_client

        make = xla_client.array_result_handler
        avals = [ShapedArray(t.shape, t.dtype) for t in result_types]
        try:  # jaxlib 0.10 takes `_skip_checks`; jaxlib 0.11.2 (CUDA 13 build) does not
            return [make(a, s, committed=True, _skip_checks=True) for a, s in zip(avals, shardings)]
        except TypeError:
            return [make(a, s, committed=True) for a, s in zip(avals, shardings)]
    except Exception:  # an older/newer jaxlib without this API
        return []


def _result_handlers(exe, result_types) -> list:
    """The result handlers of a one-device program: wrapping outputs in C++ saves ~4 us a
    call over `execute`'s Python list handling. [] when unavailable."""
    try:
        from jax.sharding import SingleDeviceSharding

        devs = list(exe.local_devices())
        outs = exe.get_output_shardings()  # None for a program compiled without SPMD
    except Exception:  # an older/newer jaxlib without this API: the plain path works
        return []
    if len(devs) != 1 or (outs is not None and len(outs) != len(result_types)):
        return []
    sharding = SingleDeviceSharding(devs[0])
    return array_result_handlers(result_types, [sharding] * len(result_types))


# executables with host callbacks; each keeps the token of its last run for effects_barrier
_EFFECTFUL: weakref.WeakSet = weakref.WeakSet()


def wait_for_effects() -> None:
    """Block until the last run of every executable with host callbacks has finished (its
    callbacks have run); a callback's exception is raised here if it was not before."""
    for exe in list(_EFFECTFUL):
        token, exe._token = exe._token, None
        if token is not None:
            try:
                token.block_until_ready()
            except Exception as e:
                callback_errors.reraise(e)
                raise


class Executable:
    """A compiled program for one device, with its parameter and result types."""

    def __init__(self, exe, param_types: list[TensorType], result_types: list[TensorType],
                 *, effects: bool = False):  # fmt: skip
        self._exe = exe
        self.param_types = list(param_types)
        self.result_types = list(result_types)
        self._handlers = None  # jaxlib's C++ result handlers, made on first execute
        # host callbacks run as side effects: runs keep a token that effects_barrier awaits
        self.effects = effects
        self._token = None
        if effects:
            _EFFECTFUL.add(self)

    def _execute_with_token(self, buffers: list, handlers) -> list:
        res = self._exe.execute_sharded(buffers, with_tokens=True)
        self._token = res.consume_token()
        if handlers:
            return res.consume_with_handlers(handlers)
        return [a[0] for a in res.disassemble_into_single_device_arrays()]

    def execute(self, buffers: Sequence) -> list:
        """Run on device buffers, checking each one's shape and dtype first."""
        if len(buffers) != len(self.param_types):
            raise ExecuteTypeError(
                f"executable takes {len(self.param_types)} buffers, got {len(buffers)}"
            )
        for i, (b, t) in enumerate(zip(buffers, self.param_types)):
            if tuple(b.shape) != t.shape or np.dtype(b.dtype) != t.dtype:
                raise ExecuteTypeError(
                    f"argument {i}: buffer {buffer_type(b)} where {t} is expected"
                )
        try:
            if self.effects:
                return self._execute_with_token(list(buffers), None)
            return self._exe.execute(list(buffers))
        except Exception as e:  # a host callback's exception comes back as itself
            callback_errors.reraise(e)
            raise

    def execute_unchecked(self, buffers: list) -> list:
        """Run without checking: only for callers that checked types (and, in a process
        with several devices, `on_my_device`) themselves."""
        handlers = self._handlers
        if handlers is None:
            handlers = self._handlers = _result_handlers(self._exe, self.result_types)
        try:
            if self.effects:
                return self._execute_with_token(buffers, handlers)
            if handlers:
                return self._exe.execute_sharded(buffers).consume_with_handlers(handlers)
            return self._exe.execute(buffers)
        except Exception as e:  # a host callback's exception comes back as itself
            callback_errors.reraise(e)
            raise

    @functools.cached_property
    def device(self):
        """The one device this program runs on (None for a program over several)."""
        devices = list(self._exe.local_devices())
        return devices[0] if len(devices) == 1 else None

    def off_device(self, buffers: Sequence) -> bool:
        """Whether some buffer is not on this one-device program's device."""
        here = self.device
        return here is not None and any(b.devices() != {here} for b in buffers)

    def on_my_device(self, buffers: Sequence) -> list:
        """`buffers` with those on other devices copied to this program's device."""
        here = self.device
        return [b if b.devices() == {here} else _jax().device_put(b, here) for b in buffers]

    def hlo_text(self) -> str:
        return self._exe.hlo_modules()[0].to_string()

    def cost_analysis(self) -> dict:
        return dict(self._exe.cost_analysis())

    def memory_analysis(self):
        return self._exe.get_compiled_memory_stats()


def backend_compile_and_load(backend, module, executable_devices, options, host_callbacks=()):
    """Compile `module` with PJRT client `backend` for `executable_devices`: the one step
    every purejit compile goes through (JAX's `jax._src.compiler.backend_compile_and_load`).
    `compile_step` holds the function called, so a replacement (drop-in mode's
    `jax._src.compiler`, which chex.restrict_backends wraps) sees every compile."""
    if host_callbacks:
        return backend.compile_and_load(module, executable_devices, options, list(host_callbacks))
    return backend.compile_and_load(module, executable_devices, options)


# the function purejit compiles through: `backend_compile_and_load` unless replaced
compile_step = {"fn": backend_compile_and_load}


def compile(
    module_text: str | bytes,
    param_types: list[TensorType],
    result_types: list[TensorType],
    *,
    device=None,
    disable_xla_passes: Sequence[str] = (),
    host_callbacks: Sequence = (),
) -> Executable:
    """Compile a StableHLO module for one device.

    `host_callbacks` are the Python functions the module's callback custom calls name by
    index (`purejit.backend.lowering.callback.host_callbacks`)."""
    from jaxlib import xla_client

    dev = device or default_device()
    c = dev.client
    devices = xla_client.DeviceList((dev,))
    options = compile_options(disable_passes=disable_xla_passes, device=_assigned(device, dev))
    if host_callbacks:
        # jaxlib takes host callbacks only with a parsed module, not with text
        from jaxlib.mlir import ir

        with context():
            module = ir.Module.parse(module_text)
            exe = compile_step["fn"](c, module, devices, options, host_callbacks)
    else:
        exe = compile_step["fn"](c, module_text, devices, options)
    return Executable(exe, param_types, result_types, effects=bool(host_callbacks))


def versions() -> dict:
    jax = _jax()
    import jaxlib

    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__}


# ---- the persistent compile cache and export: serialised executables and StableHLO
# portable artifacts. Every jaxlib call of purejit/compiler/cache.py and purejit/export.py
# lives here. ----------------------------------------------------------------------------


def cache_environment(device=None) -> dict:
    """What a serialised executable depends on besides the program: versions and device."""
    dev = device or default_device()
    return {
        **versions(),
        "platform": dev.platform,
        "device_kind": getattr(dev, "device_kind", ""),
        "platform_version": getattr(dev.client, "platform_version", ""),
        "xla_options": [list(o) for o in xla_option_overrides()],
    }


def compile_options_bytes(*, disable_xla_passes: Sequence[str] = ()) -> bytes:
    """The serialised XLA CompileOptions that `compile` uses (part of the cache key)."""
    return compile_options(disable_passes=disable_xla_passes).SerializeAsString()


def serialize_executable(executable: Executable, device=None) -> bytes:
    """The bytes of a compiled executable (only for the same jaxlib and device kind)."""
    dev = device or default_device()
    ser = getattr(dev.client, "serialize_executable", None)
    if ser is not None:
        return ser(executable._exe)
    return executable._exe.serialize()  # jaxlib versions without the client method


def deserialize_executable(
    blob: bytes,
    param_types: list[TensorType],
    result_types: list[TensorType],
    *,
    device=None,
    disable_xla_passes: Sequence[str] = (),
    host_callbacks: Sequence = (),
) -> Executable:
    """Load an executable written by `serialize_executable`; raises on foreign or bad bytes.

    `host_callbacks` gives a program with callbacks its Python functions again (they are
    not part of the bytes). Loading runs code from `blob`: only pass bytes this machine's
    purejit wrote itself.
    """
    from jaxlib import xla_client

    dev = device or default_device()
    options = compile_options(disable_passes=disable_xla_passes, device=_assigned(device, dev))
    args = (blob, xla_client.DeviceList((dev,)), options)
    if host_callbacks:
        exe = dev.client.deserialize_executable(*args, list(host_callbacks))
    else:
        exe = dev.client.deserialize_executable(*args)
    return Executable(exe, param_types, result_types, effects=bool(host_callbacks))


def stablehlo_versions() -> dict:
    """StableHLO versions this jaxlib can write: current, minimum, and the 4 and 12 week
    compatibility windows (`get_version_from_compatibility_requirement`)."""
    from jaxlib.mlir.dialects import stablehlo

    req = stablehlo.StablehloCompatibilityRequirement
    return {
        "current": stablehlo.get_current_version(),
        "minimum": stablehlo.get_minimum_version(),
        "week_4": stablehlo.get_version_from_compatibility_requirement(req.WEEK_4),
        "week_12": stablehlo.get_version_from_compatibility_requirement(req.WEEK_12),
    }


def portable_artifact(module_text: str, target_version: str) -> bytes:
    """Serialise a StableHLO module (text) to versioned portable bytecode."""
    from jaxlib.mlir.dialects import stablehlo

    return stablehlo.serialize_portable_artifact_str(module_text, target_version)


def artifact_text(artifact: bytes) -> str:
    """The StableHLO module held by a portable artifact, as MLIR text."""
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    bytecode = stablehlo.deserialize_portable_artifact_str(artifact)
    with context():
        return str(ir.Module.parse(bytecode))
