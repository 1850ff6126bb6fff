"""Exceptions raised in host callbacks reach the caller as themselves (beyond JAX, which wraps
them in `JaxRuntimeError: INTERNAL: CpuCallback error`), with the callback's frames in the
traceback and the runtime error chained as the cause; on CPU and, where one is present, GPU.
"""

import threading
import traceback

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import debug
from purejit.backend import callback_errors

F3 = purejit.ShapeDtypeStruct((3,), np.float32)


class UserError(ValueError):
    pass


def _raise_user(x):
    raise UserError(f"user error on {np.asarray(x).shape}")


def _raise_interrupt(x):
    raise KeyboardInterrupt


def _programs(cb):
    """Programs running `cb` through each callback API, under jit."""

    def via_debug(x):
        debug.callback(cb, x)
        return x + 1

    def via_debug_ordered(x):
        debug.callback(cb, x, ordered=True)
        return x * 2

    def via_pure(x):
        return purejit.pure_callback(lambda v: cb(v) or v, F3, x) + 1

    def via_io(x):
        return debug.io_callback(lambda v: cb(v) or v, F3, x, ordered=True) * 2

    def in_scan(x):
        def body(c, xi):
            debug.callback(cb, xi)
            return c + xi, xi

        return purejit.lax.scan(body, 0.0, x)[0]

    return [via_debug, via_debug_ordered, via_pure, via_io, in_scan]


def _run(f, x):
    out = f(x)
    # a GPU reports a failed callback without results at the next synchronisation
    purejit.tree_util.tree_map(lambda a: a.block_until_ready(), out)
    return out


@pytest.mark.parametrize("api", range(5))
def test_user_exception_reaches_the_caller_as_itself(api):
    f = purejit.jit(_programs(_raise_user)[api])
    before = callback_errors.pending()
    for _ in range(2):  # the compiled call, then the cached one
        with pytest.raises(UserError, match="user error on") as info:
            _run(f, jnp.ones(3, jnp.float32))
        frames = [fr.name for fr in traceback.extract_tb(info.value.__traceback__)]
        assert "_raise_user" in frames  # the callback's own frame is in the traceback
        # jaxlib's runtime error is the cause, naming the exception kept for the caller
        assert "purejit-host-callback-error#" in str(info.value.__cause__)
    assert callback_errors.pending() == before  # each kept exception was claimed


@pytest.mark.parametrize("api", range(5))
def test_keyboard_interrupt_reaches_the_caller(api):
    f = purejit.jit(_programs(_raise_interrupt)[api])
    with pytest.raises(KeyboardInterrupt):
        _run(f, jnp.ones(3, jnp.float32))


def test_outside_jit_the_callback_raises_at_once():
    for cb_api in _programs(_raise_user)[:4]:
        with pytest.raises(UserError):
            cb_api(jnp.ones(3, jnp.float32))


def test_wrong_result_shape_keeps_purejits_message():
    f = purejit.jit(lambda x: purejit.pure_callback(lambda v: np.zeros(4, np.float32), F3, x))
    with pytest.raises(RuntimeError, match=r"result 0 is float32\[4\], declared f32\[3\]"):
        _run(f, jnp.ones(3, jnp.float32))
    g = purejit.jit(lambda x: purejit.pure_callback(lambda v: (v, v), F3, x))
    with pytest.raises(RuntimeError, match="pure_callback: <lambda> returned"):
        _run(g, jnp.ones(3, jnp.float32))


def test_under_grad_and_vmap():
    def loss(x):
        debug.callback(_raise_user, x)
        return (x * x).sum()

    with pytest.raises(UserError):
        _run(purejit.jit(purejit.grad(loss)), jnp.ones(3, jnp.float32))
    with pytest.raises(UserError):
        _run(purejit.jit(purejit.vmap(loss)), jnp.ones((2, 3), jnp.float32))


def test_threads_each_get_their_own_exception():
    def cb(x):
        raise UserError(f"value {int(np.asarray(x)[0])}")

    f = purejit.jit(lambda x: purejit.pure_callback(cb, F3, x) + 1)
    before = callback_errors.pending()
    got = {}

    def work(k):
        try:
            _run(f, jnp.full(3, k, jnp.float32))
        except UserError as e:
            got[k] = str(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {k: f"value {k}" for k in range(6)}
    assert callback_errors.pending() == before  # each was claimed by its own thread


def test_io_callback_returns_and_orders():
    seen = []

    def log(v):
        seen.append(float(np.asarray(v).sum()))
        return np.asarray(v) * 3

    @purejit.jit
    def f(x):
        a = debug.io_callback(log, F3, x, ordered=True)
        b = debug.io_callback(log, F3, x + 1, ordered=True)
        return a + b

    out = f(jnp.ones(3, jnp.float32))
    np.testing.assert_allclose(np.asarray(out), np.full(3, 9.0))
    assert seen == [3.0, 6.0]
    # unused results: the call still runs (it has effects)
    seen.clear()
    purejit.jit(lambda x: (debug.io_callback(log, F3, x), x)[1])(jnp.ones(3, jnp.float32))
    assert seen == [3.0]


def test_a_runtime_error_without_callback_is_left_alone():
    class Other(RuntimeError):
        pass

    with pytest.raises(Other):
        try:
            raise Other("not from a callback")
        except Other as e:
            callback_errors.reraise(e)  # returns: nothing of ours is named
            raise
