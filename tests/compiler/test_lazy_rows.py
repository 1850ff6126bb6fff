"""A stacked program's per-layer outputs are lazy rows of the output stack (`Array.row`):
no view made and nothing waited for until something reads one; dispatch passes the stack
of rows given in order (a donated training step makes no view at all); reading a row (NumPy,
an eager op, another jitted function through jaxlib's C++ dispatch) gives its values, also
while the program writing the stack may still run; a donated row is a deleted array; one
layer replaced between donated calls rebuilds the stack."""

from __future__ import annotations

import pickle

import jax
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit.backend import pjrt, row_views
from purejit.compiler import stacked_dispatch as sd
from purejit.runtime.array import Array, DeletedArrayError
from tests.compiler.test_stacked_params import D, _model, _on_device, _step
from tests.passes.roll_layers_util import ROLL, leaves, mlp_params

pytestmark = pytest.mark.skipif(not row_views.available(), reason="no DLPack import here")


def _rows(n=4, seed=0):
    """A donated step's outputs (lazy rows), and the same step's result without stacks."""
    ps = mlp_params(n, D)
    x = np.random.default_rng(seed).standard_normal((2, D), np.float32)
    step = _step(_model())
    inside = purejit.jit(step, compiler_options={**ROLL, "stacked_params": False})
    want = leaves(inside(ps, x))
    rolled = purejit.jit(step, donate_argnums=0, compiler_options=ROLL)
    return rolled(_on_device(ps), x), want, rolled, x


def test_a_row_answers_without_a_view_and_reads_right_when_asked():
    got, want, _, _ = _rows()
    rows = jax.tree.leaves(got)
    made = row_views.made()
    r = rows[1]
    assert r._buf is None and r._host is None and sd.stack_of(r) is not None
    assert not r.is_deleted()
    assert r.device == pjrt.default_device() and r.sharding.device_set == {r.device}
    assert r.block_until_ready() is r
    assert (r.shape, r.dtype) == (want[1].shape, want[1].dtype)
    assert row_views.made() == made and r._buf is None  # none of that made a view
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(r)), want[1])
    assert r._buf is not None and row_views.made() == made + 1  # materialised once, kept
    assert sd.stack_of(r) is not None  # still the row (a view of it)
    np.testing.assert_array_equal(np.asarray(r), want[1])
    assert row_views.made() == made + 1
    assert repr(rows[2]).startswith("Array([")
    # an eager op, a jitted function: each reads its row
    np.testing.assert_allclose(np.asarray(pnp.sum(rows[3])), want[3].sum(), rtol=1e-5)
    f = purejit.jit(lambda v: v * 2)
    for k in (4, 6):
        np.testing.assert_array_equal(np.asarray(f(rows[k])), 2 * want[k])
    rows[7].copy_to_host_async()
    np.testing.assert_array_equal(np.asarray(rows[7]), want[7])


def test_jaxlibs_cpp_dispatch_misses_on_a_lazy_row_and_reads_it_materialised(python_calls):
    got, want, _, _ = _rows(6, seed=1)
    bs = [v for v in jax.tree.leaves(got) if v.ndim == 1]  # the biases, one shape
    f = purejit.jit(lambda v: v + 1.0)
    # an ordinary array twice: the second call runs in C++
    plain = purejit.device_put(np.ones(D, np.float32))
    f(plain), f(plain)
    calls = len(python_calls)
    f(plain)
    assert len(python_calls) == calls  # C++ ran it
    # a lazy row has no buffer for C++ to read: it misses to Python, which reads the row
    wb = [w for w in want if w.ndim == 1]
    np.testing.assert_array_equal(np.asarray(f(bs[0])), wb[0] + 1.0)
    assert len(python_calls) == calls + 1 and bs[0]._buf is not None
    # materialised, the same row runs in C++, and another lazy row misses again
    np.testing.assert_array_equal(np.asarray(f(bs[0])), wb[0] + 1.0)
    np.testing.assert_array_equal(np.asarray(f(bs[1])), wb[1] + 1.0)
    assert len(python_calls) <= calls + 2


def test_a_row_read_while_its_program_may_run_reads_what_it_wrote():
    # a program long enough to be running still when its rows are read at once: a view
    # made before the stack is written would read other bytes
    n, d = 8, max(256, D)
    ps = mlp_params(n, d)
    x = np.random.default_rng(2).standard_normal((1024, d), np.float32)
    loss = lambda ps, x: pnp.sum(_model()(ps, x) ** 2)  # noqa: E731
    rolled = purejit.jit(purejit.grad(loss), compiler_options=ROLL)
    want = leaves(
        purejit.jit(purejit.grad(loss), compiler_options={**ROLL, "stacked_params": False})(ps, x)
    )
    dev = _on_device(ps)
    rolled(dev, x)  # compiled
    g = purejit.jit(lambda v: v * 1.0)
    for _ in range(3):
        # layer 0's gradients are the last rows the backward loop writes
        got = jax.tree.leaves(rolled(dev, x))
        np.testing.assert_array_equal(np.asarray(g(got[1])), want[1])  # another program
        np.testing.assert_array_equal(np.asarray(got[0]), want[0])  # NumPy


def test_donated_rows_are_deleted_and_twice_in_a_donated_group_is_refused():
    got, _, rolled, x = _rows(3, seed=3)
    again = rolled(got, x)
    for r in jax.tree.leaves(got):
        assert r.is_deleted()
    with pytest.raises(DeletedArrayError, match="donated"):
        np.asarray(got[0]["w"])
    with pytest.raises(DeletedArrayError, match="donated"):
        purejit.jit(lambda v: v + 1)(got[1]["b"])
    again[1]["w"] = again[0]["w"]  # one lazy row as two donated leaves
    with pytest.raises(ValueError, match="same buffer"):
        rolled(again, x)
    r = again[2]["b"]
    r.delete()
    assert r.is_deleted() and type(r) is Array
    with pytest.raises(DeletedArrayError):
        np.asarray(r)


def _donated_step(seed):
    """Parameters, input, the step, the rolled donating step and the group of its w's."""
    ps, x = mlp_params(4, D), np.random.default_rng(seed).standard_normal((2, D), np.float32)
    step = _step(_model())
    rolled = purejit.jit(step, donate_argnums=0, compiler_options=ROLL)
    return ps, x, step, rolled, rolled.lower(ps, x).stack_plan.groups[1]


def test_a_layer_replaced_between_donated_steps_rebuilds_the_stack():
    ps, x, step, rolled, g = _donated_step(4)
    a = rolled(_on_device(ps), x)
    a[2]["w"] = purejit.device_put(np.asarray(a[2]["w"]) * 0.5)  # the user's own array
    host = jax.tree.map(np.asarray, a)
    b = rolled(a, x)
    assert sd.LAST[g] in ("host", "device")  # built again, not found
    for u, v in zip(leaves(b), leaves(purejit.jit(step)(host, x))):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)
    c = rolled(b, x)  # and found again
    assert sd.LAST[g] == "found"
    for u, v in zip(leaves(c), leaves(purejit.jit(step)(purejit.jit(step)(host, x), x))):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_both_build_routes_read_lazy_rows():
    got, want, rolled, x = _rows(3, seed=5)
    g = rolled.lower(got, x).stack_plan.groups[1]  # the w's
    members = [jax.tree.leaves(got)[k] for k in g.leaves]
    assert all(a._buf is None for a in members)
    dev = pjrt.default_device()
    on_host = np.asarray(sd.build_on_host(g, members, dev))
    assert all(a._buf is None for a in members)  # read from the stack's host copy
    on_device = np.asarray(sd.build_on_device(g, members, dev))  # materialised: views
    np.testing.assert_array_equal(on_device, on_host)
    want_w = np.concatenate([want[k].reshape(-1) for k in g.leaves])
    np.testing.assert_array_equal(on_host.reshape(-1), want_w)


def test_a_live_view_of_a_row_keeps_its_stack_from_being_donated():
    # a program reading a row's view may still run when the next call starts: PJRT orders a
    # donation after the uses of the donated stack, not of views into it, so the stack is
    # not donated while any view of it lives (a copy is built and donated instead)
    ps, x, step, rolled, g = _donated_step(6)
    a = rolled(_on_device(ps), x)
    b = rolled(a, x)
    assert sd.LAST[g] == "found"
    host = jax.tree.map(np.asarray, b)  # NumPy reads leave no view: b's stack stays donatable
    assert row_views.live_views_of(sd.stack_of(b[1]["w"])[0]) == 0
    purejit.jit(lambda v: v * 2)(b[1]["w"])  # a program reads row 1 through its view
    assert row_views.live_views_of(sd.stack_of(b[1]["w"])[0]) == 1
    c = rolled(b, x)
    assert sd.LAST[g] in ("host", "device")  # not "found": a copy was donated
    for u, v in zip(leaves(c), leaves(purejit.jit(step)(host, x))):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)
    d = rolled(c, x)  # c's rows have no view: found and donated again
    assert sd.LAST[g] == "found"
    assert all(r.is_deleted() for r in jax.tree.leaves(c)) and not d[0]["w"].is_deleted()
