"""The persistent cache holds only data and guards its folder.

Planted entries (corrupted, truncated, a pickle payload behind a valid header, IR naming
ops that do not exist, entries and folders writable by others or owned by someone else) are
ignored or refused: nothing in them runs, nothing crashes, the program is recompiled and
gives the right numbers.
"""

import json
import os
import pickle
import stat
import warnings

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.compiler import cache as cc
from purejit.compiler import cache_files
from purejit.ir import print_function
from purejit.ir.encoding import DecodeError, decode_function, encode_function

X = np.linspace(-1, 1, 7).astype(np.float32)


def _f(x):
    return jnp.sin(x) * 2 + jnp.cos(x)


WANT = np.sin(X) * 2 + np.cos(X)


class _Plant:
    """Unpickling this creates the folder `path`: proof that a load ran code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.fixture
def cache_dir(tmp_path):
    d = tmp_path / "cache"
    old = purejit.config.read("cache_dir")
    purejit.config.update(cache_dir=str(d))
    cache_files._refused.clear()
    try:
        yield d
    finally:
        purejit.config.update(cache_dir=old)
        cache_files._refused.clear()


def _run():
    f = purejit.jit(_f)  # a fresh function: only the persistent cache can help it
    y = np.asarray(f(X))
    np.testing.assert_allclose(y, WANT, rtol=1e-6)
    cc.flush()  # the pass cache's entry is written behind the call: the tests read files
    return purejit.cache_stats(f)


def _entries(d, suffix):
    return sorted(p for p in d.iterdir() if p.name.endswith(suffix))


def _key(p):
    return p.name.split(".")[0]


def test_ir_entries_are_json_data_and_hit(cache_dir):
    _run()
    (ir_entry,) = _entries(cache_dir, ".pjir")
    payload, why = cc.parse_entry(ir_entry.read_bytes(), _key(ir_entry), "purejit-ir-json")
    assert payload is not None, why
    head, records = payload.split(b"\n", 1)
    fn = decode_function(json.loads(head))  # the function is plain JSON data
    assert "sine(" in print_function(fn)
    assert b"pickle" not in payload and not payload.startswith(b"\x80")
    before = cc.counters.pass_hits
    stats = _run()
    assert cc.counters.pass_hits == before + 1 and stats.persistent_hits == 1
    # explain's pass records come back from the same entry
    lowered = purejit.jit(_f).lower(X)
    assert [r.name for r in lowered.records][0] == "trace"
    assert all(isinstance(r.report, dict) for r in lowered.records)


def _plant(path, key, kind, payload):
    path.write_bytes(cc.encode_entry(key, payload, kind))
    os.chmod(path, 0o600)


@pytest.mark.parametrize("suffix", [".pjir", ".pjx"])
def test_pickle_payload_behind_a_valid_header_never_runs(cache_dir, tmp_path, suffix, caplog):
    _run()
    sentinel = tmp_path / "pwned"
    evil = pickle.dumps(_Plant(str(sentinel)))
    kind = "purejit-ir-json" if suffix == ".pjir" else "xla-executable"
    for entry in _entries(cache_dir, suffix):
        _plant(entry, _key(entry), kind, evil)
        assert cc.parse_entry(entry.read_bytes(), _key(entry), kind)[0] == evil  # header valid
    bad = cc.counters.bad_files
    with caplog.at_level("WARNING", logger="purejit"):
        _run()
    assert not sentinel.exists()
    assert cc.counters.bad_files > bad
    assert any("ignoring" in r.getMessage() for r in caplog.records)
    # the entry was rewritten with real data
    for entry in _entries(cache_dir, suffix):
        assert cc.parse_entry(entry.read_bytes(), _key(entry), kind)[0] != evil


def _ir_doc(ops, results=(1,)):
    return {"version": 1, "types": [["f32", [7]]], "fn": ["main", [0], ops, list(results)]}


MALFORMED = {
    "truncated_json": b'{"version": 1, "types": [["f32", [7]]], "fn": ["ma',
    "not_json": b"\x80\x04\x95 not json at all",
    "no_records_line": json.dumps(_ir_doc([["sine", [0], 0, [0], [], None]])).encode(),
    "unknown_op": json.dumps(_ir_doc([["os.system", [0], 0, [0], [], None]])).encode() + b"\n{}",
    "use_before_def": json.dumps(_ir_doc([["sine", [5], 0, [0], [], None]])).encode() + b"\n{}",
    "unknown_dtype": json.dumps(
        {"version": 1, "types": [["object", [7]]], "fn": ["main", [0], [], [0]]}
    ).encode()
    + b"\n{}",
    "bad_attribute": json.dumps(
        _ir_doc([["sine", [0], {"a": {"__reduce__": "os.system"}}, [0], [], None]])
    ).encode()
    + b"\n{}",
    "region_value_escapes": json.dumps(
        _ir_doc(
            [["sine", [0], 0, [0], [["r", [0], [["sine", [1], 0, [0], [], None]], [2]]], None]],
            results=(2,),
        )
    ).encode()
    + b"\n{}",
    "wrong_version": json.dumps({"version": 99}).encode() + b"\n{}",
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_ir_entries_are_ignored_and_rewritten(cache_dir, name, caplog):
    _run()
    (entry,) = _entries(cache_dir, ".pjir")
    _plant(entry, _key(entry), "purejit-ir-json", MALFORMED[name])
    misses = cc.counters.pass_misses
    with caplog.at_level("WARNING", logger="purejit"):
        _run()
    assert cc.counters.pass_misses == misses + 1  # the passes ran again
    assert any("ignoring" in r.getMessage() for r in caplog.records)
    payload, _ = cc.parse_entry(entry.read_bytes(), _key(entry), "purejit-ir-json")
    assert payload is not None and payload != MALFORMED[name]


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "kind_swapped"])
def test_damaged_files_are_ignored(cache_dir, damage, caplog):
    _run()
    for entry in _entries(cache_dir, ".pjir") + _entries(cache_dir, ".pjx"):
        data = entry.read_bytes()
        if damage == "truncate":
            data = data[: len(data) // 3]
        elif damage == "flip":
            data = data[:-5] + bytes(b ^ 0x5A for b in data[-5:])
        elif damage == "empty":
            data = b""
        else:  # an executable entry presented as IR and the other way round
            kind = "xla-executable" if entry.suffix == ".pjir" else "purejit-ir-json"
            data = cc.encode_entry(_key(entry), cc.parse_entry(data, _key(entry))[0], kind)
        entry.write_bytes(data)
    bad = cc.counters.bad_files
    with caplog.at_level("WARNING", logger="purejit"):
        stats = _run()
    assert cc.counters.bad_files == bad + 2
    assert stats.compiles == 1


def _one_warning(record, path, fix):
    msgs = [str(w.message) for w in record if issubclass(w.category, cc.CacheSecurityWarning)]
    assert len(msgs) == 1, msgs
    assert str(path) in msgs[0] and fix in msgs[0]


def test_folder_writable_by_others_is_refused_with_one_warning(cache_dir):
    cache_dir.mkdir()
    os.chmod(cache_dir, 0o777)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        first = _run()
        second = _run()
    _one_warning(record, cache_dir, f"chmod go-w {cache_dir}")
    assert first.compiles == second.compiles == 1 and second.persistent_hits == 0
    assert os.listdir(cache_dir) == []  # nothing written into it either
    os.chmod(cache_dir, 0o700)  # fixed: used again
    assert _run().compiles == 1 and _run().persistent_hits == 1


def _become_someone_else(monkeypatch):
    """Files made here are foreign: really (chown, when running as root) or by pretending
    to be another user."""
    if cache_files._euid() == 0:
        return lambda p: os.chown(p, 65534, 65534)
    monkeypatch.setattr(cache_files, "_euid", lambda: os.geteuid() + 1)
    return lambda p: None


def test_folder_owned_by_someone_else_is_refused(cache_dir, monkeypatch):
    cache_dir.mkdir(mode=0o700)
    _become_someone_else(monkeypatch)(cache_dir)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        stats = _run()
        _run()
    _one_warning(record, cache_dir, "owned by user id")
    assert stats.compiles == 1 and os.listdir(cache_dir) == []


@pytest.mark.parametrize("problem", ["writable", "foreign", "symlink"])
def test_entries_writable_or_owned_by_others_are_refused(cache_dir, tmp_path, problem, caplog):
    _run()
    entries = _entries(cache_dir, ".pjir") + _entries(cache_dir, ".pjx")
    assert len(entries) == 2
    if problem == "writable":
        for e in entries:
            os.chmod(e, 0o666)
    elif problem == "foreign":
        if cache_files._euid() != 0:
            pytest.skip("making a file someone else's needs root")
        for e in entries:
            os.chown(e, 65534, 65534)
    else:  # a link to a file elsewhere
        for i, e in enumerate(entries):
            target = tmp_path / f"elsewhere{i}"
            target.write_bytes(e.read_bytes())
            os.chmod(target, 0o600)
            e.unlink()
            e.symlink_to(target)
    with warnings.catch_warnings(record=True) as record, caplog.at_level("WARNING", "purejit"):
        warnings.simplefilter("always")
        stats = _run()
    assert stats.compiles == 1 and stats.persistent_hits == 0
    if problem == "symlink":
        assert any("cannot read" in r.getMessage() for r in caplog.records)
    else:
        msgs = [str(w.message) for w in record if w.category is cc.CacheSecurityWarning]
        assert len(msgs) == 2 and all("cache entry" in m for m in msgs)
        fix = "chmod go-w" if problem == "writable" else "owned by user id 65534"
        assert all(fix in m for m in msgs)
    # rewritten by us, private again, and used
    for e in entries:
        st = os.lstat(e)
        assert stat.S_ISREG(st.st_mode) and st.st_mode & 0o077 == 0
    assert _run().persistent_hits == 1


def test_encoding_round_trip_and_decode_errors():
    f = purejit.jit(
        lambda x, i: (
            purejit.lax.fori_loop(0, 3, lambda k, c: c * 2 + x[i], x).sum()
            + jnp.asarray(np.arange(20, dtype=np.int32)).astype(x.dtype).sum()
        )
    )
    fn = f.lower(X, 2).fn
    text = print_function(fn)
    data = json.loads(json.dumps(encode_function(fn)))
    assert print_function(decode_function(data)) == text
    with pytest.raises(DecodeError, match="unknown op"):
        decode_function(_ir_doc([["nope", [0], 0, [0], [], None]]))
    with pytest.raises(DecodeError, match="not defined"):
        decode_function(_ir_doc([["sine", [3], 0, [0], [], None]]))
    with pytest.raises(DecodeError, match="malformed"):
        decode_function({"version": 1, "types": [], "fn": ["main"]})
