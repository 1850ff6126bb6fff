"""Stacks of per-layer parameters as a rolled program's arguments (`stacked_params`).

IR text in -> out for what `stack_parameters` proves and what it leaves (a computed operand,
a parameter twice in one stack, a flattening read elsewhere, mixed donation, the other
dtype's stack); the interpreter and XLA give the unrolled program's numbers; dispatch finds
the previous call's stack (zero copy), builds one on the host or on the device, falls back
when a layer's array is replaced, donates a stack only when no other view reads it; outputs
come back as row views that the next call finds; donated views are deleted arrays."""

from __future__ import annotations

import gc

import jax
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit.backend import pjrt, row_views
from purejit.compiler import stacked_dispatch as sd
from purejit.compiler.stacked_params import stack_parameters
from purejit.ir import Builder, TensorType, interpret, print_function
from purejit.runtime.array import DeletedArrayError
from tests.passes.roll_layers_util import ROLL, dense, leaves, mlp, mlp_params

F32 = np.dtype(np.float32)

pytestmark = pytest.mark.skipif(not row_views.available(), reason="no DLPack import here")


def _stacking(ops_for):
    """A function of two (4,)-vectors and a (2, 2) matrix whose body `ops_for(b, params)`
    builds; returns (fn, the parameters)."""
    b = Builder("f")
    ps = [b.param(TensorType((4,), F32)), b.param(TensorType((2, 2), F32))]
    ps.append(b.param(TensorType((4,), F32)))
    return b.finish(ops_for(b, ps)), ps


def _cat(b, vals):
    flat = [v if v.type.rank == 1 else b.op("reshape", [v], {"shape": [v.type.size]})[0]
            for v in vals]  # fmt: skip
    (c,) = b.op("concatenate", flat, {"dimension": 0})
    return c


def _stack(fn, donated):
    return stack_parameters(fn, donated, 16)  # 4 floats: every piece here is aligned


def _same(fn, new, plan, args):
    want = interpret(fn, *args)
    got = plan.leaf_results(interpret(new, *plan.entry_arguments(args)))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


ARGS = [np.arange(4, dtype=F32), np.arange(4, dtype=F32).reshape(2, 2) + 10, np.ones(4, F32)]


def test_a_stack_of_parameters_becomes_one_parameter():
    fn, _ = _stacking(lambda b, ps: [b.op("negate", [_cat(b, ps)])[0]])
    new, plan = _stack(fn, (False,) * 3)
    assert "concatenate" in print_function(fn) and "concatenate" not in print_function(new)
    assert print_function(new).startswith("func @f(%0: f32[12]) -> (f32[12])")
    (g,) = plan.groups
    assert g.leaves == (0, 1, 2) and g.offsets == (0, 4, 8) and plan.sources == (("group", 0),)
    _same(fn, new, plan, ARGS)


def test_rows_out_of_order_follow_the_concatenation():
    # the plan lays each leaf where the concatenate put it: no order is assumed
    fn, _ = _stacking(lambda b, ps: [_cat(b, [ps[2], ps[0], ps[1]])])
    new, plan = _stack(fn, (False,) * 3)
    assert plan.groups[0].leaves == (2, 0, 1) and plan.groups[0].offsets == (0, 4, 8)
    _same(fn, new, plan, ARGS)


def test_a_parameter_also_read_elsewhere_reads_its_piece_of_the_stack():
    fn, _ = _stacking(lambda b, ps: [_cat(b, ps), b.op("add", [ps[2], ps[0]])[0], ps[1]])
    new, plan = _stack(fn, (False,) * 3)
    text = print_function(new)
    assert len(new.params) == 1 and text.count("slice(") == 3  # p0, p2, and p1 returned
    _same(fn, new, plan, ARGS)


@pytest.mark.parametrize(
    "body",
    [
        # a computed operand: its elements are not a leaf's
        lambda b, ps: [_cat(b, [ps[0], b.op("negate", [ps[2]])[0]])],
        # one parameter twice in the stack
        lambda b, ps: [_cat(b, [ps[0], ps[0], ps[2]])],
        # a flattening read elsewhere too
        lambda b, ps: [
            b.op(
                "concatenate",
                [ps[0], r := b.op("reshape", [ps[1]], {"shape": [4]})[0]],
                {"dimension": 0},
            )[0],
            r,
        ],  # fmt: skip
    ],
    ids=["computed operand", "parameter twice", "flattening read twice"],
)
def test_what_is_not_proved_is_left_as_it_is(body):
    fn, _ = _stacking(body)
    new, plan = _stack(fn, (False,) * 3)
    assert new is fn and plan is None


def test_a_leaf_at_an_unaligned_offset_leaves_the_stack_as_it_is():
    fn, _ = _stacking(lambda b, ps: [_cat(b, ps)])
    assert stack_parameters(fn, (False,) * 3, 64) == (fn, None)  # offset 4 floats: 16 bytes


def test_a_group_with_mixed_donation_is_left_as_it_is():
    fn, _ = _stacking(lambda b, ps: [_cat(b, ps)])
    assert _stack(fn, (True, False, True)) == (fn, None)
    # all donated, and an output of the leaves' types to return as the donated stack's
    fn2, _ = _stacking(lambda b, ps: [_cat(b, ps), *(b.op("negate", [p])[0] for p in ps)])
    new, plan = _stack(fn2, (True,) * 3)
    assert plan.groups[0].donated and plan.out_groups[0].leaves == (1, 2, 3)
    _same(fn2, new, plan, ARGS)
    # all donated but nothing to return the stack as: left inside the program
    assert _stack(fn, (True,) * 3) == (fn, None)


# how dispatch builds a group of device arrays the second time (the first: on the host)
BUILT = "host" if pjrt.platform() == "cpu" else "device"
# every piece of a layer (D and D * D floats) is aligned for a view on this platform (64 bytes
# on CPU, 16 on a GPU): views, no copies
D = max(16, row_views.alignment() // 4)


def _model():
    return mlp(pnp, purejit.jit(dense(pnp)))


def _step(model):
    def step(ps, x):
        g = purejit.grad(lambda ps: pnp.mean(model(ps, x) ** 2))(ps)
        return jax.tree.map(lambda p, g: p - 0.1 * g, ps, g)

    return step


def _on_device(ps):
    return jax.tree.map(purejit.device_put, ps)


def test_a_rolled_forward_takes_its_stack_and_finds_it_on_the_next_call():
    ps, x = mlp_params(4, D), np.random.default_rng(1).standard_normal((2, D), np.float32)
    model = _model()
    rolled = purejit.jit(model, compiler_options=ROLL)
    lowered = rolled.lower(ps, x)
    # one stack per parameter kind, as `lax.scan` takes them: b (4 x 16) and w (4 x 16 x 16)
    gs = lowered.stack_plan.groups
    assert [g.leaves for g in gs] == [(0, 2, 4, 6), (1, 3, 5, 7)]
    assert [p.type for p in lowered.emitted.params][:2] == [g.stack_type for g in gs]
    assert [str(g.stack_type) for g in gs] == ["f32[4,16]", "f32[4,16,16]"]
    before = purejit.jit(model, compiler_options={**ROLL, "stacked_params": False}).lower(ps, x)
    # built in the program: a concatenate (GPU) or read per trip by a case (CPU); no more
    assert "concatenate" in before.module or "stablehlo.case" in before.module
    assert "concatenate" not in lowered.module and "stablehlo.case" not in lowered.module
    want = np.asarray(purejit.jit(model)(ps, x))
    dev = _on_device(ps)
    for how in ("host", "found", "found"):  # built on the host, then found
        np.testing.assert_allclose(np.asarray(rolled(dev, x)), want, rtol=1e-6, atol=1e-6)
        assert [sd.LAST[g] for g in gs] == [how, how]
    # the leaves are lazy rows of their stack now (no view made); read by NumPy, each is
    # copied through a view made for the copy and stays lazy; its buffer is a view at its
    # offset of the stack, same values, and the next call still finds the stack
    for g in gs:
        stack = sd.stack_of(jax.tree.leaves(dev)[g.leaves[0]])[0]
        for k, a in zip(g.leaves, g.offsets):
            leaf = jax.tree.leaves(dev)[k]
            assert leaf._buf is None and sd.stack_of(leaf) == (stack, a)
            np.testing.assert_array_equal(np.asarray(leaf), jax.tree.leaves(ps)[k])
            assert leaf._buf is None
            assert leaf.buffer.unsafe_buffer_pointer() == stack.unsafe_buffer_pointer() + 4 * a
    np.testing.assert_allclose(np.asarray(rolled(dev, x)), want, rtol=1e-6, atol=1e-6)
    assert [sd.LAST[g] for g in gs] == ["found", "found"]
    g = gs[1]  # w
    # NumPy leaves: built on the host every call
    np.testing.assert_allclose(np.asarray(rolled(ps, x)), want, rtol=1e-6, atol=1e-6)
    assert sd.LAST[g] == "host"
    # one layer replaced between calls: built again, still right
    dev[2]["w"] = purejit.device_put(ps[2]["w"] * 2)
    ps2 = [dict(p) for p in ps]
    ps2[2]["w"] = ps[2]["w"] * 2
    want2 = np.asarray(purejit.jit(model)(ps2, x))
    np.testing.assert_allclose(np.asarray(rolled(dev, x)), want2, rtol=1e-6, atol=1e-6)
    assert sd.LAST[g] == BUILT
    np.testing.assert_allclose(np.asarray(rolled(dev, x)), want2, rtol=1e-6, atol=1e-6)
    assert sd.LAST[g] == "found"


def _first_group_on_device():
    """A rolled 3-layer forward's first group, its leaves on the device, and the device."""
    ps = _on_device(mlp_params(3, D))
    x = np.ones((2, D), np.float32)
    g = purejit.jit(_model(), compiler_options=ROLL).lower(ps, x).stack_plan.groups[0]
    return g, [jax.tree.leaves(ps)[k] for k in g.leaves], pjrt.default_device()


def test_the_device_route_builds_the_same_stack():
    g, members, dev = _first_group_on_device()
    on_host = np.asarray(sd.build_on_host(g, members, dev))
    on_device = np.asarray(sd.build_on_device(g, members, dev))
    np.testing.assert_array_equal(on_device, on_host)


@pytest.mark.parametrize("model_kind", ["mlp", "transformer"])
def test_three_donated_training_steps_run_without_stacking_and_match_unrolled(model_kind):
    if model_kind == "mlp":
        ps, x = mlp_params(12, D), np.random.default_rng(2).standard_normal((2, D), np.float32)
        model = _model()
    else:
        from bench.models import transformer, transformer_params

        ps = transformer_params(12, D, np.random.default_rng(3))
        x = np.random.default_rng(4).standard_normal((2, 8, D)).astype(np.float32)
        block = purejit.jit(lambda x, p: transformer(pnp, [p], x, 2))
        model = mlp(pnp, block)
    step = _step(model)
    rolled = purejit.jit(step, donate_argnums=0, compiler_options=ROLL)
    unrolled = purejit.jit(step, donate_argnums=0)
    # the same rolled program building its stacks itself: the same numbers, bit for bit
    inside = purejit.jit(step, donate_argnums=0, compiler_options={**ROLL, "stacked_params": False})
    lowered = rolled.lower(ps, x)
    plan = lowered.stack_plan
    # one donated stack per parameter kind, each returned updated as one stack in place
    kinds = len(ps[0])
    assert len(plan.groups) == kinds and all(g.donated for g in plan.groups)
    assert sum(len(g.leaves) for g in plan.groups) == len(jax.tree.leaves(ps))
    assert len(plan.out_groups) == kinds and len(lowered.donation.aliases) == kinds
    g = plan.groups[0]
    a, b, c = _on_device(ps), _on_device(ps), _on_device(ps)
    hows, views = [], []
    for k in range(4):
        old = a
        made = row_views.made()
        # float32 dots at full precision (a GPU's default is TF32, whose rounding the
        # rolled and unrolled programs take in different places)
        with purejit.default_matmul_precision("highest"):
            a = rolled(a, x)
            views.append(row_views.made() - made)
            b, c = unrolled(b, x), inside(c, x)
        hows.append(sd.LAST[g])
        # the outputs are lazy rows of one stack per kind: no view made, nothing waited for
        assert all(v._buf is None and sd.stack_of(v) is not None for v in jax.tree.leaves(a))
    assert hows == ["host", "found", "found", "found"] and views == [0, 0, 0, 0]
    for u, w in zip(leaves(a), leaves(c)):  # bit for bit the stacks-inside program's
        np.testing.assert_array_equal(u, w)
    for u, v in zip(leaves(a), leaves(b)):  # (four steps of rounding apart)
        np.testing.assert_allclose(u, v, rtol=1e-2, atol=1e-2)
    # the donated rows are deleted arrays, read or passed again (purejit's Python fast
    # path, which a program with stacks takes after its first call)
    with pytest.raises(DeletedArrayError, match="donated"):
        np.asarray(old[0][next(iter(old[0]))])
    assert rolled._fast
    with pytest.raises(DeletedArrayError, match="donated"):
        rolled(old, x)
    # the outputs are row views of one stack; usable in any other program
    leaf = jax.tree.leaves(a)[0]
    assert sd.stack_of(leaf) is not None
    np.testing.assert_allclose(np.asarray(purejit.jit(lambda v: v * 2)(leaf)), 2 * np.asarray(leaf))


def test_a_found_stack_another_view_reads_is_copied_not_donated():
    ps, x = mlp_params(3, D), np.ones((2, D), np.float32)
    step = _step(_model())
    rolled = purejit.jit(step, donate_argnums=0, compiler_options=ROLL)
    g = rolled.lower(ps, x).stack_plan.groups[1]  # w's: leaves 1, 3, 5
    a = rolled(_on_device(ps), x)
    stack = sd.stack_of(a[0]["w"])[0]
    extra, _ = row_views.views(stack, [(g.offsets[0], g.shapes[0])])  # read elsewhere
    kept = np.array(np.asarray(extra[0]))
    b = rolled(a, x)
    assert sd.LAST[g] == BUILT  # a copy was donated
    np.testing.assert_array_equal(np.asarray(extra[0]), kept)  # the other view is unchanged
    want = purejit.jit(step)(purejit.jit(step)(ps, x), x)
    for u, v in zip(leaves(b), leaves(want)):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)


def test_gradients_come_back_per_layer_as_views_of_one_stack():
    ps, x = mlp_params(6, D), np.random.default_rng(5).standard_normal((2, D), np.float32)
    loss = lambda ps, x: pnp.sum(_model()(ps, x) ** 2)  # noqa: E731
    rolled = purejit.jit(purejit.grad(loss), compiler_options=ROLL)
    plan = rolled.lower(ps, x).stack_plan
    assert len(plan.out_groups) == 2  # b's and w's
    got = rolled(_on_device(ps), x)
    want = purejit.jit(purejit.grad(loss))(ps, x)
    stacks = {id(sd.stack_of(a)[0]) for a in jax.tree.leaves(got)}
    assert len(stacks) == 2
    for u, v in zip(leaves(got), leaves(want)):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)


def test_a_donated_leaf_passed_twice_is_refused_and_views_do_not_leak():
    ps, x = mlp_params(3, D), np.ones((2, D), np.float32)
    rolled = purejit.jit(_step(_model()), donate_argnums=0, compiler_options=ROLL)
    dev = _on_device(ps)
    dev[1]["w"] = dev[0]["w"]
    with pytest.raises(ValueError, match="same buffer"):
        rolled(dev, x)
    del dev
    gc.collect()
    before = row_views.live_views()
    out = rolled(_on_device(ps), x)
    assert row_views.live_views() == before  # lazy rows: no view made
    leaves(out)  # read by NumPy: through views made for the copies and deleted after
    assert row_views.live_views() == before
    [a.buffer for a in jax.tree.leaves(out)]  # each row's buffer: a view it keeps
    assert row_views.live_views() >= before + 6
    del out
    gc.collect()
    assert row_views.live_views() == before


def test_the_option_is_checked():
    ps, x = mlp_params(3, D), np.ones((2, D), np.float32)
    with pytest.raises(ValueError, match="stacked_params=1 must be True or False"):
        purejit.jit(_model(), compiler_options={**ROLL, "stacked_params": 1}).lower(ps, x)
    # without roll_layers nothing is stacked
    assert purejit.jit(_model()).lower(ps, x).stack_plan is None


def test_explain_reports_the_stacked_arguments_and_results():
    if D != 16:
        pytest.skip("the figures below are for layers of width 16")
    ps, x = mlp_params(4, D), np.ones((2, D), np.float32)
    text = str(purejit.explain(purejit.jit(_step(_model()), donate_argnums=0,
                                           compiler_options=ROLL), ps, x))  # fmt: skip
    assert "argument: 4 leaves (0..6) as one f32[4,16] stack (donated): 256 B" in text
    assert "argument: 4 leaves (1..7) as one f32[4,16,16] stack (donated): 4.0 KB" in text
    assert "result: 4 outputs returned as one f32[4,16,16] stack" in text
    inside = {**ROLL, "stacked_params": False}
    text = str(purejit.explain(purejit.jit(_model(), compiler_options=inside), ps, x))
    assert "argument:" not in text


def _top(fn, name):
    return [op for op in fn.ops if op.name == name]


def test_the_update_of_a_stack_runs_over_whole_columns():
    ps, x = mlp_params(12, D), np.ones((2, D), np.float32)
    lowered = purejit.jit(_step(_model()), donate_argnums=0, compiler_options=ROLL).lower(ps, x)
    # p - 0.1 * g once per parameter kind (b, w) over 12 rows, not once per layer; each is
    # its output stack, nothing concatenated
    assert len(_top(lowered.emitted, "subtract")) == 2
    assert not _top(lowered.emitted, "concatenate")
    flat = leaves((ps, x))
    plan = lowered.stack_plan
    got = plan.leaf_results(interpret(lowered.emitted, *plan.entry_arguments(flat)))
    with purejit.default_matmul_precision("highest"):  # a GPU's default is TF32
        want = purejit.jit(_step(_model()))(ps, x)
    for u, v in zip(got, leaves(want)):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)


def test_a_per_layer_learning_rate_keeps_the_update_per_layer():
    model = _model()

    def step(ps, x):  # layer k's rate is its own constant: no one op over the rows
        g = purejit.grad(lambda ps: pnp.mean(model(ps, x) ** 2))(ps)
        return [jax.tree.map(lambda p, g: p - 0.1 * (k + 1) * g, p, gp)
                for k, (p, gp) in enumerate(zip(ps, g))]  # fmt: skip

    ps, x = mlp_params(4, D), np.ones((2, D), np.float32)
    rolled = purejit.jit(step, donate_argnums=0, compiler_options=ROLL)
    lowered = rolled.lower(ps, x)
    cats = _top(lowered.emitted, "concatenate")
    assert [len(c.operands) for c in cats] == [4, 4]  # each output stack, one per leaf
    got = rolled(_on_device(ps), x)
    want = purejit.jit(step)(ps, x)
    for u, v in zip(leaves(got), leaves(want)):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6)


def test_a_host_build_reuses_its_array_only_when_no_buffer_shares_it():
    g, members, dev = _first_group_on_device()
    first = sd.build_on_host(g, members, dev)
    kept = np.array(np.asarray(first))
    doubled = [purejit.device_put(np.asarray(a) * 2) for a in members]
    second = sd.build_on_host(g, doubled, dev)  # `first` still lives: another array
    np.testing.assert_array_equal(np.asarray(first), kept)
    np.testing.assert_array_equal(np.asarray(second), 2 * kept)
    del first, second
    gc.collect()
    third = sd.build_on_host(g, members, dev)
    np.testing.assert_array_equal(np.asarray(third), kept)
