"""A jitted function called inside another trace is traced once per signature, and each call
site gets its own copy of that trace (purejit/compiler/callees.py)."""

from __future__ import annotations

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit.ir import interpret, print_function
from purejit.passes._isomorphism import compare


def _layers(n=5):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((4, 4)).astype(np.float32) * 0.3 for _ in range(n)]


X = np.ones((2, 4), np.float32)


def _model(layer):
    def model(x, ws):
        for w in ws:
            x = layer(x, w)
        return x.sum()

    return model


def test_a_layer_called_in_a_loop_is_traced_once_and_each_call_gets_its_own_copy():
    runs = []

    @purejit.jit
    def layer(x, w):
        runs.append(1)
        return jnp.tanh(x @ w)

    f = purejit.jit(_model(layer))
    fn = f.lower(X, _layers()).traced
    calls = [op for op in fn.walk() if op.name == "call"]
    assert len(runs) == 1 and layer.callees.hits == 4 and len(calls) == 5
    # no two call ops share a region or a value, and every region prints the same
    regions = [op.regions[0] for op in calls]
    assert len({id(r) for r in regions}) == 5
    values = [v for r in regions for op in r.ops for v in op.results]
    assert len({id(v) for v in values}) == len(values)
    names = [[(op.name, [str(v.type) for v in op.results]) for op in r.ops] for r in regions]
    assert all(n == names[0] for n in names) and names[0]
    assert print_function(regions[1]).count("\n") == print_function(regions[0]).count("\n")
    # the same numbers as the program traced without the kept traces, and as NumPy
    want = X
    for w in _layers():
        want = np.tanh(want @ w)
    np.testing.assert_allclose(float(f(X, _layers())), want.sum(), rtol=1e-5)
    layer.callees.clear()
    np.testing.assert_allclose(np.asarray(interpret(fn, X, *_layers())[0]), want.sum(), rtol=1e-5)
    # grad through the calls reuses the trace too
    g = purejit.jit(purejit.grad(_model(layer), argnums=1))(X, _layers())
    assert len(runs) == 2 and len(g) == 5


def test_another_signature_traces_again():
    runs = []

    @purejit.jit
    def layer(x, w):
        runs.append(x.shape)
        return x @ w

    def model(x, y, w):
        return layer(x, w).sum() + layer(y, w).sum() + layer(x, w).sum()

    purejit.jit(model)(X, np.ones((3, 4), np.float32), np.eye(4, dtype=np.float32))
    assert runs == [(2, 4), (3, 4)]


def test_a_trace_with_an_effect_or_a_captured_value_is_not_kept():
    runs = []

    @purejit.jit
    def noisy(x):
        runs.append(1)
        purejit.debug.callback(lambda v: None, x)
        return x + 1

    purejit.jit(lambda x: noisy(noisy(x)))(X)
    assert len(runs) == 2 and noisy.callees.hits == 0

    def outer(x, s):
        @purejit.jit
        def scaled(v):  # reads `s`, a value of the enclosing trace
            return v * s

        return scaled(scaled(x))

    np.testing.assert_allclose(np.asarray(purejit.jit(outer)(X, np.float32(3))), X * 9)


def test_a_trace_that_differentiates_inside_is_not_kept():
    runs = []

    @purejit.jit
    def inner(x):
        runs.append(1)
        return purejit.grad(lambda v: (v**3).sum())(x)

    out = purejit.jit(lambda x: inner(inner(x)))(X)
    # the differentiation leaves a record for explain: both calls traced
    assert len(runs) == 2
    np.testing.assert_allclose(np.asarray(out), 3 * (3 * X**2) ** 2, rtol=1e-5)


def test_a_kept_trace_with_a_custom_vjp_differentiates_as_the_flat_program():
    @purejit.custom_vjp
    def f(x):
        return jnp.sin(x)

    def fwd(x):
        return jnp.sin(x), (jnp.cos(x), x)

    def bwd(res, g):
        return (g * res[0] * 2.0,)  # not sin's derivative: the rule must be the one used

    f.defvjp(fwd, bwd)

    def body(x, w):
        return f(x * w) + x

    layer = purejit.jit(body)
    ws = [np.float32(0.5 + 0.1 * i) * np.ones(3, np.float32) for i in range(4)]
    x = np.linspace(0.1, 1, 3).astype(np.float32)
    kept = purejit.jit(purejit.grad(_model(layer), argnums=(0, 1)))(x, ws)
    assert layer.callees.hits == 3
    flat = purejit.jit(purejit.grad(_model(body), argnums=(0, 1)))(x, ws)
    for a, b in zip(purejit.tree_util.tree_leaves(kept), purejit.tree_util.tree_leaves(flat)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_the_linearized_calls_of_one_layer_are_copies_of_one_function_and_others_are_not():
    # grad of a chain of one jitted layer: each call's known and transposed functions are
    # copies of the first call's (one copy class each, so the pass cache's key and
    # roll_layers need no proof); a layer with another constant in the chain gets its own
    @purejit.jit
    def layer(x, w):
        return jnp.tanh(x @ w)

    @purejit.jit
    def other(x, w):
        return jnp.tanh(x @ w) * 2.0

    def model(x, ws):
        for k, w in enumerate(ws):
            x = (other if k == 2 else layer)(x, w)
        return x.sum()

    # (x differentiated too: every call of `layer` is linearized in all its operands)
    fn = purejit.jit(purejit.grad(model, argnums=(0, 1))).lower(X, _layers()).traced
    calls = [op for op in fn.ops if op.name == "call"]
    by_name: dict = {}
    for op in calls:
        by_name.setdefault(op.attrs["callee"], []).append(op.regions[0])
    for name in ("_fwd", "_lin_t"):
        regions = [r for n, rs in by_name.items() if n.endswith(name) for r in rs]
        assert len(regions) == 5 and len({id(r) for r in regions}) == 5
        layer_rs = [r for k, r in enumerate(_in_order(calls, name)) if k != 2]
        classes = {id(r.copy_class) for r in layer_rs}
        assert len(classes) == 1 and layer_rs[0].copy_class is not None
        odd = _in_order(calls, name)[2]
        assert odd.copy_class is not layer_rs[0].copy_class
        assert compare(odd, layer_rs[0]).reason is not None
    # the numbers: as the program traced flat, and as NumPy's chain rule
    got = purejit.jit(purejit.grad(model, argnums=(0, 1)))(X, _layers())
    flat = purejit.jit(purejit.grad(_flat_model, argnums=(0, 1)))(X, _layers())
    leaves = purejit.tree_util.tree_leaves
    for a, b in zip(leaves(got), leaves(flat)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _flat_model(x, ws):
    for k, w in enumerate(ws):
        x = jnp.tanh(x @ w) * (2.0 if k == 2 else 1.0)
    return x.sum()


def _in_order(calls, suffix):
    return [op.regions[0] for op in calls if op.attrs["callee"].endswith(suffix)]
