"""Devices and processes under JAX's top-level names (`jax.default_backend`,
`jax.device_count`, `jax.local_devices`, `jax.process_index`, `jax.Device`, ...), and the
naming helpers `named_scope` / `named_call`.

    purejit.default_backend()      # "cpu", "gpu" or "tpu"
    purejit.device_count()         # devices of all processes
"""

from __future__ import annotations

import contextlib
import functools

from purejit import distributed
from purejit.backend import pjrt


def default_backend() -> str:
    """The platform of the default device: "cpu", "gpu" or "tpu" (as JAX names them)."""
    name = pjrt.platform()
    return "gpu" if name in ("cuda", "rocm") else name


def devices(backend: str | None = None) -> list:
    """Every device of `backend` (default: the default backend), all processes."""
    return pjrt.devices(backend)


def device_count(backend: str | None = None) -> int:
    """How many devices `backend` has, over all processes."""
    return len(pjrt.devices(backend))


def local_devices(process_index: int | None = None, backend: str | None = None) -> list:
    """The devices driven by process `process_index` (default: this process)."""
    if process_index is None:
        process_index = distributed.process_index()
    return [d for d in pjrt.devices(backend) if d.process_index == process_index]


def local_device_count(backend: str | None = None) -> int:
    return len(local_devices(backend=backend))


def process_index(backend: str | None = None) -> int:
    """This process's index (0 without a distributed runtime)."""
    return distributed.process_index()


def process_count(backend: str | None = None) -> int:
    return distributed.process_count()


def _device_class() -> type:
    return type(pjrt.default_device())


class _DeviceMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _device_class())


class Device(metaclass=_DeviceMeta):
    """The class of PJRT devices (`purejit.devices()` elements), for `isinstance`."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("devices come from purejit.devices() / local_devices()")


@contextlib.contextmanager
def named_scope(name: str):
    """A name for the ops made in this block. JAX writes it into op metadata for profilers;
    purejit's IR carries no op names, so the program (and every result) is unchanged."""
    if not isinstance(name, str):
        raise TypeError(f"named_scope takes a str name, got {type(name).__name__}")
    yield


@contextlib.contextmanager
def ensure_compile_time_eval():
    """Within this block, ops whose operands are all concrete run now, even inside jit or a
    transformation (their results are concrete arrays `int()` / `if` can read); ops on
    tracers still go to their trace (JAX's `ensure_compile_time_eval`)."""
    from purejit.runtime import eval_trace
    from purejit.tracing.core import set_current_trace

    with set_current_trace(eval_trace):
        yield


def named_call(fun, *, name: str | None = None):
    """`fun` under a name (see `named_scope`: results are unchanged)."""
    scope = name if name is not None else getattr(fun, "__name__", "named_call")

    @functools.wraps(fun)
    def wrapper(*args, **kwargs):
        with named_scope(scope):
            return fun(*args, **kwargs)

    return wrapper


__all__ = [
    "Device",
    "default_backend",
    "device_count",
    "devices",
    "ensure_compile_time_eval",
    "local_device_count",
    "local_devices",
    "named_call",
    "named_scope",
    "process_count",
    "process_index",
]
