"""Threads and processes sharing jitted functions and a cache folder.

Eight threads calling one jitted function with nine shapes compile each signature once; a
thread tracing never captures another thread's ops; two processes writing one cache folder
both get the right numbers and leave only valid entries.
"""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit.compiler import cache as cc


def test_eight_threads_nine_shapes_compile_each_signature_once():
    f = purejit.jit(lambda x: jnp.tanh(x) * 2 + 1, recompile_warn_after=0)
    sizes = list(range(1, 10))
    start = threading.Barrier(8)
    wrong = []

    def worker(t):
        start.wait()
        for k in range(len(sizes)):
            n = sizes[(k + t) % len(sizes)]
            x = np.full(n, 0.1 * t, np.float32)
            y = np.asarray(f(x))
            if y.shape != (n,) or not np.allclose(y, np.tanh(x) * 2 + 1, rtol=1e-6):
                wrong.append((t, n))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert wrong == []
    s = purejit.cache_stats(f)
    assert (s.traces, s.compiles, s.misses) == (9, 9, 9)
    assert s.hits == 8 * 9 - 9
    assert len(s.miss_reasons) == 8
    assert all(r.changes and r.changes[0].name == "x" for r in s.miss_reasons)  # a real change


def test_a_thread_tracing_never_captures_another_threads_ops():
    inside = threading.Event()
    release = threading.Event()

    @purejit.jit
    def slow(x):
        y = x * 2
        inside.set()  # tracing is now in progress in this thread
        release.wait(10)
        return y + 1

    out = {}
    t = threading.Thread(target=lambda: out.setdefault("slow", slow(np.ones(3, np.float32))))
    t.start()
    assert inside.wait(10)
    try:
        eager = purejit.numpy.arange(4.0) * 3  # runs now, in this thread, on the device
        g = purejit.jit(lambda x: x - 1)
        other = g(np.arange(3, dtype=np.float32))  # compiles while `slow` is being traced
    finally:
        release.set()
        t.join()
    assert isinstance(eager, purejit.Array)
    np.testing.assert_array_equal(np.asarray(eager), np.arange(4.0) * 3)
    np.testing.assert_array_equal(np.asarray(other), np.arange(3) - 1)
    np.testing.assert_array_equal(np.asarray(out["slow"]), np.full(3, 3.0))


CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import purejit, purejit.numpy as jnp
    purejit.config.update(cache_dir=sys.argv[1])
    f = purejit.jit(lambda x, w: jnp.tanh(x @ w).sum(axis=0) * 2, recompile_warn_after=0)
    sizes = [int(s) for s in sys.argv[2].split(",")]
    out = {}
    for n in sizes:
        x = np.arange(n * 4, dtype=np.float32).reshape(n, 4) / (4 * n)
        w = np.ones((4, 3), np.float32) / 4
        out[n] = np.asarray(f(x, w)).tolist()
    s = purejit.cache_stats(f)
    print(json.dumps({"out": out, "compiles": s.compiles, "hits": s.persistent_hits}))
    """
)


def _spawn(cache_dir, sizes):
    env = {k: v for k, v in os.environ.items() if k != "PUREJIT_CACHE_DIR"}
    arg = ",".join(map(str, sizes))
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(cache_dir), arg],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _done(p):
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _want(n):
    x = np.arange(n * 4, dtype=np.float32).reshape(n, 4) / (4 * n)
    return np.tanh(x @ (np.ones((4, 3), np.float32) / 4)).sum(axis=0) * 2


def test_two_processes_sharing_a_cache_folder_stay_correct(tmp_path):
    sizes = [1, 2, 3, 5, 8]
    t0 = time.time()
    procs = [_spawn(tmp_path, sizes), _spawn(tmp_path, sizes[::-1])]
    results = [_done(p) for p in procs]
    for r in results:
        for n in sizes:
            np.testing.assert_allclose(r["out"][str(n)], _want(n), rtol=1e-5)
        assert r["compiles"] + r["hits"] == len(sizes)
    names = os.listdir(tmp_path)
    assert not [n for n in names if n.endswith(".tmp")]
    entries = [n for n in names if n.endswith((".pjx", ".pjir"))]
    assert len(entries) == 2 * len(sizes)  # one executable and one IR entry per signature
    for n in entries:
        key = n.split(".")[0]
        assert cc.parse_entry((tmp_path / n).read_bytes(), key)[0] is not None, n
    # a third process finds every signature there
    third = _done(_spawn(tmp_path, sizes))
    assert (third["compiles"], third["hits"]) == (0, len(sizes))
    assert third["out"] == results[0]["out"]
    assert time.time() - t0 < 170
