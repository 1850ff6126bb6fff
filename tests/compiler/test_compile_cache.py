"""The persistent compile cache: hits across processes, recovery from bad
files, atomic concurrent writes, LRU eviction."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.compiler import cache as cc
from purejit.compiler import cache_files

# a child process: run one jitted program with the cache folder given as argv[1]; with
# argv[2] == "forbid", XLA compilation raises, so only a cache hit can succeed
CHILD = textwrap.dedent(
    """
    import sys, json
    import numpy as np
    import purejit, purejit.numpy as jnp
    from purejit.backend import pjrt
    purejit.config.update(cache_dir=sys.argv[1])
    if sys.argv[2] == "forbid":
        def no_compile(*a, **k):
            raise RuntimeError("XLA compile called despite a warm cache")
        pjrt.compile = no_compile
    f = purejit.jit(lambda x, w: jnp.tanh(x @ w) * 2)
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    w = np.ones((4, 5), np.float32) / 3
    y = np.asarray(f(x, w))
    s = purejit.cache_stats(f)
    print(json.dumps({"y": y.tolist(), "compiles": s.compiles, "hits": s.persistent_hits}))
    """
)


def _run_child(cache_dir, mode, env_cache=False):
    env = dict(os.environ)
    env.pop("PUREJIT_CACHE_DIR", None)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(cache_dir), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _result(proc):
    import json

    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


def test_second_process_skips_compilation_and_concurrent_writers(tmp_path):
    # two processes compile the same program at once into one folder
    first = [_run_child(tmp_path, "compile") for _ in range(2)]
    r1, r2 = (_result(p) for p in first)
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    want = np.tanh(x @ (np.ones((4, 5), np.float32) / 3)) * 2
    np.testing.assert_allclose(r1["y"], want, rtol=1e-6)
    assert r1["y"] == r2["y"]
    entries = [n for n in os.listdir(tmp_path) if n.endswith(".pjx")]
    assert len(entries) == 1  # one key, written atomically by both
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    key = entries[0][: -len(".pjx")]
    payload, why = cc.parse_entry((tmp_path / entries[0]).read_bytes(), key)
    assert payload is not None, why
    # a third process loads it and never calls XLA's compiler
    r3 = _result(_run_child(tmp_path, "forbid"))
    assert r3 == {"y": r1["y"], "compiles": 0, "hits": 1}


@pytest.fixture
def lowered():
    return purejit.jit(lambda x: jnp.sin(x) + 1).lower(np.ones((7,), np.float32))


def _compile(lowered, cache_dir):
    return cc.compile(
        lowered.module, lowered.fn.param_types, lowered.fn.result_types, cache_dir=str(cache_dir)
    )


def _entry(lowered, cache_dir):
    return os.path.join(cache_dir, cc.cache_key(lowered.module) + ".pjx")


def _check_runs(exe):
    x = np.linspace(0, 1, 7).astype(np.float32)
    (y,) = exe.execute([purejit.Array(host=x).buffer])
    np.testing.assert_allclose(np.asarray(y), np.sin(x) + 1, rtol=1e-6)


def test_hit_in_process_and_key_sensitivity(tmp_path, lowered):
    _, hit = _compile(lowered, tmp_path)
    assert not hit
    exe2, hit2 = _compile(lowered, tmp_path)
    assert hit2
    _check_runs(exe2)
    assert cc.cache_key(lowered.module) != cc.cache_key(lowered.module + " ")
    assert cc.cache_key(lowered.module) != cc.cache_key(
        lowered.module, disable_xla_passes=("fusion",)
    )


def test_an_executable_written_behind_waits_for_the_next_compile(tmp_path, lowered, monkeypatch):
    monkeypatch.setattr(cache_files, "_GATE_SECONDS", 60.0)  # no write by the clock here
    exe, hit = cc.compile(
        lowered.module,
        lowered.fn.param_types,
        lowered.fn.result_types,
        cache_dir=str(tmp_path),
        write_behind=True,
    )
    assert not hit
    _check_runs(exe)  # the call does not wait for serialising: nothing on disk yet
    assert not os.path.exists(_entry(lowered, tmp_path))
    # a reader in this process waits for the write: a hit, and the entry is on disk
    exe2, hit2 = _compile(lowered, tmp_path)
    assert hit2 and os.path.exists(_entry(lowered, tmp_path))
    _check_runs(exe2)
    # through jit: the next compile (here a flush) lets the write go
    old = purejit.config.read("cache_dir")
    purejit.config.update("cache_dir", str(tmp_path / "jit"))
    try:
        np.asarray(purejit.jit(lambda x: jnp.cos(x) * 2)(np.ones(3, np.float32)))
        cc.release_writes()
        cc.flush()
    finally:
        purejit.config.update(cache_dir=old)
    assert [n for n in os.listdir(tmp_path / "jit") if n.endswith(".pjx")]


@pytest.mark.parametrize(
    "damage",
    ["truncate", "garbage", "flip_payload", "other_key", "bad_executable", "empty"],
)
def test_bad_files_are_ignored_and_rewritten(tmp_path, lowered, damage, caplog):
    _compile(lowered, tmp_path)
    path = _entry(lowered, tmp_path)
    with open(path, "rb") as f:
        data = f.read()
    key = cc.cache_key(lowered.module)
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "garbage":
        data = os.urandom(300)
    elif damage == "flip_payload":
        data = data[:-10] + bytes(b ^ 0xFF for b in data[-10:])
    elif damage == "other_key":
        data = cc.encode_entry("0" * 64, cc.parse_entry(data, key)[0])
    elif damage == "bad_executable":  # a valid file whose payload XLA cannot load
        data = cc.encode_entry(key, b"not an executable" * 10)
    else:
        data = b""
    with open(path, "wb") as f:
        f.write(data)
    before = cc.counters.bad_files
    with caplog.at_level("WARNING", logger="purejit"):
        exe, hit = _compile(lowered, tmp_path)
    assert not hit
    assert cc.counters.bad_files == before + 1
    assert any("ignoring" in r.getMessage() for r in caplog.records)
    _check_runs(exe)
    with open(path, "rb") as f:
        assert cc.parse_entry(f.read(), key)[0] is not None  # rewritten
    assert _compile(lowered, tmp_path)[1]


def test_concurrent_writes_never_expose_partial_files(tmp_path):
    key = "ab" * 32
    payloads = [bytes([i]) * (200_000 + i) for i in range(8)]
    seen_bad = []
    stop = threading.Event()

    def reader():
        path = os.path.join(tmp_path, key + ".pjx")
        while not stop.is_set():
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            if cc.parse_entry(data, key)[0] is None:
                seen_bad.append(len(data))

    r = threading.Thread(target=reader)
    r.start()
    writers = [
        threading.Thread(target=cc.write_entry, args=(str(tmp_path), key, p)) for p in payloads
    ]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    r.join()
    assert seen_bad == []
    payload, _ = cc.parse_entry((tmp_path / (key + ".pjx")).read_bytes(), key)
    assert payload in payloads
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_lru_eviction_by_mtime(tmp_path):
    keys = [f"{i:064x}" for i in range(5)]
    for i, k in enumerate(keys):
        p = cc.write_entry(str(tmp_path), k, b"x" * 1000)
        os.utime(p, (1000 + i, 1000 + i))
    cc._touch(os.path.join(tmp_path, keys[0] + ".pjx"))  # a hit makes the oldest the newest
    stale = tmp_path / ".dead.tmp"
    stale.write_bytes(b"partial")
    os.utime(stale, (1, 1))
    # the headers hold a write time, so sizes can differ by a byte: keep exactly two
    size = sum(os.path.getsize(os.path.join(tmp_path, k + ".pjx")) for k in (keys[0], keys[4]))
    removed = cc.evict(str(tmp_path), max_bytes=size, keep=keys[4] + ".pjx")
    assert removed == 3
    left = sorted(n[:-4] for n in os.listdir(tmp_path))
    assert left == sorted([keys[0], keys[4]])


def test_config_cache_dir_through_jit(tmp_path):
    old = purejit.config.read("cache_dir")
    purejit.config.update("cache_dir", str(tmp_path / "c"))
    try:
        f = purejit.jit(lambda x: x * 3 - 1)
        f(np.ones(9, np.float32))
        g = purejit.jit(lambda x: x * 3 - 1)
        np.testing.assert_allclose(np.asarray(g(np.ones(9, np.float32))), np.full(9, 2.0))
        assert purejit.cache_stats(f).compiles == 1
        assert (purejit.cache_stats(g).compiles, purejit.cache_stats(g).persistent_hits) == (0, 1)
        assert oct(os.stat(tmp_path / "c").st_mode & 0o777) == oct(0o700)
    finally:
        purejit.config.update(cache_dir=old)


def test_unwritable_cache_dir_does_not_fail_the_compile(tmp_path, lowered):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    exe, hit = _compile(lowered, blocker / "sub")
    assert not hit
    _check_runs(exe)


def test_the_pass_cache_key_prints_each_distinct_layer_once():
    from purejit.ir import print_function

    def model(c3):
        layer = purejit.jit(lambda x, w, c: jnp.tanh(x @ w) + c, static_argnums=2)

        def f(x, ws):
            for i, w in enumerate(ws):
                x = layer(x, w, c3 if i == 2 else 1.0)
            return x

        x, ws = np.ones((2, 4), np.float32), [np.eye(4, dtype=np.float32)] * 4
        return purejit.jit(f).lower(x, ws).traced

    a, b, c = model(1.0), model(1.0), model(2.0)  # c: the third layer adds another constant
    text = cc.key_text(a)
    assert text == cc.key_text(b) and text != cc.key_text(c)
    # one class of layer function in a (printed once), two in c, each call naming its class
    assert text.count("func @") == 2 and cc.key_text(c).count("func @") == 3
    assert text.count("key_text_class=0") == 4 and len(text) < len(print_function(a)) / 2
    assert cc.key_text(c).count("key_text_class=1") == 1


def test_pass_cache_skips_the_passes_and_gives_the_same_program(tmp_path):
    from purejit.ir import print_function
    from purejit.passes import Pipeline

    from purejit.backend import stablehlo

    def f(x, w):
        h = jnp.tanh(x @ w) + jnp.tanh(x @ w)  # CSE has work to do
        return (h - h.mean(axis=-1, keepdims=True)).sum(axis=0)

    traced = purejit.jit(f).lower(np.ones((4, 3), np.float32), np.ones((3, 5), np.float32)).traced
    before = cc.counters.pass_hits
    opt1, rec1 = cc.run_pipeline(Pipeline(), traced, cache_dir=str(tmp_path))
    opt2, rec2 = cc.run_pipeline(Pipeline(), traced, cache_dir=str(tmp_path))
    assert cc.counters.pass_hits == before + 1
    assert opt2 is not opt1
    assert print_function(opt2) == print_function(opt1)
    assert stablehlo.emit(opt2) == stablehlo.emit(opt1)
    assert [r.name for r in rec2] == [r.name for r in rec1]  # explain still sees every pass
    # every stage too; the traced input is not written (the reader has just traced it)
    assert rec2[0].ir_source is traced
    assert [r.ir for r in rec2] == [r.ir for r in rec1]
    ids = [v.id for v in opt2.params]
    assert ids == sorted(ids) and min(ids) > max(v.id for v in opt1.params)
    # another pipeline (a pass disabled) is another key
    cc.run_pipeline(Pipeline(disable=("cse",)), traced, cache_dir=str(tmp_path))
    assert cc.counters.pass_hits == before + 1
    # a damaged entry is ignored and rewritten
    for name in os.listdir(tmp_path):
        if name.endswith(".pjir"):
            data = (tmp_path / name).read_bytes()
            key = name[: -len(".pjir")]
            (tmp_path / name).write_bytes(cc.encode_entry(key, b"\x80garbage"))
            break
    bad = cc.counters.bad_files
    cc.run_pipeline(Pipeline(), traced, cache_dir=str(tmp_path))
    cc.run_pipeline(Pipeline(disable=("cse",)), traced, cache_dir=str(tmp_path))
    assert cc.counters.bad_files == bad + 1
    assert data  # the entry existed before it was damaged


def test_pass_cache_entry_is_written_behind_the_call_once_xla_compiles(tmp_path, monkeypatch):
    from purejit.passes import Pipeline

    monkeypatch.setattr(cache_files, "_GATE_SECONDS", 60.0)  # no write by the clock here

    traced = purejit.jit(lambda x: jnp.tanh(x) * 3).lower(np.ones(5, np.float32)).traced
    before = cc.counters.pass_hits
    opt1, _ = cc.run_pipeline(Pipeline(), traced, cache_dir=str(tmp_path), write_behind=True)
    # the write waits for an XLA compile: nothing is on disk yet
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".pjir")]
    # a reader in this process waits for the write: a hit, the same program
    opt2, _ = cc.run_pipeline(Pipeline(), traced, cache_dir=str(tmp_path))
    assert cc.counters.pass_hits == before + 1
    assert stablehlo_of(opt2) == stablehlo_of(opt1)
    # a compile releases the writes waiting for it; flush waits for them
    cc.run_pipeline(Pipeline(disable=("cse",)), traced, cache_dir=str(tmp_path), write_behind=True)
    cc.release_writes()
    cc.flush()
    assert len([n for n in os.listdir(tmp_path) if n.endswith(".pjir")]) == 2


def stablehlo_of(fn):
    from purejit.backend import stablehlo

    return stablehlo.emit(fn)


def test_a_write_behind_finishes_at_exit_and_never_fails_the_program(tmp_path, caplog):
    # a process that only lowers (no compile releases the write) still leaves the entry
    code = textwrap.dedent(
        """
        import sys
        import numpy as np
        import purejit, purejit.numpy as jnp
        purejit.config.update(cache_dir=sys.argv[1])
        purejit.jit(lambda x: jnp.sin(x) * 2).lower(np.ones(3, np.float32))
        """
    )
    env = dict(os.environ)
    env.pop("PUREJIT_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, timeout=120)
    assert proc.returncode == 0
    (name,) = [n for n in os.listdir(tmp_path) if n.endswith(".pjir")]
    key = name[: -len(".pjir")]
    assert cc.parse_entry((tmp_path / name).read_bytes(), key, "purejit-ir-json")[0]

    # a job that fails is logged, not raised into the caller
    def job():
        raise ValueError("cannot encode")

    with caplog.at_level("WARNING", logger="purejit"):
        cc.write_behind(str(tmp_path / "x.pjir"), job, "the test's entry")
        cc.flush()
    assert any("the test's entry was not written" in r.getMessage() for r in caplog.records)
