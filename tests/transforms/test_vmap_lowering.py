"""What `jit(vmap(f))` emits, and the three lowerings of `vmap` (batched, loop, auto).

The batched program must be as good as JAX's: a `dot_general` with one batched operand
contracts the unbatched one as it is (no copy of it per example), two batched operands put
the batch first among the dot's batch dimensions. The lowerings must agree with `jax.vmap`
on values; "loop" is a `scan` over the examples, "auto" measures both once (cached) and
falls back to "batched" when measurement is off; `explain` says which ran.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tolerance import dot_tol

import purejit
import purejit.numpy as pnp
from purejit import lax as plax
from purejit.config import config
from purejit.transforms import vmap_lowering

RNG = np.random.default_rng(0)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _ops(fn):
    """(op, {operand: producing op}) for every op of an IR function, regions included."""
    made = {}
    out = []
    for op in fn.walk():
        for r in op.results:
            made[r] = op
        out.append(op)
    return out, made


def _dots_and_producers(lowered):
    ops, made = _ops(lowered.fn)
    dots = [op for op in ops if op.name == "dot_general"]
    return dots, made


def _mlp(xp, params, x):
    (w1, b1), (w2, b2) = params
    return xp.tanh(x @ w1 + b1) @ w2 + b2


ENSEMBLE = (((_f32(4, 6, 8), _f32(4, 8)), (_f32(4, 8, 3), _f32(4, 3))), _f32(5, 6))


def test_unbatched_dot_operand_is_never_broadcast():
    """Ensemble (weights batched, inputs shared) and per-example (inputs batched, weights
    shared): every dot reads the shared operand straight from the parameters."""
    params, x = ENSEMBLE
    cases = [
        ((params, x), (0, None), lambda p, x: _mlp(pnp, p, x), lambda p, x: _mlp(jnp, p, x)),
        (
            (jax.tree_util.tree_map(lambda a: a[0], params), _f32(7, 6)),
            (None, 0),
            lambda p, x: _mlp(pnp, p, x),
            lambda p, x: _mlp(jnp, p, x),
        ),
    ]
    for args, axes, pf, jf in cases:
        g = purejit.jit(purejit.vmap(pf, in_axes=axes))
        lowered = g.lower(*args)
        dots, made = _dots_and_producers(lowered)
        assert len(dots) == 2
        for d in dots:
            for v in d.operands:
                producer = made.get(v)
                assert producer is None or producer.name != "broadcast_in_dim", (
                    f"{d} reads a broadcast operand:\n{lowered.ir()}"
                )
        text = lowered.as_text()
        # no value of the shared operand's shape times the batch anywhere in the program
        shared = x.shape if axes[1] is None else args[0][0][0].shape
        batch = 4 if axes[1] is None else 7
        assert f"tensor<{batch}x{'x'.join(map(str, shared))}xf32>" not in text
        want = jax.jit(jax.vmap(jf, in_axes=axes))(*args)
        np.testing.assert_allclose(np.asarray(g(*args)), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_two_batched_dot_operands_put_the_batch_first():
    a, b = _f32(3, 4, 5), _f32(5, 3, 6)  # batched at 0 and at 1

    def f(xp):
        return lambda x, y: xp.tanh(x) @ y

    g = purejit.jit(purejit.vmap(f(pnp), in_axes=(0, 1)))
    lowered = g.lower(a, b)
    dots, _ = _dots_and_producers(lowered)
    assert len(dots) == 1
    attrs = dots[0].attrs
    assert attrs["lhs_batching_dimensions"][0] == 0 and attrs["rhs_batching_dimensions"][0] == 0
    want = jax.jit(jax.vmap(f(jnp), in_axes=(0, 1)))(a, b)
    np.testing.assert_allclose(np.asarray(g(a, b)), np.asarray(want), rtol=1e-5, atol=1e-5)


# ---- lowerings -----------------------------------------------------------------------------


def _cond_fn(xp, lax):
    def f(w, x):
        return lax.cond(x[0] > 0, lambda v: xp.tanh(w @ v), lambda v: v * 0.5, x)

    return f


def _newton(xp, lax):
    def f(a):
        def body(c):
            i, x = c
            return i + 1, x - (x * x * x - a) / (3.0 * x * x)

        return lax.while_loop(lambda c: c[0] < 3 + (a[0] > 0), body, (0, a + 2.0))[1]

    return f


def _outs(xp, lax):
    return lambda w, x: (x.sum(), w * 2, (x * w[0]).sum())


LOWERING_CASES = [
    ("ensemble", lambda xp, lax: lambda p, x: _mlp(xp, p, x), ENSEMBLE, (0, None), 0, False),
    ("cond", _cond_fn, (_f32(4, 4), _f32(6, 4)), (None, 0), 0, False),
    ("while", _newton, (_f32(5, 3),), (1,), -1, False),
    ("out_axes", _outs, (_f32(5, 2), _f32(3)), (0, None), (None, 1, None), True),
]


@pytest.mark.parametrize(
    "name,make,args,in_axes,out_axes,sum_match", LOWERING_CASES, ids=[c[0] for c in LOWERING_CASES]
)
def test_lowerings_agree_with_jax_vmap(name, make, args, in_axes, out_axes, sum_match):
    if sum_match:  # JAX has no sum_match: sum the mapped outputs by hand
        full = jax.vmap(make(jnp, jax.lax), in_axes=in_axes)(*args)
        want = (full[0][0], jnp.moveaxis(full[1], 0, 1), full[2].sum())
    else:
        want = jax.vmap(make(jnp, jax.lax), in_axes=in_axes, out_axes=out_axes)(*args)
    got = {}
    for mode in ("batched", "loop", "auto"):
        g = purejit.vmap(
            make(pnp, plax), in_axes=in_axes, out_axes=out_axes, sum_match=sum_match, lowering=mode
        )
        got[mode] = purejit.jit(g)(*args)
        for o, w in zip(jax.tree_util.tree_leaves(got[mode]), jax.tree_util.tree_leaves(want)):
            assert o.shape == w.shape and o.dtype == w.dtype, (mode, o.shape, w.shape)
            np.testing.assert_allclose(np.asarray(o), np.asarray(w), **dot_tol(2e-5, 2e-5))


def test_loop_is_a_scan_and_explain_says_so():
    w, x = _f32(4, 4), _f32(6, 4)
    g = purejit.jit(purejit.vmap(_cond_fn(pnp, plax), in_axes=(None, 0), lowering="loop"))
    ex = purejit.explain(g, w, x)
    assert any("loop over the 6 examples (scan)" in t for t in ex.transforms), ex.transforms
    names = {op.name for op in g.lower(w, x).fn.walk()}
    assert "scan" in names or "while" in names
    # the branch stays a branch: only the taken branch runs per example, nothing selects
    assert not any("select" in t for t in ex.transforms)
    batched = purejit.explain(
        purejit.jit(purejit.vmap(_cond_fn(pnp, plax), in_axes=(None, 0))), w, x
    )
    assert not any("loop over" in t for t in batched.transforms)


def test_config_sets_the_default_and_the_argument_wins(monkeypatch):
    monkeypatch.setitem(config._values, "vmap_lowering", "loop")
    x = _f32(3, 2)
    ex = purejit.explain(purejit.jit(purejit.vmap(pnp.sin)), x)
    assert any("loop over the 3 examples" in t for t in ex.transforms)
    ex = purejit.explain(purejit.jit(purejit.vmap(pnp.sin, lowering="batched")), x)
    assert not ex.transforms
    with pytest.raises(ValueError, match="lowering must be one of"):
        purejit.vmap(pnp.sin, lowering="unrolled")


def test_auto_measures_once_caches_and_reports(monkeypatch):
    monkeypatch.setattr(vmap_lowering, "CHOICES", {})
    calls = []
    real = vmap_lowering.measure

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(vmap_lowering, "measure", counted)
    monkeypatch.setitem(config._values, "vmap_measure_s", 0.05)
    p, x = ENSEMBLE
    f = lambda p, x: _mlp(pnp, p, x)  # noqa: E731
    want = jax.vmap(lambda p, x: _mlp(jnp, p, x), in_axes=(0, None))(p, x)
    # jit(vmap(f)) measures on the arrays of the call being compiled
    g = purejit.jit(purejit.vmap(f, in_axes=(0, None), lowering="auto"))
    # "auto" may pick the loop, whose dots run at other shapes than JAX's batched ones (TF32
    # on GPU rounds them differently)
    np.testing.assert_allclose(np.asarray(g(p, x)), np.asarray(want), **dot_tol())
    assert len(calls) == 1 and len(vmap_lowering.CHOICES) == 1
    (choice,) = vmap_lowering.CHOICES.values()
    assert choice.reason == "the call's arguments"
    assert choice.lowering in ("batched", "loop") and choice.batched_s > 0 and choice.loop_s > 0
    # another jitted function of the same program and shapes reuses it; explain reports it
    h = purejit.jit(purejit.vmap(f, in_axes=(0, None), lowering="auto"))
    ex = purejit.explain(h, p, x)
    (note,) = [t for t in ex.transforms if "auto chose" in t]
    assert f"auto chose {choice.lowering} (measured on the call's arguments: batched" in note
    np.testing.assert_allclose(np.asarray(h(p, x)), np.asarray(want), **dot_tol())
    assert len(calls) == 1
    # lowering on shapes alone (another batch size: another choice) measures made-up inputs
    spec = jax.ShapeDtypeStruct((2, 6), np.float32)
    h.lower(p, spec)
    assert len(calls) == 2
    assert any(c.reason.startswith("made-up inputs") for c in vmap_lowering.CHOICES.values())


def test_auto_without_measurement_is_batched(monkeypatch):
    monkeypatch.setattr(vmap_lowering, "CHOICES", {})
    monkeypatch.setitem(config._values, "vmap_measure_s", 0)
    x = _f32(3, 2)
    g = purejit.jit(purejit.vmap(pnp.cos, lowering="auto"))
    ex = purejit.explain(g, x)
    assert any("auto chose batched (measurement disabled" in t for t in ex.transforms)
    assert "scan" not in {op.name for op in g.lower(x).fn.walk()}
    np.testing.assert_allclose(np.asarray(g(x)), np.cos(x), rtol=1e-6)


def test_collective_over_the_axis_stays_batched():
    x = _f32(4, 3)
    g = purejit.jit(purejit.vmap(lambda v: v - plax.pmean(v, "i"), axis_name="i", lowering="loop"))
    ex = purejit.explain(g, x)
    assert any("needs every example at once" in t for t in ex.transforms)
    np.testing.assert_allclose(np.asarray(g(x)), x - x.mean(0), rtol=1e-5, atol=1e-6)


def test_loop_composes_with_grad_and_nested_vmap():
    w, xs = _f32(4, 4), _f32(2, 3, 4)

    def loss(xp, lax):
        return lambda w, x: _cond_fn(xp, lax)(w, x).sum()

    def pj(w, xs):
        inner = purejit.vmap(purejit.grad(loss(pnp, plax)), in_axes=(None, 0), lowering="loop")
        return purejit.vmap(inner, in_axes=(None, 0), lowering="loop")(w, xs)

    def jx(w, xs):
        inner = jax.vmap(jax.grad(loss(jnp, jax.lax)), in_axes=(None, 0))
        return jax.vmap(inner, in_axes=(None, 0))(w, xs)

    np.testing.assert_allclose(
        np.asarray(purejit.jit(pj)(w, xs)), np.asarray(jx(w, xs)), **dot_tol()
    )
    g = purejit.jit(
        purejit.grad(
            lambda w: purejit.vmap(loss(pnp, plax), (None, 0), lowering="loop")(w, xs[0]).sum()
        )
    )
    want = jax.grad(lambda w: jax.vmap(loss(jnp, jax.lax), (None, 0))(w, xs[0]).sum())(w)
    np.testing.assert_allclose(np.asarray(g(w)), np.asarray(want), **dot_tol())
