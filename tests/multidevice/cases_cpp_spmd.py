"""SPMD programs in jaxlib's C++ dispatch on 8 CPU devices: after the first call of a
signature whose arguments are committed arrays laid out as the program's parameters, calls
run in C++; any other layout, a NumPy argument or a donated array takes purejit's Python
path, which reshards or raises its own errors."""

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit import api, lax
from purejit.backend import spmd as backend_spmd
from purejit.runtime.array import DeletedArrayError
from purejit.sharding import Mesh, NamedSharding
from purejit.sharding import PartitionSpec as P

DEVS = purejit.devices()
MESH = Mesh(np.array(DEVS[:4]), ("dp",))
CALLS = []
_real = api.Jitted._dispatch


def _counting(self, args, kwargs):
    CALLS.append(self.__name__)
    return _real(self, args, kwargs)


api.Jitted._dispatch = _counting


def _dp_step():
    def body(state, x):
        w, t = state
        s = lax.psum(jnp.sum(x), "dp")
        return ([{"a": v["a"] - 0.5 * s, "b": v["b"] * 2.0} for v in w], t + 1.0), s

    spec = ([{"a": P(), "b": P()}] * 3, P())
    return purejit.shard_map(body, mesh=MESH, in_specs=(spec, P("dp")), out_specs=(spec, P()))


def _state(sh=None):
    sh = sh or NamedSharding(MESH, P())
    w = [{"a": np.full(4, i, np.float32), "b": np.ones(2, np.float32)} for i in range(3)]
    put = purejit.device_put
    return [{k: put(v, sh) for k, v in d.items()} for d in w], put(np.zeros((), np.float32), sh)


def _batch():
    return purejit.device_put(np.ones(8, np.float32), NamedSharding(MESH, P("dp")))


def case_donating_shard_map_step_runs_in_cpp():
    step = _dp_step()
    f = purejit.jit(step, donate_argnums=0)
    state, x = _state(), _batch()
    del CALLS[:]
    hits = f.stats.hits
    for _ in range(5):
        old = state
        state, s = f(state, x)
        assert old[0][0]["a"].is_deleted() and old[1].is_deleted()
    assert len(CALLS) == 1, CALLS  # the first call only; then C++
    assert f.stats.hits - hits == 4, f.stats.hits - hits  # the C++ calls count as hits
    assert float(s) == 8.0
    np.testing.assert_array_equal(np.asarray(state[0][2]["a"]), np.full(4, 2.0 - 20.0))
    np.testing.assert_array_equal(np.asarray(state[0][0]["b"]), np.full(2, 32.0))
    assert float(state[1]) == 5.0 and not x.is_deleted()
    assert len(state[0][0]["a"].devices()) == 4
    # a donated array raises purejit's error, naming the function
    try:
        f(old, x)
    except DeletedArrayError as e:
        assert "donated" in str(e), e
    else:
        raise AssertionError("a donated array was accepted")


def case_other_layouts_take_the_python_path():
    mesh = Mesh(np.array(DEVS[:4]), ("x",))
    split = NamedSharding(mesh, P("x"))
    f = purejit.jit(lambda p, q: (p * 2 + q, q), in_shardings=(split, split), out_shardings=split)
    p = purejit.device_put(np.arange(8, dtype=np.float32), split)
    q = purejit.device_put(np.ones(8, np.float32), split)
    del CALLS[:]
    for _ in range(3):
        out, q2 = f(p, q)
    assert len(CALLS) == 1, CALLS
    assert not p.is_deleted() and q2.sharding == q.sharding
    np.testing.assert_array_equal(np.asarray(out), np.arange(8) * 2 + 1)
    # replicated, on other devices, or NumPy: the Python path places it, every call
    other = Mesh(np.array(DEVS[4:]), ("x",))
    for arg in (
        purejit.device_put(np.ones(8, np.float32), NamedSharding(mesh, P())),
        purejit.device_put(np.ones(8, np.float32), NamedSharding(other, P("x"))),
        np.ones(8, np.float32),
    ):
        del CALLS[:]
        for _ in range(2):
            out, q2 = f(p, arg)
            np.testing.assert_array_equal(np.asarray(out), np.arange(8) * 2 + 1)
            assert q2.sharding == split, q2.sharding
        assert len(CALLS) == 2, (arg, CALLS)
    # and the placed signature still runs in C++
    del CALLS[:]
    f(p, q)
    assert CALLS == [], CALLS
    try:
        f(p, purejit.device_put(np.ones(6, np.float32), NamedSharding(mesh, P())))
    except (TypeError, ValueError) as e:
        assert "6" in str(e) or "shape" in str(e), e
    else:
        raise AssertionError("a wrong shape was accepted")


def case_a_donated_buffer_passed_twice_names_the_arguments():
    mesh = Mesh(np.array(DEVS[:4]), ("x",))
    split = NamedSharding(mesh, P("x"))
    f = purejit.jit(lambda p, q: p + q, donate_argnums=0, in_shardings=split, out_shardings=split)
    p = purejit.device_put(np.ones(8, np.float32), split)
    q = purejit.device_put(np.ones(8, np.float32), split)
    for _ in range(3):
        p = f(p, q)  # C++ after the first call
    try:
        f(p, p)
    except ValueError as e:
        assert "same buffer" in str(e), e
    else:
        raise AssertionError("a donated buffer passed twice was accepted")
    np.testing.assert_array_equal(np.asarray(p), np.full(8, 4.0))
    # a NumPy argument beside them (the check's other path; the Python path places it)
    old, p = p, f(p, np.ones(8, np.float32))
    assert old.is_deleted()
    np.testing.assert_array_equal(np.asarray(p), np.full(8, 5.0))


def case_many_unsynchronised_calls_stay_paced_on_cpu():
    step = purejit.jit(_dp_step(), donate_argnums=0)
    state, x = _state(), _batch()
    for _ in range(200):  # the CPU client would deadlock with too many calls in flight
        state, s = step(state, x)
        assert len(backend_spmd._in_flight) <= backend_spmd.CPU_MAX_IN_FLIGHT
    assert float(state[1]) == 200.0
