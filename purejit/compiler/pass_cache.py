"""The pass cache: the optimisation passes' results in the persistent cache.

`run_pipeline` keys a pipeline's run on the traced IR's text (`key_text`), the pipeline's
options and a hash of the source of purejit's IR and passes; an entry holds the optimised IR
function and the pass records (what `explain` shows) as JSON data (`purejit.ir.encoding`:
reading it is about 6x faster than parsing the IR's text form and runs no code, unlike a
pickle), so a warm process skips the passes too and only traces, emits and loads. Entries are
`<key>.pjir` files of `purejit.compiler.cache_files`, under its folder checks and format.
`lower` has a new entry encoded and written while XLA compiles the program
(`cache_files.write_behind`), and the key's isomorphism proofs are the ones `roll_layers`
reads (`_isomorphism.remembering`).
"""

from __future__ import annotations

import collections.abc
import functools
import hashlib
import json
import os

import purejit.ir
import purejit.passes
from purejit.compiler.cache_files import (
    _FORMAT,
    _IR,
    _IR_SUFFIX,
    _read,
    _touch,
    counters,
    folder_is_private,
    logger,
    write_entry,
)
from purejit.compiler.cache_files import write_behind as cache_write_behind
from purejit.config import config
from purejit.ir import Function, Op, print_function
from purejit.ir.encoding import decode_function, encode_function
from purejit.passes._isomorphism import bucket_key, compare, remembering

_IR_FORMAT = 3  # the pass cache's entries (1, 2: the passes' outputs written too)


def run_pipeline(pipeline, fn, *, cache_dir: str | None = None, write_behind: bool = False):
    """`pipeline.run(fn)`, or its result from the persistent cache when `cache_dir` is set.

    Args:
        pipeline: a `purejit.passes.Pipeline`.
        fn: the traced function.
        cache_dir: default `purejit.config.read("cache_dir")`; None or "" runs the passes.
        write_behind: encode and write a new entry in a thread of its own
            (`cache_files.write_behind`), which runs while XLA compiles the program; readers
            of the entry in this process wait for it. The optimised function and records
            are read, never changed, by the writer (passes make new functions).
    Returns:
        `(optimised function, pass records)`, as `Pipeline.run` returns them.
    """
    cache_dir = config.read("cache_dir") if cache_dir is None else cache_dir
    fingerprint = _pipeline_fingerprint(pipeline) if cache_dir else None
    if fingerprint is None or not folder_is_private(os.fspath(cache_dir)):
        return pipeline.run(fn)
    # the key's isomorphism proofs are the ones `roll_layers` makes first
    with remembering():
        return _run_cached(pipeline, fn, cache_dir, fingerprint, write_behind)


def _run_cached(pipeline, fn, cache_dir, fingerprint: str, write_behind: bool):
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
    folder = os.fspath(cache_dir)

    def store():
        try:
            payload = encode_ir_entry(opt, records, fn)
        except (TypeError, ValueError) as e:  # an attribute the encoding cannot hold
            logger.warning("purejit cache: this program's IR cannot be cached (%s)", e)
            return
        write_entry(folder, key, payload, _IR_SUFFIX)

    if write_behind:
        cache_write_behind(path, store, "the pass cache's entry")
        return opt, records
    try:
        store()
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
