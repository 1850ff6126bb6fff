"""The process around purejit's programs, as JAX's top-level helpers name it:

    clear_caches, make_user_context, print_environment_info, effects_barrier,
    host_count, host_id, host_ids, process_indices, memory

`clear_caches` empties every in-memory cache of compiled and traced programs (jit's, the C++
dispatch table's, the eager primitives'); the persistent compile cache on disk stays, as in
JAX. A user context (`make_user_context`) is an option that keys jit's caches: calling a
jitted function under another value traces it again. purejit's options are process-wide,
so a context's value holds in every thread for its block (JAX's are thread-local).
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import os
import platform as _platform
import sys
import types
import warnings
from importlib import metadata

import numpy as np

from purejit import distributed
from purejit.backend import cpp_jit, pjrt
from purejit.config import config
from purejit.ir import lru
from purejit.runtime import eager, eager_fn


def clear_caches() -> None:
    """Drop every compiled and traced program purejit keeps in memory: each jitted function's
    programs and fast-dispatch entries (Python and C++) and the eager primitives' executables.
    The next call traces and compiles again (reading the persistent cache, if one is set)."""
    for table in lru.caches():
        table.clear()
    cpp_jit.clear_cache()
    prims = list(eager.eval_trace.cache.values())
    eager.eval_trace.cache.clear()
    for prim in prims:
        prim.clear()
    eager_fn.clear()


_user_ids = itertools.count()


class UserContext:
    """A value that keys jit's caches (JAX's `make_user_context` result): `ctx(v)` is a
    context manager (and decorator) setting it for a block; `ctx.value` reads it."""

    def __init__(self, default_value=None):
        self._name = f"user_context_{next(_user_ids)}"
        config.add_trace_option(self._name, default_value)

    @property
    def value(self):
        return config.read(self._name)

    def get_global(self):
        return config.read(self._name)

    def set_global(self, new_value) -> None:
        hash(new_value)
        config.update(self._name, new_value)

    def __call__(self, new_value):
        hash(new_value)
        return _Setting(self._name, new_value)


class _Setting(contextlib.ContextDecorator):
    def __init__(self, name: str, value):
        self.name, self.value = name, value

    def __enter__(self):
        self.saved = config.read(self.name)
        config.update(self.name, self.value)
        return self

    def __exit__(self, *exc):
        config.update(self.name, self.saved)
        return False


def default_device(new_val=None):
    """Set the device of uncommitted arrays and computations for a `with` block (or a
    decorated function), as `jax.default_device`: a device, a platform name ("cpu",
    "gpu"), or None for the first device. Jitted functions called in the block compile
    for that device (the setting is part of their cache key)."""
    return _Setting("default_device", new_val)


def make_user_context(default_value=None) -> UserContext:
    """A new user context whose value keys jit's tracing and compile caches, as
    `jax.make_user_context`:

        ctx = purejit.make_user_context(default_value=None)
        with ctx(1):
            f(x)   # traced with the value 1
        with ctx(2):
            f(x)   # a cache miss: traced again

    Args:
        default_value: the value outside any block (hashable).
    """
    return UserContext(default_value)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def print_environment_info(return_string: bool = False) -> str | None:
    """purejit's, JAX's, jaxlib's, NumPy's and Python's versions, the devices, the process
    count, the platform and the PUREJIT_/JAX_/XLA_ environment variables (for bug reports).

    Args:
        return_string: return the text instead of printing it.
    """
    devs = pjrt.devices()
    lines = [
        f"purejit: {_version('purejit')}",
        f"jax:     {_version('jax')}",
        f"jaxlib:  {_version('jaxlib')}",
        f"numpy:   {np.__version__}",
        f"python:  {sys.version.replace(chr(10), ' ')}",
        f"device info: {devs[0].device_kind}-{len(devs)}, "
        f"{len(distributed.local_devices())} local devices",
        f"process_count: {distributed.process_count()}",
        f"platform: {_platform.uname()}",
    ]
    ours = ("PUREJIT_", "JAX_", "XLA_")
    lines += [f"{k}={v}" for k, v in os.environ.items() if k.startswith(ours)]
    info = "\n".join(lines)
    if return_string:
        return info
    print(info)
    return None


def effects_barrier() -> None:
    """Wait until every program already dispatched has run its side effects (debug prints,
    callbacks): purejit waits for the last result of each executable that has host
    callbacks, as JAX waits for its runtime tokens."""
    pjrt.wait_for_effects()


def _renamed(old: str, new: str) -> None:
    warnings.warn(f"purejit.{old} is JAX's older name for {new}; use purejit.{new}",
                  UserWarning, stacklevel=3)  # fmt: skip


def host_count(backend=None) -> int:
    """The number of processes (JAX's older name for `process_count`; warns, as JAX's)."""
    _renamed("host_count", "process_count")
    return distributed.process_count()


def host_id(backend=None) -> int:
    """This process's index (JAX's older name for `process_index`; warns, as JAX's)."""
    _renamed("host_id", "process_index")
    return distributed.process_index()


def process_indices(backend=None) -> list[int]:
    """Every process's index: `[0, ..., process_count - 1]`."""
    return list(range(distributed.process_count()))


def host_ids(backend=None) -> list[int]:
    """Every process's index (JAX's older name for `process_indices`; warns, as JAX's)."""
    _renamed("host_ids", "process_indices")
    return process_indices(backend)


class MemorySpace(enum.Enum):
    """Where an array's memory lives (`jax.memory.Space`): device memory, host memory, or
    any. purejit places every array in device memory; the others are refused where asked."""

    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()


memory = types.SimpleNamespace(Space=MemorySpace)
