"""The persistent cache's files: the entry format, atomic writes, LRU eviction, and who may
write the cache folder.

Both caches of `purejit.compiler.cache` store their entries here, one file per key:
`<key>.pjx` (an XLA executable) or `<key>.pjir` (optimised IR, `purejit.compiler.pass_cache`).
A file is a magic line, a JSON header (format, key, kind of payload, payload length and
SHA-256) and the payload. A file that is truncated, corrupt, written by another format or for
another key is ignored (logged) and rewritten by the caller, never a crash. Writers write a
temporary file in the same folder and `os.replace` it, so concurrent writers never expose half
a file. `evict` keeps the folder under a size by deleting the least recently used entries
(file mtime, refreshed on every hit by `_touch`). `write_behind` writes an entry from a
thread of its own (the pass cache's while XLA compiles, the executable's after the first
call); `flush` waits for such writes.

Loading an executable runs native code from the file, so, as ssh does with its keys, a cache
folder is used only when it belongs to the current user and no one else can write to it (it
is created with mode 0o700), and only entries with the same property are read. Anything else
is refused with one `CacheSecurityWarning` naming the path and the fix.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass

from purejit import errors

logger = logging.getLogger("purejit")

_MAGIC = b"PUREJIT-XLA-CACHE\n"
_FORMAT = 2
_EXE = "xla-executable"
_IR = "purejit-ir-json"
_SUFFIX = ".pjx"
_IR_SUFFIX = ".pjir"
_STALE_TMP_SECONDS = 3600


@dataclass
class CacheCounters:
    """Process-wide counters of the persistent cache."""

    hits: int = 0
    misses: int = 0
    pass_hits: int = 0
    pass_misses: int = 0
    writes: int = 0
    bad_files: int = 0
    evictions: int = 0
    refused: int = 0


class CacheSecurityWarning(UserWarning):
    """The cache folder or an entry in it could be written by someone else: not used."""


counters = CacheCounters()


# --- files ----------------------------------------------------------------------------------


def _read(path: str, key: str, kind: str) -> bytes | None:
    """The payload of a valid entry for `key`, or None (missing, refused, or bad and logged).
    A write of `path` still under way in this process (`write_behind`) is waited for."""
    flush(path)
    try:
        # not through a symbolic link; the owner and mode are checked on the open file, so
        # the file cannot be swapped between the check and the read
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as e:
        logger.warning("purejit cache: cannot read %s (%s)", path, e)
        return None
    with os.fdopen(fd, "rb") as f:
        problem = _unsafe(os.fstat(fd), path, folder=False)
        if problem:
            counters.refused += 1
            _refuse(path, problem)
            return None
        data = f.read()
    payload, why = parse_entry(data, key, kind)
    if payload is None:
        counters.bad_files += 1
        logger.warning("purejit cache: ignoring %s (%s); it will be rewritten", path, why)
    return payload


def parse_entry(data: bytes, key: str, kind: str | None = None) -> tuple[bytes | None, str]:
    """Split and check one cache file: `(payload, "")` or `(None, what is wrong)`.

    `kind` ("xla-executable" or "purejit-ir-json"; None: either) is the payload expected."""
    if not data.startswith(_MAGIC):
        return None, "not a purejit cache file"
    rest = data[len(_MAGIC) :]
    nl = rest.find(b"\n")
    if nl < 0:
        return None, "truncated header"
    try:
        header = json.loads(rest[:nl])
    except ValueError:
        return None, "corrupt header"
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        return None, f"format {header.get('format') if isinstance(header, dict) else '?'}"
    if header.get("key") != key:
        return None, "written for another key"
    if header.get("kind") not in (_EXE, _IR) or kind not in (None, header["kind"]):
        return None, f"holds {header.get('kind')!r}, not {kind!r}"
    payload = rest[nl + 1 :]
    if len(payload) != header.get("length"):
        return None, f"truncated: {len(payload)} of {header.get('length')} bytes"
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        return None, "checksum mismatch"
    return payload, ""


def encode_entry(key: str, payload: bytes, kind: str = _EXE) -> bytes:
    """The bytes of one cache file holding `payload` (of `kind`) under `key`."""
    header = {
        "format": _FORMAT,
        "key": key,
        "kind": kind,
        "length": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "written": time.time(),
    }
    return _MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload


def write_entry(cache_dir: str, key: str, payload: bytes, suffix: str = _SUFFIX) -> str:
    """Atomically write the entry for `key`: a temporary file (mode 0o600), then `os.replace`.

    The suffix says what the payload is: `.pjx` an executable, `.pjir` optimised IR."""
    os.makedirs(cache_dir, mode=0o700, exist_ok=True)
    final = os.path.join(cache_dir, key + suffix)
    fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=cache_dir)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(encode_entry(key, payload, _IR if suffix == _IR_SUFFIX else _EXE))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    counters.writes += 1
    return final


# --- writes behind the caller -------------------------------------------------------------

# entry path -> (the thread writing it, the event it waits for), under `_behind_lock`
_behind: dict[str, tuple[threading.Thread, threading.Event]] = {}
_behind_lock = threading.Lock()
_GATE_SECONDS = 2.0  # the longest a write waits for a compile to start (`release_writes`)


def write_behind(path: str, job, what: str = "the cache entry") -> None:
    """Run `job()`, which makes and writes the entry at `path`, in a thread of its own, once
    an XLA compile in this process starts (`release_writes`), after `_GATE_SECONDS`, or at
    exit, whichever comes first.

    The first call of a program waits for XLA's compile, not for what only a later process
    reads. Encoding the pass cache's entry is Python (15 ms for a rolled 48-layer forward):
    it runs while XLA compiles, which releases the GIL. Serialising the executable (25 ms
    there) holds the GIL: it waits for the next compile, the clock or the exit. A reader
    of `path` in this process waits for the write (`flush`), and so does the interpreter
    at exit (the thread is not a daemon), so a later process finds the entry as before.
    `job`'s OSError is logged as a failed write, any other error too (naming `what`),
    never raised into the caller."""
    gate = threading.Event()

    def run():
        try:
            gate.wait(_GATE_SECONDS)
            job()
        except OSError as e:
            logger.warning("purejit cache: could not write %s (%s)", path, e)
        except Exception as e:  # noqa: BLE001 - a cache write must never fail a program
            logger.warning("purejit cache: %s was not written (%s)", what, e)
        finally:
            with _behind_lock:
                if _behind.get(path, (None,))[0] is threading.current_thread():
                    del _behind[path]

    flush(path)  # one writer of a path at a time: the latest entry is the one left
    thread = threading.Thread(target=run, name="purejit-cache-write")
    with _behind_lock:  # registered and started at once: `flush` joins only started threads
        _behind[path] = (thread, gate)
        thread.start()


def release_writes() -> None:
    """Let the writes waiting in `write_behind` run: XLA is about to compile."""
    with _behind_lock:
        for _, gate in _behind.values():
            gate.set()


# at exit, before the interpreter joins its threads, the writes waiting for a compile run
# at once (`threading._register_atexit`, which concurrent.futures uses too)
getattr(threading, "_register_atexit", lambda f: None)(release_writes)


def flush(path: str | None = None) -> None:
    """Finish the writes under way in this process (`write_behind`): of `path`, or all."""
    with _behind_lock:
        pending = list(_behind.values()) if path is None else [_behind.get(path)]
    for item in pending:
        if item is not None and item[0] is not threading.current_thread():
            item[1].set()
            item[0].join()


def _touch(path: str):
    """Mark an entry as used now (LRU order is by mtime; atime is often not kept)."""
    try:
        os.utime(path)
    except OSError:
        pass


def evict(cache_dir: str, max_bytes: int, keep: str | None = None) -> int:
    """Delete least recently used entries until the folder holds at most `max_bytes`.

    Also removes temporary files that crashed writers left behind. Safe against other
    processes deleting the same files. Returns the number of entries deleted.
    """
    entries, total, now = [], 0, time.time()
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return 0
    for name in names:
        p = os.path.join(cache_dir, name)
        try:
            st = os.stat(p)
        except OSError:
            continue
        if name.endswith(".tmp"):
            if now - st.st_mtime > _STALE_TMP_SECONDS:
                _unlink(p)
            continue
        if name.endswith((_SUFFIX, _IR_SUFFIX)):
            entries.append((st.st_mtime, name, st.st_size))
            total += st.st_size
    removed = 0
    for _, name, size in sorted(entries):
        if total <= max_bytes:
            break
        if name == keep:
            continue
        if _unlink(os.path.join(cache_dir, name)):
            removed += 1
            counters.evictions += 1
        total -= size
    return removed


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


# --- who may write the cache -----------------------------------------------------------------

# paths already warned about (one warning each per process; as many as cache folders the
# user configured), written under `_refused_lock`
_refused: set[str] = set()
_refused_lock = threading.Lock()


def _euid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else -1


def _unsafe(st: os.stat_result, path: str, *, folder: bool) -> str | None:
    """Why `path` (its `stat`) must not be trusted, with the fix; None when it may."""
    uid = _euid()
    if uid < 0:  # no owners to check on this platform (Windows)
        return None
    want = stat.S_ISDIR if folder else stat.S_ISREG
    if not want(st.st_mode):
        what = "a folder" if folder else "a regular file"
        return f"it is not {what}; remove it"
    if st.st_uid != uid:
        return (
            f"it is owned by user id {st.st_uid}, not by you (user id {uid}); use a folder of "
            "your own (`purejit.config.update(cache_dir=...)`), or, if you trust its owner, "
            f"`chown -R {uid} {path}`"
        )
    if st.st_mode & 0o022:
        return (
            f"it is writable by other users (mode {stat.S_IMODE(st.st_mode):#o}); run "
            f"`chmod go-w {path}`" + (" (and the same for its entries)" if folder else "")
        )
    return None


def _refuse(path: str, problem: str) -> None:
    with _refused_lock:
        if path in _refused:
            return
        _refused.add(path)
    what = "cache folder" if os.path.isdir(path) else "cache entry"
    warnings.warn(
        f"purejit: not using the {what} {path}: {problem}. Executables in the cache are "
        "native code, so purejit compiles without it until this is fixed.",
        CacheSecurityWarning,
        stacklevel=errors.user_stacklevel(),
    )


def folder_is_private(cache_dir: str) -> bool:
    """Whether `cache_dir` may be used: missing (it is created private), or a folder owned by
    this user that no one else can write to. Warns once per folder when it may not."""
    try:
        st = os.stat(cache_dir)
    except FileNotFoundError:
        return True
    except OSError:  # e.g. a path through a file: writing fails later and is logged
        return True
    problem = _unsafe(st, cache_dir, folder=True)
    if problem:
        counters.refused += 1
        _refuse(cache_dir, problem)
        return False
    return True


# --- small JSON records beside the entries (measured figures, timed decisions) -------------


def _record_path(cache_dir, prefix: str, key) -> str:
    h = hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:16]
    return os.path.join(os.fspath(cache_dir), f"{prefix}-{h}.json")


def read_record(cache_dir, prefix: str, key) -> dict | None:
    """The JSON record `write_record` left for `key` under `prefix` in `cache_dir`, or None
    (no folder set, a folder others can write to, missing, unreadable, or another key's)."""
    if not cache_dir or not folder_is_private(os.fspath(cache_dir)):
        return None
    try:
        with open(_record_path(cache_dir, prefix, key)) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return None
    return rec if isinstance(rec, dict) and rec.get("key") == list(key) else None


def write_record(cache_dir, prefix: str, key, fields: dict) -> None:
    """Write `{"key": key, **fields}` as `prefix`'s record for `key` (through a temporary file
    and a rename); a folder others can write to, or one that cannot be written, is left
    alone (the caller keeps its figures in memory)."""
    if not cache_dir or not folder_is_private(os.fspath(cache_dir)):
        return  # the persistent compile cache's rule: a folder only this user can write
    path = _record_path(cache_dir, prefix, key)
    try:
        os.makedirs(cache_dir, mode=0o700, exist_ok=True)
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump({"key": list(key), **fields}, f)
        os.replace(tmp, path)
    except OSError:
        pass
