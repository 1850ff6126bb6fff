"""roll_layers on the IR: IR text in -> IR text out for chains of isomorphic calls (rolled into
one scan) and for the chains it must leave alone (different shapes, different activations, a
carried value used outside the chain, a skip connection); Python loops traced flat, outlined
and rolled, forward and backward; the packing of a scan's saved values and of the layers'
parameters into one stack each. The interpreter gives the same numbers before and after.
Jitted models compiled with `roll_layers`: test_roll_layers_compiled.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes._isomorphism import compare, remembering
from purejit.passes.dce import DCE
from purejit.passes.roll_layers import RollLayers

import purejit
import purejit.numpy as pnp
from bench.cold_start_hlo import stacking_bytes
from bench.models import transformer, transformer_params
from tests.passes.roll_layers_util import (
    ROLL,
    dense,
    leaves,
    mlp,
    mlp_params,
    residual,
    roll_report,
)


def _layer(k: int, x: str, w: str, act: str = "tanh", wt: str = "f32[4]", c: str = "") -> str:
    """The text of one call of a layer `act(x * w + b [+ c])` (values numbered from `k`)."""
    lines = [
        f'  %{k} = call({x}, {w}, %4) {{callee="layer"}} : (f32[4]) '
        f"region(%{k + 1}: f32[4], %{k + 2}: {wt}, %{k + 3}: f32[4]) {{"
    ]
    wv = f"%{k + 2}"
    if wt == "f32[]":
        lines.append(
            f"    %{k + 4} = broadcast_in_dim(%{k + 2}) {{shape=[4], broadcast_dimensions=[]}}"
            " : (f32[4])"
        )
        wv = f"%{k + 4}"
    lines.append(f"    %{k + 5} = multiply(%{k + 1}, {wv}) : (f32[4])")
    lines.append(f"    %{k + 6} = add(%{k + 5}, %{k + 3}) : (f32[4])")
    y = f"%{k + 6}"
    if c:
        lines.append(f"    %{k + 7} = constant() {{value=array<f32[]: [{c}]>}} : (f32[])")
        lines.append(
            f"    %{k + 8} = broadcast_in_dim(%{k + 7}) {{shape=[4], broadcast_dimensions=[]}}"
            " : (f32[4])"
        )
        lines.append(f"    %{k + 9} = add(%{k + 6}, %{k + 8}) : (f32[4])")
        y = f"%{k + 9}"
    lines += [f"    %{k + 10} = {act}({y}) : (f32[4])", f"    return %{k + 10}", "  }"]
    return "\n".join(lines) + "\n"


def _chain(acts=("tanh",) * 3, consts=("",) * 3, wt=("f32[4]",) * 3, tail: str = "") -> str:
    """Three calls of `layer` on x = %0 with weights %1..%3 and a shared bias %4."""
    params = ", ".join(f"%{i + 1}: {t}" for i, t in enumerate(wt))
    head = f"func @f(%0: f32[4], {params}, %4: f32[4]) -> (f32[4]{tail and ', f32[4]'}) {{\n"
    body, x = "", "%0"
    for i in range(3):
        k = 20 * (i + 1)
        body += _layer(k, x, f"%{i + 1}", acts[i], wt[i], consts[i])
        x = f"%{k}"
    return head + body + f"  return %60{tail}\n}}"


def _args(fn, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(p.type.shape).astype(p.type.dtype) for p in fn.params]


def _roll(src: str):
    fn = verify(parse(src))
    res = RollLayers()(fn)
    verify(res.fn)
    args = _args(fn)
    for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
        np.testing.assert_array_equal(b, a)
    return print_function(res.fn), res


def test_a_chain_of_three_calls_becomes_one_scan():
    out, res = _roll(_chain())
    assert res.changed
    assert res.report["runs_rolled"] == 1 and res.report["blocks_rolled"] == 3
    (rolled,) = res.report["rolled"]
    assert (rolled["carried"], rolled["shared"], rolled["per_block"]) == (1, 1, 1)
    assert (
        out
        == """func @f(%0: f32[4], %1: f32[4], %2: f32[4], %3: f32[4], %4: f32[4]) -> (f32[4]) {
  %5 = reshape(%1) {shape=[1, 4]} : (f32[1,4])
  %6 = reshape(%2) {shape=[1, 4]} : (f32[1,4])
  %7 = reshape(%3) {shape=[1, 4]} : (f32[1,4])
  %8 = concatenate(%5, %6, %7) {dimension=0} : (f32[3,4])
  %9 = scan(%4, %0, %8) {length=3, reverse=false, unroll=1, num_consts=1, num_carry=1} : (f32[4]) region(%10: f32[4], %11: f32[4], %12: f32[4]) {
    %13 = multiply(%11, %12) : (f32[4])
    %14 = add(%13, %10) : (f32[4])
    %15 = tanh(%14) : (f32[4])
    return %15
  }
  return %9
}"""
    )


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        (
            {"wt": ("f32[4]", "f32[4]", "f32[]")},
            "parameter 1 is f32[4] vs f32[] (different shapes)",
        ),
        ({"acts": ("tanh", "tanh", "logistic")}, "op 2 is `tanh` vs `logistic`"),
    ],
    ids=["different_shapes", "different_activations"],
)
def test_a_differing_block_ends_the_run(kwargs, reason):
    src = _chain(**kwargs)
    fn = verify(parse(src))
    res = RollLayers(min_blocks=3)(fn)
    assert not res.changed and print_function(res.fn) == print_function(fn)
    (refused,) = res.report["refused"]
    assert refused["reason"] == f"block 2 differs from block 0: {reason}"
    # with two blocks enough, the first two roll and the third stays a call
    out, res = _roll(src)
    assert res.report["blocks_rolled"] == 2 and out.count("call(") == 1


def test_isomorphism_names_shapes_and_ops():
    a = parse(_chain()).ops[0].regions[0]
    b = parse(_chain(wt=("f32[]",) * 3)).ops[0].regions[0]
    assert compare(a, a).same
    assert compare(a, b).reason == "parameter 1 is f32[4] vs f32[] (different shapes)"
    c = parse(_chain(acts=("logistic",) * 3)).ops[0].regions[0]
    assert compare(a, c).reason == "op 2 is `tanh` vs `logistic`"


def test_remembered_proofs_are_for_the_same_two_functions():
    a = parse(_chain()).ops[0].regions[0]
    b = parse(_chain()).ops[0].regions[0]
    c = parse(_chain(acts=("logistic",) * 3)).ops[0].regions[0]
    with remembering():
        first = compare(a, b)
        assert first.same and compare(a, b) is first  # the pass cache's key, then roll_layers
        assert compare(a, c).reason == "op 2 is `tanh` vs `logistic`"
        assert compare(b, a) is not first and compare(b, a).same  # another pair: proved
        assert compare(a, b, constants_may_differ=False) is not first
    assert compare(a, b) is not first  # outside, nothing is kept


def test_a_differing_constant_is_stacked():
    out, res = _roll(_chain(consts=("1.0", "2.0", "3.0")))
    (rolled,) = res.report["rolled"]
    assert rolled["stacked_constants"] == 1 and rolled["blocks"] == 3
    assert "constant() {value=array<f32[3]: [1.0, 2.0, 3.0]>}" in out
    (scan,) = [op for op in parse(out).ops if op.name == "scan"]
    assert not any(op.name == "constant" for op in scan.regions[0].ops)


def test_a_carried_value_used_outside_the_chain_is_also_stacked():
    src = _chain(tail=", %40")  # block 1's output is also a result of the program
    out, res = _roll(src)
    (rolled,) = res.report["rolled"]
    assert rolled["blocks"] == 3 and rolled["carried_also_stacked"] == 1
    # the scan returns the final carry and the stacked carries; row 1 is the extra result
    # (row 0, read only by block 1 before, is left for DCE), read at an index from the
    # loop of row indices (`_row_index.py`: XLA compiles one kernel for all such rows)
    assert out.endswith(
        """    return %16, %16
  }
  %17 = iota() {shape=[1], dtype=s32, dimension=0} : (s32[1])
  %18 = reshape(%17) {shape=[]} : (s32[])
  %19 = constant() {value=array<s32[]: [0]>} : (s32[])
  %20 = constant() {value=array<s32[]: [1]>} : (s32[])
  %21 = constant() {value=array<s32[]: [2]>} : (s32[])
  %22, %23, %24, %25 = while(%18, %19, %20, %21) : (s32[], s32[], s32[], s32[]) \
region(%26: s32[], %27: s32[], %28: s32[], %29: s32[]) {
    %30 = constant() {value=array<s32[]: [2]>} : (s32[])
    %31 = compare(%26, %30) {comparison_direction="LT"} : (pred[])
    return %31
  } region(%32: s32[], %33: s32[], %34: s32[], %35: s32[]) {
    %36 = constant() {value=array<s32[]: [0]>} : (s32[])
    %37 = compare(%32, %36) {comparison_direction="LT"} : (pred[])
    %38 = select(%37, %32, %33) : (s32[])
    %39 = select(%37, %32, %34) : (s32[])
    %40 = select(%37, %32, %35) : (s32[])
    %41 = constant() {value=array<s32[]: [1]>} : (s32[])
    %42 = add(%32, %41) : (s32[])
    return %42, %38, %39, %40
  }
  %43 = constant() {value=array<s32[]: [0]>} : (s32[])
  %44 = dynamic_slice(%10, %23, %43) {slice_sizes=[1, 4]} : (f32[1,4])
  %45 = reshape(%44) {shape=[4]} : (f32[4])
  %46 = dynamic_slice(%10, %24, %43) {slice_sizes=[1, 4]} : (f32[1,4])
  %47 = reshape(%46) {shape=[4]} : (f32[4])
  return %9, %47
}"""
    )


def test_a_skip_connection_is_left_alone():
    # block 2's weight is block 0's output: a value computed inside the chain
    src = _chain().replace("call(%40, %3, %4)", "call(%40, %20, %4)")
    res = RollLayers()(verify(parse(src)))
    assert not res.changed
    assert (
        "operand 1 of block 2 is computed from an earlier block"
        in (res.report["refused"][0]["reason"])
    )
    # block 2's weight computed from block 0's output through an op between the blocks
    src = _chain().replace("call(%40, %3, %4)", "call(%40, %99, %4)")
    src = src.replace("  %40 = call", "  %99 = exponential(%1) : (f32[4])\n  %40 = call")
    assert RollLayers()(verify(parse(src))).changed  # (a value from outside: rolls)
    src = src.replace("exponential(%1)", "exponential(%20)")
    res = RollLayers()(verify(parse(src)))
    assert not res.changed


def _reader_chain() -> str:
    """A chain of three `layer` calls, then a chain of three `reader` calls whose per-block
    operand is each `layer` call's input: x itself, then the first two calls' outputs."""
    head = "func @f(%0: f32[4], %1: f32[4], %2: f32[4], %3: f32[4], %4: f32[4]) -> (f32[4]) {\n"
    body, x = "", "%0"
    for i in range(3):
        k = 20 * (i + 1)
        body += _layer(k, x, f"%{i + 1}")
        x = f"%{k}"
    for i, w in enumerate(["%0", "%20", "%40"]):
        k = 20 * (i + 4)
        body += _layer(k, x, w, act="logistic").replace('"layer"', '"reader"')
        x = f"%{k}"
    return head + body + f"  return {x}\n}}"


def test_a_later_run_reads_rows_of_a_stack_and_one_value_from_outside():
    # the reader's rows are [x, row 0, row 1] of the first scan's stacked outputs: x is a
    # loop constant read at the index -1, the others are read from the stack in place
    # (a concatenate of x and the rows would copy them all on every call)
    _, res = _roll(_reader_chain())
    _, reader = res.report["rolled"]
    assert reader["rows_from_outside"] == 1 and reader["stacked_bytes"] == 0
    out = print_function(DCE()(res.fn).fn)  # the rows the reader read before are dead
    assert out.endswith(
        """    return %16, %16
  }
  %17 = constant() {value=array<s32[3]: [-1, 0, 1]>} : (s32[3])
  %18 = scan(%4, %10, %0, %9, %17) {length=3, reverse=false, unroll=1, num_consts=3, num_carry=1} : (f32[4]) region(%19: f32[4], %20: f32[3,4], %21: f32[4], %22: f32[4], %23: s32[]) {
    %24 = constant() {value=array<s32[]: [0]>} : (s32[])
    %25 = dynamic_slice(%20, %23, %24) {slice_sizes=[1, 4]} : (f32[1,4])
    %26 = reshape(%25) {shape=[4]} : (f32[4])
    %27 = compare(%23, %24) {comparison_direction="LT"} : (pred[])
    %28 = select(%27, %21, %26) : (f32[4])
    %29 = multiply(%22, %28) : (f32[4])
    %30 = add(%29, %19) : (f32[4])
    %31 = logistic(%30) : (f32[4])
    return %31
  }
  return %18
}"""
    )
    # two rows from outside: stacked as before
    src = _reader_chain().replace("call(%80, %20, %4)", "call(%80, %1, %4)")
    out, res = _roll(src)
    _, reader = res.report["rolled"]
    assert reader["rows_from_outside"] == 0 and reader["stacked_bytes"] == 3 * 16


# a Python loop traced flat (no jitted layer): repeated stretches are outlined, then rolled


def _flat_roll(f, *args):
    traced = purejit.jit(f).lower(*args).traced
    res = RollLayers()(traced)
    verify(res.fn)
    flat = leaves(args)
    for a, b in zip(interpret(traced, *flat), interpret(res.fn, *flat)):
        np.testing.assert_array_equal(b, a)
    return traced, res


def test_a_flat_loop_rolls_forward_and_backward():
    ps, x = mlp_params(5), np.random.default_rng(8).standard_normal((2, 8), np.float32)
    model = mlp(pnp, residual(pnp))
    _, res = _flat_roll(model, ps, x)
    (run,) = res.report["rolled"]
    assert run["blocks"] == 5 and not any(op.name == "call" for op in res.fn.walk())

    def loss(ps, x):
        return pnp.sum(model(ps, x) ** 2)

    _, res = _flat_roll(purejit.grad(loss), ps, x)
    assert res.report["runs_rolled"] == 2 and res.report["rolled"][1]["reverse"]
    assert not any(op.name == "call" for op in res.fn.walk())  # unrolled blocks put back
    got = purejit.jit(purejit.grad(loss), compiler_options=ROLL)(ps, x)
    jmodel = mlp(jnp, residual(jnp))
    want = jax.jit(jax.grad(lambda ps, x: jnp.sum(jmodel(ps, x) ** 2)))(ps, x)
    for a, b in zip(leaves(got), leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_flat_transformer_gradient_rolls():
    d, heads = 16, 2
    ps = transformer_params(4, d, np.random.default_rng(9))
    x = np.random.default_rng(10).standard_normal((2, 4, d)).astype(np.float32)

    def loss(ps, x):
        return pnp.mean(transformer(pnp, ps, x, heads) ** 2)

    traced, res = _flat_roll(purejit.grad(loss), ps, x)
    fwd, bwd = res.report["rolled"]
    assert fwd["blocks"] == 4 and fwd["carried_also_stacked"] == 1  # x is saved for grad
    assert bwd["reverse"] and bwd["stacks_reused"] > 0
    unpacked = RollLayers(pack_ys=False, pack_xs=False)(traced).fn.op_count()
    assert unpacked < 0.6 * traced.op_count()
    # packing a scan's saved values into one ys adds a reshape and a row offset per value,
    # and the constant column where its rows are read; packing the layers' parameters into
    # one stack, a slice, a reshape and an offset each (the slices the scan's lowering made
    # of each stacked parameter are made in the body)
    packed = sum(r["ys_packed"] for r in res.report["rolled"])
    packed_xs = sum(r["xs_packed"] for r in res.report["rolled"])
    assert fwd["ys"] < 4 and packed > 8 and packed_xs == 8
    assert res.fn.op_count() <= unpacked + 3 * packed + 3 * packed_xs + 2


def test_flat_layers_with_different_activations_stay_unrolled():
    ps, x = mlp_params(4), np.ones((2, 8), np.float32)

    def model(acts):
        def f(ps, x):
            for act, p in zip(acts, ps):
                x = x * 0.5 + act(x @ p["w"] + p["b"]) * 0.25
            return x

        return f

    traced, res = _flat_roll(model([pnp.sin, pnp.tanh, pnp.cos, pnp.exp]), ps, x)
    assert not res.changed and res.fn is traced
    # alternating activations repeat with a period of two layers: pairs of layers roll
    _, res = _flat_roll(model([pnp.sin, pnp.tanh] * 2), ps, x)
    (run,) = res.report["rolled"]
    assert run["blocks"] == 2 and run["per_block"] == 4  # two layers' w and b per block


def test_saved_values_of_one_dtype_are_packed_into_one_ys():
    # a scan writes each stacked output with a dynamic-update-slice of its own per trip (a
    # kernel per saved value and layer); packed, a layer's saved values of one dtype are
    # one row, and the backward scan reads their columns of that stack in place
    d, heads = 16, 2
    ps = transformer_params(4, d, np.random.default_rng(14))
    x = np.random.default_rng(15).standard_normal((2, 4, d)).astype(np.float32)

    def loss(ps, x):
        return pnp.mean(transformer(pnp, ps, x, heads) ** 2)

    traced, res = _flat_roll(purejit.grad(loss), ps, x)
    plain = RollLayers(pack_ys=False)(traced)
    verify(plain.fn)
    fwd, bwd = [op for op in res.fn.ops if op.name == "scan"]
    pfwd, _ = [op for op in plain.fn.ops if op.name == "scan"]
    ys = fwd.results[fwd.attrs["num_carry"] :]
    plain_ys = pfwd.results[pfwd.attrs["num_carry"] :]
    assert sum(v.type.nbytes for v in ys) == sum(v.type.nbytes for v in plain_ys)
    assert len(plain_ys) >= 10 and len(ys) <= 3
    (packed,) = [v for v in ys if v.type.rank == 2 and v.type.dtype == np.float32]
    consts = bwd.operands[: bwd.attrs["num_consts"]]
    assert sum(v is packed for v in consts) == 1  # one loop constant, however many read it
    reads = [
        op
        for op in bwd.regions[0].ops
        if op.name == "dynamic_slice"
        and op.operands[0] is bwd.regions[0].params[consts.index(packed)]
    ]
    assert len(reads) >= 8 and all(op.attrs["slice_sizes"][0] == 1 for op in reads)
    flat = leaves((ps, x))
    for a, b in zip(interpret(plain.fn, *flat), interpret(res.fn, *flat)):
        np.testing.assert_array_equal(b, a)
    # values larger than pack_max_bytes keep a ys of their own (a large write is bytes,
    # not launches); here the attention probabilities, 2x2x4x4 f32 = 128 bytes per layer
    big = RollLayers(pack_max_bytes=100)(traced)
    (run, _) = big.report["rolled"]
    assert 0 < run["ys_packed"] < res.report["rolled"][0]["ys_packed"]
    # the compiler packs on GPU only (on CPU the unfused concatenate costs more than the
    # launches it saves)
    rolled = purejit.jit(purejit.grad(loss), compiler_options=ROLL)
    packs = [r["ys_packed"] for r in roll_report(rolled, ps, x)["rolled"]]
    assert (sum(packs) > 0) == (purejit.devices()[0].platform in ("gpu", "cuda", "rocm"))


@pytest.mark.usefixtures("stacked_xs")
def test_the_per_layer_parameters_of_one_dtype_are_stacked_as_one():
    # each per-layer parameter is copied into a stack on every call: one concatenate writes
    # the layers' w and b side by side (a row of 8x8 + 8 floats per layer), where a stack
    # each would be a kernel each; the body reads each as its columns of the trip's row,
    # one dynamic_slice each (which XLA can hand a dot in place)
    ps = mlp_params(4)
    x = np.random.default_rng(18).standard_normal((2, 8)).astype(np.float32)
    model = mlp(pnp, purejit.jit(dense(pnp)))
    traced, res = _flat_roll(model, ps, x)
    (run,) = res.report["rolled"]
    assert run["per_block"] == 2 and run["xs_packed"] == 2
    (cat,) = [op for op in res.fn.ops if op.name == "concatenate"]
    assert cat.results[0].type.shape == (4 * (64 + 8),)
    (scan,) = [op for op in res.fn.ops if op.name == "scan"]
    assert scan.attrs["num_consts"] == 1 and scan.operands[0].type.shape == (4, 72)
    assert scan.operands[-1].type.shape == (4,)  # the one xs: the row of each trip
    reads = [op for op in scan.regions[0].ops if op.name == "dynamic_slice"]
    assert sorted(op.attrs["slice_sizes"] for op in reads) == [[1, 8], [1, 64]]
    plain = RollLayers(pack_xs=False)(traced)
    verify(plain.fn)
    assert [op.name for op in plain.fn.ops].count("concatenate") == 2
    flat = leaves((ps, x))
    for a, b in zip(interpret(plain.fn, *flat), interpret(res.fn, *flat)):
        np.testing.assert_array_equal(b, a)

    # under grad the backward scan reads both from the same stack, by a row index
    def loss(ps, x):
        return pnp.sum(model(ps, x) ** 2)

    # (the stacks built in the program: with them as arguments they stay one per parameter)
    inside = {**ROLL, "stacked_params": False}
    rolled = purejit.jit(purejit.grad(loss), compiler_options=inside)
    report = roll_report(rolled, ps, x)
    assert report["rolled"][0]["xs_packed"] == 2
    moved = stacking_bytes(rolled.lower(ps, x).compile().as_text())
    assert moved["stack"] <= sum(np.asarray(a).nbytes for a in jax.tree.leaves(ps))
    jmodel = mlp(jnp, dense(jnp))
    want = jax.jit(jax.grad(lambda ps, x: jnp.sum(jmodel(ps, x) ** 2)))(ps, x)
    unrolled = purejit.jit(purejit.grad(loss))(ps, x)
    for a, b, c in zip(leaves(rolled(ps, x)), leaves(unrolled), leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)
