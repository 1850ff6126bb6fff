"""The persistent compile cache: serialised XLA executables on disk, shared between processes.

Turn it on with `purejit.config.update("cache_dir", path)` (default: the environment variable
`PUREJIT_CACHE_DIR`). A compile request is keyed on the SHA-256 of

    the emitted StableHLO module (text or portable bytecode) + the serialised XLA compile
    options + jax/jaxlib versions + platform, device kind and platform version

so a second process running the same program loads the executable instead of compiling it.
This module holds that executable cache (`cache_key`, `compile`, `compile_eager`) and is the
cache's one import path: it re-exports the pass cache (`run_pipeline`, in
`purejit.compiler.pass_cache`: the optimised IR of the same program, so a warm process skips
the passes too and only traces, emits and loads) and the files both caches share
(`purejit.compiler.cache_files`: the entry format, atomic writes, eviction to
`cache_max_bytes`, default 1 GiB, `PUREJIT_CACHE_MAX_BYTES`).

An entry that is damaged, written for another key, or that the runtime refuses to load, is
ignored (logged) and rewritten after compiling, never a crash. Loading an executable runs
native code from the file, so a cache folder or entry that someone else can write is refused
with one `CacheSecurityWarning` naming the path and the fix, and the program compiles without
the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence

from purejit.backend import pjrt
from purejit.compiler.cache_files import (
    _EXE,
    _FORMAT,
    _SUFFIX,
    CacheCounters,
    CacheSecurityWarning,
    _read,
    _touch,
    counters,
    encode_entry,
    evict,
    flush,
    folder_is_private,
    logger,
    parse_entry,
    release_writes,
    write_behind,
    write_entry,
)
from purejit.compiler.cache_files import write_behind as cache_write_behind
from purejit.compiler.pass_cache import (
    LazyRecords,
    decode_ir_entry,
    encode_ir_entry,
    key_text,
    run_pipeline,
)
from purejit.config import config
from purejit.ir import TensorType

__all__ = [
    "CacheCounters",
    "CacheSecurityWarning",
    "LazyRecords",
    "cache_key",
    "compile",
    "compile_eager",
    "counters",
    "decode_ir_entry",
    "encode_entry",
    "encode_ir_entry",
    "evict",
    "flush",
    "folder_is_private",
    "key_text",
    "parse_entry",
    "release_writes",
    "run_pipeline",
    "write_behind",
    "write_entry",
]


def cache_key(module: str | bytes, *, disable_xla_passes: Sequence[str] = (), device=None) -> str:
    """The hex SHA-256 that names the cache entry of `module` compiled for `device`."""

    h = hashlib.sha256()
    h.update(b"purejit-compile-cache/%d\0" % _FORMAT)
    h.update(module.encode() if isinstance(module, str) else b"bytecode\0" + bytes(module))
    h.update(b"\0options\0" + pjrt.compile_options_bytes(disable_xla_passes=disable_xla_passes))
    env = pjrt.cache_environment(device)
    h.update(b"\0env\0" + json.dumps(env, sort_keys=True).encode())
    return h.hexdigest()


def compile(
    module: str | bytes,
    param_types: list[TensorType],
    result_types: list[TensorType],
    *,
    device=None,
    disable_xla_passes: Sequence[str] = (),
    cache_dir: str | None = None,
    host_callbacks: Sequence = (),
    min_compile_time_s: float = 0.0,
    write_behind: bool = False,
):
    """Compile `module`, or load it from the persistent cache when `cache_dir` is set.

    Args:
        module: StableHLO as MLIR text, or portable artifact bytes.
        param_types, result_types: the program's signature (checked at every execute).
        device: the device to compile for (default: the default device).
        disable_xla_passes: XLA passes to switch off (part of the key).
        cache_dir: the cache folder; default `purejit.config.read("cache_dir")`; None or ""
            compiles without caching.
        host_callbacks: the Python functions of the module's callbacks, by index; given to
            the compiled or loaded executable (they are not part of the key or the entry).
        min_compile_time_s: a compile faster than this is not written to the cache (JAX's
            `persistent_cache_min_compile_time_secs`: reading costs a file, and writing a
            program that compiles in milliseconds saves nothing).
        write_behind: serialise and write the executable in a thread of its own
            (`cache_files.write_behind`), when the next compile in this process starts,
            after 2 s, or at exit, whichever comes first: XLA's serialiser holds the GIL
            (25 ms for a rolled 48-layer forward's executable), so the first call does not
            wait for it. Readers of the entry in this process wait for the write.
    Returns:
        `(executable, hit)`: a `pjrt.Executable` and whether it came from the cache.
    """

    cache_dir = config.read("cache_dir") if cache_dir is None else cache_dir
    release_writes()  # the pass cache's entry is encoded while XLA compiles
    kw = {"device": device, "disable_xla_passes": disable_xla_passes}
    if host_callbacks:
        kw["host_callbacks"] = host_callbacks
    if not cache_dir or not folder_is_private(os.fspath(cache_dir)):
        return pjrt.compile(module, param_types, result_types, **kw), False
    key = cache_key(module, disable_xla_passes=disable_xla_passes, device=device)
    path = os.path.join(os.fspath(cache_dir), key + _SUFFIX)
    blob = _read(path, key, _EXE)
    if blob is not None:
        try:
            exe = pjrt.deserialize_executable(blob, param_types, result_types, **kw)
        except Exception as e:  # noqa: BLE001 - the runtime refused a foreign or damaged entry
            counters.bad_files += 1
            logger.warning("purejit cache: ignoring %s, it does not load (%s)", path, e)
        else:
            counters.hits += 1
            _touch(path)
            return exe, True
    counters.misses += 1
    start = time.perf_counter()
    exe = pjrt.compile(module, param_types, result_types, **kw)
    if time.perf_counter() - start < min_compile_time_s:
        return exe, False
    folder = os.fspath(cache_dir)

    def store():
        try:
            payload = pjrt.serialize_executable(exe, device)
        except Exception as e:  # noqa: BLE001 - a runtime that cannot serialise: don't cache
            logger.warning("purejit cache: this executable cannot be serialised (%s)", e)
            return
        write_entry(folder, key, payload)
        evict(folder, int(config.read("cache_max_bytes")), keep=key + _SUFFIX)

    if write_behind:
        cache_write_behind(path, store, "the compiled executable")
        return exe, False
    try:
        store()
    except OSError as e:  # a read-only or full disk must not fail the compile
        logger.warning("purejit cache: could not write to %s (%s)", cache_dir, e)
    return exe, False


def compile_eager(module, param_types, result_types, *, host_callbacks=(), device=None):
    """How an eager primitive compiles (`EvalTrace.compile_program`): through the persistent
    cache, written only for compiles slower than `persistent_cache_min_compile_time_secs`;
    for `device` (None: the default device)."""
    exe, _ = compile(
        module,
        param_types,
        result_types,
        device=device,
        host_callbacks=host_callbacks,
        min_compile_time_s=float(config.read("persistent_cache_min_compile_time_secs")),
    )
    return exe
