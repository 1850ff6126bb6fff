"""Donating programs on 8 CPU devices: a one-device donating step runs where its arguments
are committed and, after its first call there, in jaxlib's C++ dispatch; so does a donating
SPMD program (cases_cpp_spmd.py tests that path further)."""

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit import api
from purejit.runtime.array import DeletedArrayError
from purejit.sharding import Mesh, NamedSharding
from purejit.sharding import PartitionSpec as P

DEVS = purejit.devices()
CALLS = []
_real = api.Jitted._dispatch


def _counting(self, args, kwargs):
    CALLS.append(self.__name__)
    return _real(self, args, kwargs)


api.Jitted._dispatch = _counting


def step(p, x):
    return p * 2 + x, (p * x).sum()


def case_donating_step_runs_on_the_committed_device_in_cpp():
    f = purejit.jit(step, donate_argnums=0)
    x = np.ones(4, np.float32)
    for dev, p in ((DEVS[0], jnp.ones(4) + 0), (DEVS[3], purejit.device_put(np.ones(4), DEVS[3]))):
        del CALLS[:]
        for _ in range(4):
            old = p
            p, _loss = f(p, x)
            assert p.devices() == {dev}, (dev, p.devices())
            assert old.is_deleted()
        assert CALLS == ["step"], CALLS  # the first call on this device; then C++
        assert np.asarray(p).tolist() == [31.0] * 4
        try:
            f(old, x)
        except DeletedArrayError as e:
            assert "donated" in str(e), e
        else:
            raise AssertionError("a donated array was accepted")


def case_spmd_donating_program_runs_in_cpp():
    mesh = Mesh(np.array(DEVS).reshape(8), ("x",))
    sharded = NamedSharding(mesh, P("x"))
    f = purejit.jit(lambda p: p * 3, donate_argnums=0, in_shardings=sharded, out_shardings=sharded)
    p = purejit.device_put(np.arange(16, dtype=np.float32), sharded)
    del CALLS[:]
    for _ in range(3):
        old = p
        p = f(p)
        assert old.is_deleted() and len(p.devices()) == 8
    assert CALLS == ["<lambda>"], CALLS  # the first call; then C++
    np.testing.assert_array_equal(np.asarray(p), np.arange(16) * 27.0)
    try:
        f(old)
    except DeletedArrayError as e:
        assert "donated" in str(e), e
    else:
        raise AssertionError("a donated array was accepted")
