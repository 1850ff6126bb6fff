"""One trace context per thread: a thread suspended in the middle of a trace never changes
what another thread traces, and the other thread's trace never reaches into it.

Each test runs thread A and thread B (the test's own thread) in turns: both meet at a
`threading.Barrier`, so the code between two meetings runs in one thread while the other
waits, suspended wherever it stands (inside a shard_map body, a jit trace, a cond body).
Every case here failed when this state lived in process-global stacks: the axis
environment, remat settings and records, effect frames, concrete inputs, batching notes.
"""

from __future__ import annotations

import threading

import jax
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import api, lax
from purejit.backend import cpp_jit
from purejit.compiler.lower import concrete_input
from purejit.lax import parallel
from purejit.sharding import Mesh, PartitionSpec as P


def in_turns(a, b):
    """Run `a(turn)` in a new thread and `b(turn)` in this one; `turn()` is a barrier both
    threads reach, so between two turns only one of them runs. Returns (a's, b's) result."""
    barrier = threading.Barrier(2, timeout=60)
    box: dict = {}

    def run_a():
        try:
            box["a"] = a(barrier.wait)
        except BaseException as e:  # noqa: BLE001 (re-raised in the test's thread)
            box["error"] = e
            barrier.abort()

    thread = threading.Thread(target=run_a)
    thread.start()
    try:
        got_b = b(barrier.wait)
    except threading.BrokenBarrierError:
        got_b = None  # thread A failed: its error is the one to show
    except BaseException:
        barrier.abort()
        raise
    finally:
        thread.join(60)
    assert not thread.is_alive(), "thread A did not finish"
    if "error" in box:
        raise box["error"]
    return box["a"], got_b


def _x():
    return np.arange(4, dtype=np.float32)


def test_axis_env_of_a_suspended_shard_map_body_is_not_another_threads():
    mesh = Mesh(np.array(jax.devices()[:1]), ("x",))

    def a(turn):
        def body(x):
            turn()  # B runs now, while this shard_map body is being traced
            turn()
            return lax.psum(x, "x")

        f = purejit.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P())
        return purejit.jit(f).lower(_x()).as_text()

    def b(turn):
        turn()
        try:
            purejit.jit(lambda x: lax.psum(x, "x")).lower(_x())
        except NameError as e:
            return str(e)
        finally:
            turn()
        return "lowered without error"

    text_a, err_b = in_turns(a, b)
    assert "unbound axis name 'x'" in err_b
    assert "all_reduce" in text_a  # A's psum still saw its own mesh


def _h(x):
    # tanh's derivative 1 - tanh(x)**2 is a cheap residual that automatic remat recomputes
    return jnp.sum(jnp.tanh(jnp.sin(x)) * 3.0)


def test_remat_settings_are_each_threads_own():
    def a(turn):
        def fa(x):
            turn()  # 1: A's jit trace (remat=False) is in progress
            turn()  # 2: B's (the default) is in progress too; A differentiates and finishes
            return purejit.grad(_h)(x)

        low = purejit.jit(fa, compiler_options={"remat": False}).lower(_x())
        turn()  # 3
        return [(r.mode, len(r.recomputed)) for r in low.residuals]

    def b(turn):
        turn()  # 1

        def fb(x):
            turn()  # 2
            turn()  # 3: B differentiates after A's lowering ended
            return purejit.grad(_h)(x)

        low = purejit.jit(fb).lower(_x())
        return [(r.mode, len(r.recomputed)) for r in low.residuals]

    records_a, records_b = in_turns(a, b)
    assert records_a == [("off", 0)]
    # the default plan recomputes tanh's derivative terms instead of saving them
    assert len(records_b) == 1 and records_b[0][0] == "auto" and records_b[0][1] > 0


def test_explain_records_stay_in_the_thread_that_made_them():
    def a(turn):
        def fa(x):
            turn()  # A's lowering collects records while B traces a gradient
            turn()
            return x * 2.0

        return purejit.jit(fa).lower(_x()).residuals

    def b(turn):
        turn()
        try:
            jaxpr = purejit.jit(purejit.grad(_h)).trace(_x()).jaxpr
        finally:
            turn()
        return jaxpr

    residuals_a, jaxpr_b = in_turns(a, b)
    assert residuals_a == []  # A differentiated nothing: B's record is not in A's list
    assert "tanh" in str(jaxpr_b)


def _ordered_in_cond(x):
    def then(v):
        purejit.debug.print("in the branch {}", v, ordered=True)
        return v + 1.0

    return lax.cond(x[0] > 0, then, lambda v: v - 1.0, x)


def test_effect_frames_are_each_threads_own():
    alone = purejit.jit(_ordered_in_cond).lower(_x()).as_text()

    def a(turn):
        def fa(x):
            def branch(v):
                turn()  # 1: A is inside a cond branch (its body frame is open)
                turn()  # 2: B opened its own branch's frame
                return v * 2.0

            return lax.cond(x[0] > 0, branch, lambda v: v, x)

        out = purejit.jit(fa).lower(_x())  # A closes its frame while B's is open
        turn()  # 3
        return out

    def b(turn):
        turn()  # 1

        first = [True]  # the branch is traced again once it asked for a token

        def g(x):
            def then(v):
                if first[0]:
                    first[0] = False
                    turn()  # 2: B's branch frame is open; A finishes its cond
                    turn()  # 3
                purejit.debug.print("in the branch {}", v, ordered=True)
                return v + 1.0

            return lax.cond(x[0] > 0, then, lambda v: v - 1.0, x)

        g.__name__ = "_ordered_in_cond"
        return purejit.jit(g).lower(_x()).as_text()

    _, text_b = in_turns(a, b)
    # the ordered callback's token is threaded through B's cond as when traced alone
    assert text_b == alone


def test_concrete_inputs_are_each_threads_own():
    seen = {}

    def a(turn):
        def fa(x):
            turn()  # 1: A's lowering (with concrete inputs) is in progress
            turn()  # 2: B's lowering is in progress too; A now finishes first
            return x + 1.0

        out = purejit.jit(fa)(purejit.numpy.asarray(_x()))
        turn()  # 3
        return np.asarray(out)

    def b(turn):
        turn()  # 1
        arr = jnp.asarray(_x() * 10)

        def fb(x):
            turn()  # 2
            turn()  # 3: A's lowering finished while B's is still tracing
            seen["b"] = concrete_input(x)
            return x * 2.0

        return np.asarray(purejit.jit(fb)(arr)), arr

    out_a, (out_b, arr_b) = in_turns(a, b)
    np.testing.assert_allclose(out_a, _x() + 1)
    np.testing.assert_allclose(out_b, _x() * 20)
    assert seen["b"] is arr_b  # the array B's input tracer stands for, still known


def test_batching_notes_stay_in_the_thread_that_made_them():
    def batched_cond(x):
        return purejit.vmap(lambda v: lax.cond(v > 0, lambda u: u + 1.0, lambda u: u, v))(x)

    def a(turn):
        def fa(x):
            turn()  # A's explain collects notes while B batches a cond
            turn()
            return x * 2.0

        return purejit.explain(fa, _x()).transforms

    def b(turn):
        turn()
        try:
            return purejit.explain(batched_cond, _x()).transforms
        finally:
            turn()

    notes_a, notes_b = in_turns(a, b)
    assert notes_a == []
    assert any("select" in n for n in notes_b)


@pytest.fixture(params=["cpp", "python"])
def dispatch(request, monkeypatch):
    """Run with jaxlib's C++ dispatch (where this jaxlib has it) and without it."""
    if request.param == "cpp" and not cpp_jit.available():
        pytest.skip(f"no C++ dispatch: {cpp_jit.why_unavailable()}")
    if request.param == "python":
        monkeypatch.setattr(cpp_jit, "_api", lambda: "PUREJIT_CPP_DISPATCH=0 (simulated)")
    return request.param


def test_bound_axes_are_part_of_the_dispatch_key(dispatch):
    mesh = Mesh(np.array(jax.devices()[:1]), ("x",))
    f = purejit.jit(lambda x: lax.psum(x, "x") * 2.0)
    assert (f._cpp is not None) == (dispatch == "cpp")
    x = jnp.asarray(_x()) + 0  # on the device
    with parallel.axis_env(mesh):
        for _ in range(3):
            np.testing.assert_allclose(np.asarray(f(x)), _x() * 2)
    assert f.stats.compiles == 1
    with pytest.raises(NameError, match="unbound axis name 'x'"):
        f(x)  # the executable made under the mesh is not this call's
    with parallel.axis_env(mesh):
        np.testing.assert_allclose(np.asarray(f(x)), _x() * 2)
    assert f.stats.compiles == 1


@pytest.mark.parametrize("via", ["cpp", "python"])
def test_eight_threads_compile_each_signature_once(via, monkeypatch):
    if via == "python":
        monkeypatch.setattr(cpp_jit, "_api", lambda: "PUREJIT_CPP_DISPATCH=0 (simulated)")
    elif not cpp_jit.available():
        pytest.skip(f"no C++ dispatch: {cpp_jit.why_unavailable()}")
    f = purejit.jit(lambda x: jnp.cos(x) * 3 - x, recompile_warn_after=0)
    assert isinstance(f, api.Jitted) and (f._cpp is not None) == (via == "cpp")
    sizes, repeats, threads = list(range(1, 7)), 3, 8
    start = threading.Barrier(threads, timeout=60)
    wrong = []

    def worker(t):
        start.wait()
        for k in range(len(sizes)):
            n = sizes[(k + t) % len(sizes)]  # each thread meets the shapes in its own order
            x = np.full(n, 0.1 * t, np.float32)
            for _ in range(repeats):
                y = np.asarray(f(x))
                if y.shape != (n,) or not np.allclose(y, np.cos(x) * 3 - x, rtol=1e-6):
                    wrong.append((t, n))

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join(120)
    assert wrong == []
    s = purejit.cache_stats(f)
    assert (s.traces, s.compiles, s.misses) == (len(sizes),) * 3
    assert s.hits + s.misses == threads * len(sizes) * repeats
    assert len(s.miss_reasons) == len(sizes) - 1
