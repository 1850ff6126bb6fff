"""The persistent compile cache: serialised XLA executables on disk, shared between processes.

Turn it on with `purejit.config.update("cache_dir", path)` (default: the environment variable
`PUREJIT_CACHE_DIR`). A compile request is keyed on the SHA-256 of

    the emitted StableHLO module (text or portable bytecode) + the serialised XLA compile
    options + jax/jaxlib versions + platform, device kind and platform version

so a second process running the same program loads the executable instead of compiling it.

The optimisation passes are cached the same way (`run_pipeline`): keyed on the traced IR's
text, the pipeline's options and a hash of the source of purejit's IR and passes, an entry
holds the optimised IR function and the pass records (what `explain` shows) as JSON data
(`purejit.ir.encoding`: reading it is about 6x faster than parsing the IR's text form and
runs no code, unlike the pickle it replaces), so a warm process skips the passes too and
only traces, emits and loads.

On disk, one file per key, `<key>.pjx` (executables) or `<key>.pjir` (optimised IR): a magic
line, a JSON header (format, key, kind of payload, payload length and SHA-256) and the
payload. A file that is truncated, corrupt, written by another format or for another key, or
that the runtime refuses to load, is ignored (logged) and rewritten after compiling, never a
crash. Writers write a temporary file in the same folder and `os.replace` it, so concurrent
writers never expose half a file. The folder is bounded by `cache_max_bytes` (default 1 GiB,
`PUREJIT_CACHE_MAX_BYTES`): after each write the least recently used entries (file mtime,
refreshed on every hit) are deleted.

Loading an executable runs native code from the file, so, as ssh does with its keys, purejit
uses a cache folder only when it belongs to the current user and no one else can write to it
(it is created with mode 0o700), and reads only entries with the same property. Anything
else is refused with one `CacheSecurityWarning` naming the path and the fix, and the program
compiles without the cache.
"""

from __future__ import annotations

import collections.abc
import functools
import hashlib
import json
import logging
import os
import stat
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import purejit.ir
import purejit.passes
from purejit import errors
from purejit.backend import pjrt
from purejit.config import config
from purejit.ir import Function, Op, TensorType, print_function
from purejit.ir.encoding import decode_function, encode_function
from purejit.passes._isomorphism import bucket_key, compare

logger = logging.getLogger("purejit")

_MAGIC = b"PUREJIT-XLA-CACHE\n"
_FORMAT = 2
_IR_FORMAT = 3  # the pass cache's entries (1, 2: the passes' outputs written too)
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
    Returns:
        `(executable, hit)`: a `pjrt.Executable` and whether it came from the cache.
    """

    cache_dir = config.read("cache_dir") if cache_dir is None else cache_dir
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
    try:
        payload = pjrt.serialize_executable(exe, device)
    except Exception as e:  # noqa: BLE001 - a runtime that cannot serialise: just don't cache
        logger.warning("purejit cache: this executable cannot be serialised (%s)", e)
        return exe, False
    try:
        write_entry(os.fspath(cache_dir), key, payload)
        evict(os.fspath(cache_dir), int(config.read("cache_max_bytes")), keep=key + _SUFFIX)
    except OSError as e:  # a read-only or full disk must not fail the compile
        logger.warning("purejit cache: could not write to %s (%s)", cache_dir, e)
    return exe, False


# --- files ----------------------------------------------------------------------------------


def _read(path: str, key: str, kind: str) -> bytes | None:
    """The payload of a valid entry for `key`, or None (missing, refused, or bad and logged)."""
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


# --- the pass cache ---------------------------------------------------------------------------


def run_pipeline(pipeline, fn, *, cache_dir: str | None = None):
    """`pipeline.run(fn)`, or its result from the persistent cache when `cache_dir` is set.

    Args:
        pipeline: a `purejit.passes.Pipeline`.
        fn: the traced function.
        cache_dir: default `purejit.config.read("cache_dir")`; None or "" runs the passes.
    Returns:
        `(optimised function, pass records)`, as `Pipeline.run` returns them.
    """
    cache_dir = config.read("cache_dir") if cache_dir is None else cache_dir
    fingerprint = _pipeline_fingerprint(pipeline) if cache_dir else None
    if fingerprint is None or not folder_is_private(os.fspath(cache_dir)):
        return pipeline.run(fn)

    text = key_text(fn)
    h = hashlib.sha256(b"purejit-pass-cache/%d/%d\0" % (_FORMAT, _IR_FORMAT))
    for part in (_code_fingerprint(), fingerprint, text):
        h.update(part.encode() + b"\0")
    key = h.hexdigest()
    path = os.path.join(os.fspath(cache_dir), key + _IR_SUFFIX)
    blob = _read(path, key, _IR)
    if blob is not None:
        try:
            # no verify(): the pipeline verified it before writing, the checksum and the
            # code hash in the key guard it since; decoding checks that it is IR at all
            opt, records = decode_ir_entry(blob, fn, pipeline)
        except ValueError as e:  # damaged, or written by other code: data, never run
            counters.bad_files += 1
            logger.warning("purejit cache: ignoring %s, it does not decode (%s)", path, e)
        else:
            counters.pass_hits += 1
            _touch(path)
            return opt, records
    counters.pass_misses += 1
    opt, records = pipeline.run(fn)
    try:
        payload = encode_ir_entry(opt, records, fn)
    except (TypeError, ValueError) as e:  # an attribute the encoding cannot hold
        logger.warning("purejit cache: this program's IR cannot be cached (%s)", e)
        return opt, records
    try:
        write_entry(os.fspath(cache_dir), key, payload, _IR_SUFFIX)
    except OSError as e:
        logger.warning("purejit cache: could not write the pass cache to %s (%s)", cache_dir, e)
    return opt, records


def key_text(fn: Function) -> str:
    """The text the pass cache's key hashes: `fn` printed, with each distinct function of
    its top-level `call` ops printed once.

    A deep model traced as a Python loop over a jitted layer holds one copy of the layer per
    call (5568 of the 48-layer bench transformer's ops; printing them cost a third of its
    passes' time). Calls whose functions are proved isomorphic, constants included
    (`_isomorphism.compare`, what `roll_layers` relies on), print identically on their own,
    so the program is printed with each call's function named by its class (an attribute
    no call has), followed by each class's function: one text per program, and programs
    with the same text are the same up to value names.
    """
    classes: list[Function] = []
    buckets: dict = {}
    ops = []
    for op in fn.ops:
        if op.name == "call" and len(op.regions) == 1:
            (body,) = op.regions
            alike = buckets.setdefault(bucket_key(body), [])
            k = next((k for k in alike if compare(classes[k], body).same), None)
            if k is None:
                k = len(classes)
                classes.append(body)
                alike.append(k)
            op = Op(op.name, op.operands, {**op.attrs, "key_text_class": k}, op.results)
        ops.append(op)
    if not classes:
        return print_function(fn)
    top = print_function(Function(fn.name, fn.params, ops, fn.results))
    return "\n".join([top, *(print_function(c) for c in classes)])


def encode_ir_entry(fn, records, source=None) -> bytes:
    """The payload of a pass-cache entry: two JSON lines, the optimised function and the
    pass records, read lazily. The records' IR is not written: a stage that is `source`,
    the traced function the entry is keyed by, is null (whoever reads the entry has just
    traced it), and another pass's output is `true`, made again by running the pipeline
    over `source` when someone reads a record (`explain`, dumps). Encoding every stage cost
    more than the passes on the first call of a deep model (its traced program holds every
    layer's call; a rolled program's loop reads its layers' parameters by a case whose
    branches each take all of them); text already printed is kept as it is."""
    recs = []
    for r in records:
        src = r.ir_source
        if isinstance(src, str):
            stage = src
        else:
            stage = None if src is source else True
        recs.append(
            [r.name, r.ops_before, r.ops_after, r.seconds, r.changed, _jsonable(r.report)]
            + [stage, r.iteration, r.group]
        )
    dumps = json.JSONEncoder(separators=(",", ":"), allow_nan=True).encode
    head = dumps(encode_function(fn)).encode()
    return head + b"\n" + dumps({"stages": [], "records": recs}).encode()


def decode_ir_entry(payload: bytes, source=None, pipeline=None):
    """`(function, records)` from `encode_ir_entry`'s bytes (`source`: the traced function
    the entry was written for; `pipeline`: the pipeline that made it, run again over
    `source` for the records' IR when they are read). Raises ValueError when the payload
    is not that (only `json` and `purejit.ir.encoding` read it: no code runs)."""
    nl = payload.find(b"\n")
    if nl < 0:
        raise ValueError("no records line")
    records = LazyRecords(payload[nl + 1 :], source, pipeline)
    return decode_function(json.loads(payload[:nl])), records


def _jsonable(v):
    """A pass report as JSON data: numbers, text, lists and dicts stay, the rest is shown
    as its repr (what `explain` prints)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)


def _pipeline_fingerprint(pipeline) -> str | None:
    """The pipeline's options as text; None when they cannot be told apart reliably (an
    object printed with its address) or when stages are dumped to files."""
    if getattr(pipeline, "dump_dir", None):
        return None
    text = repr((list(pipeline.passes), list(pipeline.disable), pipeline.keep_ir))
    return None if " at 0x" in text else text


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """A hash of the source of purejit's IR and passes, so edited passes never reuse stale
    results (computed once per process)."""
    h = hashlib.sha256()
    for pkg in (purejit.ir, purejit.passes):
        root = os.path.dirname(pkg.__file__)
        for dirpath, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    with open(os.path.join(dirpath, name), "rb") as f:
                        h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


class LazyRecords(collections.abc.Sequence):
    """Pass records read from the pass cache, decoded on first use (`explain`, dumps); the
    passes' outputs are not in the entry, so reading them runs the pipeline again over the
    traced function (`source`). A damaged records line gives no records (and a log line),
    never an error."""

    def __init__(self, blob: bytes, source=None, pipeline=None):
        self._blob, self._items = blob, None
        self._source, self._pipeline = source, pipeline

    def _load(self) -> list:
        if self._items is None:
            blob, self._blob = self._blob, None
            try:
                self._items = _decode_records(json.loads(blob), self._source, self._pipeline)
            except (ValueError, TypeError, KeyError, IndexError) as e:
                logger.warning("purejit cache: the cached pass records do not decode (%s)", e)
                self._items = []
        return self._items

    def __getitem__(self, i):
        return self._load()[i]

    def __len__(self) -> int:
        return len(self._load())

    def __iter__(self):
        return iter(self._load())

    def __add__(self, other):
        return list(self._load()) + list(other)

    def __repr__(self) -> str:
        return repr(self._load())


def _decode_records(data, source=None, pipeline=None) -> list:
    stages = [decode_function(s) for s in data["stages"]]
    rows = data["records"]
    if any(row[6] is True for row in rows) and source is not None and pipeline is not None:
        # the passes' outputs were not written: the records of running them again (the
        # same passes over the same function, timed again)
        return list(pipeline.run(source)[1])
    out = []
    for name, before, after, seconds, changed, report, stage, iteration, group in rows:
        if stage is None:  # the traced function the entry was read for
            src = source if source is not None else ""
        elif stage is True:  # a pass's output, not written (no pipeline to make it again)
            src = ""
        else:
            src = stage if isinstance(stage, str) else stages[stage]
        rec = purejit.passes.PassRecord(
            str(name), int(before), int(after), float(seconds), bool(changed), dict(report), src
        )
        rec.iteration, rec.group = int(iteration), group if group is None else str(group)
        out.append(rec)
    return out


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
