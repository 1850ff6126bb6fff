"""The PJRT runtime: devices, compilation, buffers and execution, through jaxlib.

PJRT's `execute` checks shapes but not dtypes (an int32 buffer passed for float32 is silently
reinterpreted), so `Executable.execute` checks both before every call.
"""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from purejit.ir import TensorType


class ExecuteTypeError(TypeError):
    pass


@functools.lru_cache(maxsize=None)
def _jax():
    import jax

    return jax


def client(platform: str | None = None):
    from jax.extend.backend import get_backend

    return get_backend(platform)


def devices(platform: str | None = None) -> list:
    return list(_jax().devices(platform) if platform else _jax().devices())


@functools.lru_cache(maxsize=None)
def default_device():
    return devices()[0]


def platform() -> str:
    return default_device().platform


def to_device(value: np.ndarray, device=None):
    """Copy a host array into a PJRT buffer (a jax.Array) on `device`."""
    return _jax().device_put(value, device or default_device())


def is_buffer(x) -> bool:
    return isinstance(x, _jax().Array)


def to_host(buf) -> np.ndarray:
    return np.asarray(buf)


def buffer_type(buf) -> TensorType:
    return TensorType(tuple(buf.shape), np.dtype(buf.dtype))


def compile_options(*, disable_passes: Sequence[str] = ()):
    from jaxlib import xla_client

    opts = xla_client.CompileOptions()
    if disable_passes:
        build = opts.executable_build_options
        debug = build.debug_options
        debug.xla_disable_hlo_passes = ",".join(disable_passes)
    return opts


class Executable:
    """A compiled program for one device, with its parameter and result types."""

    def __init__(self, exe, param_types: list[TensorType], result_types: list[TensorType]):
        self._exe = exe
        self.param_types = list(param_types)
        self.result_types = list(result_types)

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
        return self._exe.execute(list(buffers))

    def execute_unchecked(self, buffers: list) -> list:
        """Run without checking: only for callers that checked types themselves."""
        return self._exe.execute(buffers)

    def hlo_text(self) -> str:
        return self._exe.hlo_modules()[0].to_string()

    def cost_analysis(self) -> dict:
        return dict(self._exe.cost_analysis())

    def memory_analysis(self):
        return self._exe.get_compiled_memory_stats()

    def serialize(self) -> bytes:
        return self._exe.serialize()


def compile(
    module_text: str | bytes,
    param_types: list[TensorType],
    result_types: list[TensorType],
    *,
    device=None,
    disable_xla_passes: Sequence[str] = (),
) -> Executable:
    """Compile a StableHLO module for one device."""
    from jaxlib import xla_client

    dev = device or default_device()
    c = dev.client
    exe = c.compile_and_load(
        module_text,
        xla_client.DeviceList((dev,)),
        compile_options(disable_passes=disable_xla_passes),
    )
    return Executable(exe, param_types, result_types)


def versions() -> dict:
    jax = _jax()
    import jaxlib

    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__}
