"""Donating programs in jaxlib's C++ jit dispatch: after the first call a donating step runs
without Python, gives the Python path's numbers, and purejit's guarantees hold: a donated
Array raises `DeletedArrayError` when used again (read, printed, passed to the same or
another jitted function), one buffer donated and passed twice raises purejit's ValueError,
a NumPy array at a donated parameter is never handed to an output, and a refused call never
runs the program."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.backend import cpp_jit
from purejit.compiler import cpp_dispatch
from purejit.runtime.array import DeletedArrayError

pytestmark = pytest.mark.skipif(
    not cpp_dispatch.available(), reason=f"no C++ dispatch: {cpp_jit.why_unavailable()}"
)


def step(params, x):
    """A training-step shape: every parameter updated (donated), a loss, a NumPy batch."""
    loss = sum((p * x.mean()).sum() for p in params.values())
    new = {k: p - 0.1 * p * x.sum() + 0.01 * loss for k, p in params.items()}
    return new, loss


def start():
    rng = np.random.default_rng(0)
    params = {f"w{i}": rng.standard_normal((3, 4)).astype(np.float32) for i in range(6)}
    batch = [rng.standard_normal(5).astype(np.float32) for _ in range(5)]
    return params, batch


def run_steps(f, params, batch):
    """Five steps with the state threaded through (device arrays in)."""
    state = {k: jnp.asarray(v) + 0 for k, v in params.items()}
    losses = []
    for x in batch:
        state, loss = f(state, x)
        losses.append(float(loss))
    return {k: np.asarray(v) for k, v in state.items()}, losses


def test_donating_step_runs_in_cpp_with_the_python_paths_numbers(python_calls, monkeypatch):
    params, batch = start()
    f = purejit.jit(step, donate_argnums=0)
    state, losses = run_steps(f, params, batch)
    assert python_calls == ["step"]  # the first call; the next four ran in C++
    assert (f.stats.misses, f.stats.hits, f.stats.compiles) == (1, 4, 1)

    plain_state, plain_losses = run_steps(purejit.jit(step), params, batch)  # no donation
    monkeypatch.setattr(cpp_jit, "_api", lambda: "switched off for this test")
    python = purejit.jit(step, donate_argnums=0)
    assert python._cpp is None
    py_state, py_losses = run_steps(python, params, batch)
    assert len(python_calls) == 1 + 1 + 5  # the first call of each; every call without C++
    assert losses == py_losses == plain_losses
    for k in params:
        np.testing.assert_array_equal(state[k], py_state[k])
        np.testing.assert_array_equal(state[k], plain_state[k])

    jax = pytest.importorskip("jax")
    j = jax.jit(step, donate_argnums=0)
    jstate = {k: jax.device_put(v) for k, v in params.items()}
    for x in batch:
        jstate, jloss = j(jstate, x)
    np.testing.assert_allclose(losses[-1], float(jloss), rtol=1e-5)
    for k in params:
        np.testing.assert_allclose(state[k], np.asarray(jstate[k]), rtol=1e-5, atol=1e-6)


def test_donated_array_raises_purejits_error_on_every_use(python_calls):
    f = purejit.jit(lambda x, y: (x * 2, y + 1), donate_argnums=0)
    g = purejit.jit(lambda x: (x - 1,), donate_argnums=0)
    y = jnp.ones(4) + 0
    x = f(jnp.ones(4) + 0, y)[0]
    g(f(jnp.ones(4) + 0, y)[0])  # both now run in C++
    assert python_calls == ["<lambda>", "<lambda>"]
    old = x
    x = f(old, y)[0]
    assert python_calls == ["<lambda>", "<lambda>"] and old.is_deleted()
    assert repr(old) == "Array(<deleted>)"
    for use in (
        lambda: old.host,
        lambda: np.asarray(old),
        lambda: old.tolist(),
        lambda: old.buffer,
        lambda: old.to_device(purejit.devices()[0]),
        lambda: f(old, y),  # the same function again (refused by PJRT, then Python)
        lambda: g(old),  # another donating function, in C++
        lambda: purejit.jit(lambda v: v + 1)(old),  # a new function: the Python path
    ):
        with pytest.raises(DeletedArrayError, match="donated .*jitted function"):
            use()
    np.testing.assert_allclose(np.asarray(x), 4.0)  # the outputs live on
    assert not y.is_deleted() and np.asarray(y).tolist() == [1.0] * 4
    assert old.block_until_ready() is old  # nothing to wait for, as on the Python path


def test_a_refused_call_runs_nothing_and_counts_no_hit(python_calls):
    h = purejit.jit(lambda a, b: (a * 2, b * 3), donate_argnums=(0, 1))
    a, b = h(jnp.ones(2) + 0, jnp.ones(2) + 0)
    a, b = h(a, b)  # C++
    dead = b
    a, b = h(a, b)
    fresh = jnp.ones(2) * 5
    hits = h.stats.hits
    with pytest.raises(DeletedArrayError):
        h(fresh, dead)
    # PJRT refused before running: the other donated argument is untouched (its value is
    # checked through the next call: reading it here would make a NumPy view of it)
    assert not fresh.is_deleted()
    assert h.stats.hits == hits
    out = h(fresh, b)  # and still runs in C++
    assert np.asarray(out[0]).tolist() == [10.0, 10.0] and fresh.is_deleted()
    assert h.stats.hits == hits + 1 and len(python_calls) == 2


def test_one_buffer_donated_and_passed_again_raises_purejits_error(python_calls):
    first = purejit.jit(lambda x, y: (x * 2, y + 1), donate_argnums=0)
    second = purejit.jit(lambda x, y: (x + y,), donate_argnums=1)
    both = purejit.jit(lambda x, y: (x * 2, y * 3), donate_argnums=(0, 1))
    z = jnp.ones(3) + 1
    for fn in (first, second, both):
        fn(jnp.ones(3) + 0, jnp.ones(3) + 0)
        fn(jnp.ones(3) + 0, jnp.ones(3) + 0)  # in C++
        calls = len(python_calls)
        with pytest.raises(ValueError, match="are the same buffer, and one of them is donated"):
            fn(z, z)
        assert len(python_calls) == calls + 1  # PJRT refused it; Python said why
        assert not z.is_deleted() and np.asarray(z).tolist() == [2.0] * 3
        z = jnp.ones(3) + 1  # a new buffer (reading z made a NumPy view of this one)


def buffer_address(a) -> int:
    return a._buf.unsafe_buffer_pointer()


def test_numpy_at_a_donated_parameter_never_becomes_an_output(python_calls):
    f = purejit.jit(lambda p, x: (p * 2 + x,), donate_argnums=0)
    mine = np.arange(4, dtype=np.float32)
    before = mine.copy()
    x = np.ones(4, np.float32)
    for _ in range(3):
        (out,) = f(mine, x)
        assert buffer_address(out) != mine.__array_interface__["data"][0]
        (out2,) = f(out, x)  # donates `out`: the NumPy array must not change
        np.testing.assert_array_equal(mine, before)
        assert out.is_deleted() and np.asarray(out2).tolist() == (before * 4 + 3).tolist()
    # the NumPy signature stays on the Python path; the device one runs in C++
    assert python_calls == ["<lambda>"] * 4


def test_a_buffer_numpy_reads_is_copied_not_donated(python_calls):
    f = purejit.jit(lambda p: (p + 1,), donate_argnums=0)
    (p,) = f(jnp.zeros(3) + 0)
    (p,) = f(p)
    view = np.asarray(p)  # on CPU a view of the buffer: PJRT will not hand it to an output
    (q,) = f(p)
    assert python_calls == ["<lambda>"]
    if p.is_deleted():  # a device whose host copy is a copy: donated as usual
        with pytest.raises(DeletedArrayError):
            p.host
    else:  # still valid, and unchanged
        assert np.asarray(p).tolist() == view.tolist() == [2.0] * 3
    assert np.asarray(q).tolist() == [3.0] * 3


def test_unusable_donation_warns_once_and_is_not_deleted(python_calls):
    f = purejit.jit(lambda p, q: p.sum() * q, donate_argnums=(0, 1))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        p, q = jnp.ones((2, 2)) + 0, jnp.ones(3) + 0
        for _ in range(3):
            q = f(p, q)
    assert sum("not usable" in str(w.message) for w in seen) == 1
    assert not p.is_deleted() and np.asarray(q).tolist() == [64.0] * 3
    assert python_calls == ["<lambda>"]


class _Owner:
    """Stands in for a donating jitted function: records the calls sent to Python."""

    class config:
        donate_argnums, donate_argnames = (0,), ()

    def __init__(self):
        self.sent = []

    def _dispatch(self, args, kwargs):
        self.sent.append(args)
        return ("python", None, None)


def test_only_pjrts_donation_refusal_is_sent_to_python():
    owner = _Owner()
    # a C function raising a ValueError that reads like PJRT's refusal (no Python frame)
    refused = cpp_dispatch.entry(owner, int)
    assert refused("Buffer has been deleted or donated.") == "python"
    assert owner.sent == [("Buffer has been deleted or donated.",)]

    def from_python(*args):  # the same words, raised by Python code below the call
        raise ValueError("Buffer has been deleted or donated.")

    with pytest.raises(ValueError, match="deleted or donated"):
        cpp_dispatch.entry(owner, from_python)(1)
    with pytest.raises(ValueError, match="invalid literal"):
        refused("something else")  # another error of C++ itself
    assert len(owner.sent) == 1

    class NoDonation:
        class config:
            donate_argnums, donate_argnames = (), ()

    assert cpp_dispatch.entry(NoDonation(), int) is int  # no Python frame in between


def test_every_use_of_an_array_donated_in_cpp_raises_purejits_error():
    """After a call in C++ the donated Arrays are marked as the Python path marks them, so
    paths that hand buffers straight to C++ (a non-donating jitted function already running
    in C++, eager ops and eager functions) raise purejit's error naming the function, never
    PJRT's "Buffer has been deleted or donated"."""

    def step(p):
        return {"w": p["w"] * 2, "b": [p["b"][0] + 1]}

    f = purejit.jit(step, donate_argnums=0)
    g = purejit.jit(lambda v: v + 1)
    p = {"w": jnp.ones(4) + 0, "b": [jnp.ones(2) + 0]}
    for _ in range(3):  # f and g both in C++
        live = jnp.ones(4) + 0
        g(live), g(live)
        old, p = p, f(p)
    assert g(live).shape == (4,) and f.stats.hits >= 2
    for use in (
        lambda: g(old["w"]),
        lambda: old["w"] * 2,
        lambda: jnp.exp(old["b"][0]),
        lambda: jnp.sum(old["w"]),
        lambda: float(old["b"][0][0]),
    ):
        with pytest.raises(DeletedArrayError, match="argument 0 of the jitted function step"):
            use()
    np.testing.assert_allclose(np.asarray(p["w"]), 8.0)
