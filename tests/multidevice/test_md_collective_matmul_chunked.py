"""The collective-matmul pass's chunked form (`form="chunkedK"`, passes/_chunked.py): IR
before/after, the same numbers as the plain program per element (SPMD interpreter), the
dimension each rule cuts, refusals with their reasons, and `auto` choosing among forms.

The compiled 8-device checks (against the pass off and JAX's shard_map) are in
cases_collective_matmul_chunked.py.
"""

import os

import numpy as np
import pytest
from test_md_collective_matmul import MM, ops, tp_mlp

from purejit.ir import Builder, TensorType, parse, print_function, verify
from purejit.ir.spmd import interpret_spmd, replica_groups
from purejit.passes._chunked import Split, chunks_of, split
from purejit.passes._timing_units import decision_keys
from purejit.passes.collective_matmul import (
    CollectiveMatmul,
    TimedDecision,
    apply,
    find_candidates,
    refusal,
    signature,
)

F32 = np.float32
RNG = np.random.default_rng(1)


def equal_numbers(before, after, n):
    """The SPMD interpreter gives the same arrays, bit for bit."""
    args = [RNG.standard_normal((n,) + p.type.shape).astype(F32) for p in before.params]
    for a, b in zip(interpret_spmd(before, *args), interpret_spmd(after, *args)):
        assert a.shape == b.shape and np.array_equal(a, b), np.abs(a - b).max()


def test_tp_mlp_chunked2_ir_and_numbers():
    before = tp_mlp()
    res = CollectiveMatmul(mode="on", form="chunked2")(before)
    after = verify(res.fn)
    assert res.report["rewritten"] == 2
    assert [c["form"] for c in res.report["candidates"]] == ["chunked2", "chunked2"]
    mm = (
        "{lhs_batching_dimensions=[], rhs_batching_dimensions=[], "
        "lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]}"
    )
    g = "replica_groups=[[0, 1, 2, 3]]"
    want = "\n".join(
        [
            "func @tp_mlp(%0: f32[2,8], %1: f32[8,6], %2: f32[6,8]) -> (f32[2,8]) {",
            # x's 2 rows per device cut in two: chunk c holds row c of every device
            "  %3 = slice(%0) {start_indices=[0, 0], limit_indices=[1, 8], strides=[1, 1]}"
            " : (f32[1,8])",
            f"  %4 = all_gather(%3) {{{g}, all_gather_dim=0}} : (f32[4,8])",
            "  %5 = slice(%0) {start_indices=[1, 0], limit_indices=[2, 8], strides=[1, 1]}"
            " : (f32[1,8])",
            # the second all-gather waits for the first (XLA must not combine them)
            "  %6, %7 = optimization_barrier(%5, %4) : (f32[1,8], f32[4,8])",
            f"  %8 = all_gather(%6) {{{g}, all_gather_dim=0}} : (f32[4,8])",
            f"  %9 = dot_general(%7, %1) {mm} : (f32[4,6])",
            f"  %10 = dot_general(%8, %1) {mm} : (f32[4,6])",
            # rows (dev, c) of the gathered x are (n, k) -> device-major interleave
            "  %11 = reshape(%9) {shape=[4, 1, 6]} : (f32[4,1,6])",
            "  %12 = reshape(%10) {shape=[4, 1, 6]} : (f32[4,1,6])",
            "  %13 = concatenate(%11, %12) {dimension=1} : (f32[4,2,6])",
            "  %14 = reshape(%13) {shape=[8, 6]} : (f32[8,6])",
            "  %15 = tanh(%14) : (f32[8,6])",
            # the product's columns (from w2) cut in two: no row moves
            "  %16 = slice(%2) {start_indices=[0, 0], limit_indices=[6, 4], strides=[1, 1]}"
            " : (f32[6,4])",
            f"  %17 = dot_general(%15, %16) {mm} : (f32[8,4])",
            f'  %18 = reduce_scatter(%17) {{{g}, scatter_dimension=0, computation="add"}}'
            " : (f32[2,4])",
            "  %19 = slice(%2) {start_indices=[0, 4], limit_indices=[6, 8], strides=[1, 1]}"
            " : (f32[6,4])",
            f"  %20 = dot_general(%15, %19) {mm} : (f32[8,4])",
            "  %21, %22 = optimization_barrier(%20, %18) : (f32[8,4], f32[2,4])",
            f'  %23 = reduce_scatter(%21) {{{g}, scatter_dimension=0, computation="add"}}'
            " : (f32[2,4])",
            "  %24 = concatenate(%22, %23) {dimension=1} : (f32[2,8])",
            "  return %24",
            "}",
        ]
    )
    text = print_function(after)
    assert text == want, text
    assert print_function(parse(text)) == text
    equal_numbers(before, after, 4)


def test_free_chunks_have_no_barriers_and_the_same_numbers():
    before = tp_mlp()
    chained = verify(CollectiveMatmul(mode="on", form="chunked2")(before).fn)
    free = verify(CollectiveMatmul(mode="on", form="chunked2_free")(before).fn)
    assert ops(chained).count("optimization_barrier") == 2
    assert "optimization_barrier" not in ops(free)
    assert sorted(ops(free)) == sorted(o for o in ops(chained) if o != "optimization_barrier")
    equal_numbers(before, free, 4)
    # with 4 chunks, 3 barriers a chain: each collective waits for the one before
    fn = scatter_only(cols=4)
    after = verify(CollectiveMatmul(mode="on", form="chunked4")(fn).fn)
    scatters = [op for op in after.ops if op.name == "reduce_scatter"]
    barriers = [op for op in after.ops if op.name == "optimization_barrier"]
    assert len(scatters) == 4 and len(barriers) == 3
    for prev, bar, nxt in zip(scatters, barriers, scatters[1:]):
        assert bar.operands[1] is prev.results[0] and nxt.operands[0] is bar.results[0]
    equal_numbers(fn, after, 4)


@pytest.mark.parametrize("form", ["chunked2", "chunked4", "chunked4_free"])
def test_two_groups_on_a_2d_mesh(form):
    groups = replica_groups((2, 4), ("a", "x"), ("x",))  # ((0,1,2,3), (4,5,6,7))
    b = Builder("mlp")
    x = b.param(TensorType((4, 8), F32))  # 4 rows per device: 2 and 4 chunks
    w1 = b.param(TensorType((8, 6), F32))
    w2 = b.param(TensorType((6, 12), F32))
    (xg,) = b.op("all_gather", [x], {"replica_groups": groups, "all_gather_dim": 0})
    (h,) = b.op("dot_general", [xg, w1], MM)
    (y,) = b.op("dot_general", [h, w2], MM)
    rs = {"replica_groups": groups, "scatter_dimension": 0, "computation": "add"}
    (r,) = b.op("reduce_scatter", [y], rs)
    before = verify(b.finish([r]))
    after = verify(CollectiveMatmul(mode="on", form=form)(before).fn)
    k = chunks_of(form)
    assert ops(after).count("all_gather") == k and ops(after).count("reduce_scatter") == k
    equal_numbers(before, after, 8)


def gather_3d(batch=2, k_rows=2):
    """x [B, S, D] gathered along S (dim 1), the dot contracting D."""
    g = replica_groups((4,), ("x",), ("x",))
    b = Builder("g3")
    x = b.param(TensorType((batch, k_rows, 8), F32))
    w = b.param(TensorType((8, 5), F32))
    (xg,) = b.op("all_gather", [x], {"replica_groups": g, "all_gather_dim": 1})
    dims = dict(MM, lhs_contracting_dimensions=(2,))
    (y,) = b.op("dot_general", [xg, w], dims)  # [B, 4 S, 5]
    return verify(b.finish([y]))


def test_gather_cut_along_another_free_dimension_needs_no_interleave():
    fn = gather_3d()
    (c,) = find_candidates(fn)
    # B (dim 0) divides: cut there, the chunks concatenate along the result's dim 0
    assert split(c, 2) == Split(side=0, dim=0, out_dim=0, interleaved=False, k=2)
    after = verify(CollectiveMatmul(mode="on", form="chunked2")(fn).fn)
    assert "reshape" not in ops(after) and ops(after).count("all_gather") == 2
    equal_numbers(fn, after, 4)
    # B = 3 does not divide by 2: the gathered S (2 rows per device) is cut, interleaved
    odd = gather_3d(batch=3)
    (c,) = find_candidates(odd)
    assert split(c, 2) == Split(side=0, dim=1, out_dim=1, interleaved=True, k=2)
    equal_numbers(odd, verify(CollectiveMatmul(mode="on", form="chunked2")(odd).fn), 4)


def scatter_only(cols=3, rows=4, n=4):
    """reduce_scatter(dot(a, w)) of a [n * rows, 8] by w [8, cols], scattered along rows."""
    g = replica_groups((n,), ("x",), ("x",))
    b = Builder("rs")
    a = b.param(TensorType((n * rows, 8), F32))
    w = b.param(TensorType((8, cols), F32))
    (z,) = b.op("dot_general", [a, w], MM)
    rs = {"replica_groups": g, "scatter_dimension": 0, "computation": "add"}
    (r,) = b.op("reduce_scatter", [z], rs)
    return verify(b.finish([r]))


def test_scatter_cut_along_its_rows_when_no_other_dimension_divides():
    fn = scatter_only(cols=3)
    (c,) = find_candidates(fn)
    # 3 columns do not divide by 2: a's n * R = 16 rows are cut as (n, k, m) = (4, 2, 2)
    assert split(c, 2) == Split(side=0, dim=0, out_dim=0, interleaved=True, k=2)
    after = verify(CollectiveMatmul(mode="on", form="chunked2")(fn).fn)
    shapes = [op.results[0].type.shape for op in after.ops if op.name == "reshape"]
    assert (4, 2, 2, 8) in shapes and (8, 8) in shapes, shapes
    equal_numbers(fn, after, 4)
    # 4 columns divide: cut w's columns instead, no reshape
    even = scatter_only(cols=4)
    (c,) = find_candidates(even)
    assert split(c, 2) == Split(side=1, dim=1, out_dim=1, interleaved=False, k=2)
    after = verify(CollectiveMatmul(mode="on", form="chunked2")(even).fn)
    assert "reshape" not in ops(after)
    equal_numbers(even, after, 4)


def test_k_that_divides_nothing_is_refused_with_its_reason():
    fn = tp_mlp()  # x: 2 rows per device; the product f32[8,8]
    gather, scatter = find_candidates(fn)
    assert refusal(gather, "chunked4") == (
        "chunked4: the 2 rows per device of the gathered dim 0 of f32[2,8] do not divide "
        "into 4 chunks, nor does another free dimension of it"
    )
    assert refusal(scatter, "chunked4") is None  # its 8 columns divide by 4
    assert refusal(scatter, "chunked3") == (
        "chunked3: the 2 rows per device of the scattered dim 0 of f32[8,8] do not divide "
        "into 3 chunks, nor does another free dimension of the product"
    )
    assert refusal(gather, "chunked1") == "chunked1: needs at least 2 chunks"
    assert refusal(gather, "ring") is None
    res = CollectiveMatmul(mode="on", form="chunked4")(fn)
    gathered, scattered = res.report["candidates"]
    assert not gathered["rewritten"] and gathered["refused"].startswith("chunked4: the 2 rows")
    assert scattered["rewritten"] and res.report["rewritten"] == 1
    after = verify(res.fn)
    assert ops(after).count("all_gather") == 1 and ops(after).count("reduce_scatter") == 4
    equal_numbers(fn, after, 4)
    none = CollectiveMatmul(mode="on", form="chunked3")(fn)
    assert not none.changed and print_function(none.fn) == print_function(fn)
    with pytest.raises(ValueError, match="do not divide into 4"):
        apply(fn, [gather], form="chunked4")  # by hand, unchecked: refused loudly
    with pytest.raises(ValueError, match="form must be"):
        CollectiveMatmul(mode="on", form="chunky")(fn)
    with pytest.raises(ValueError, match="form must be"):
        CollectiveMatmul(mode="on", form="chunked_free")(fn)
    with pytest.raises(ValueError, match="form must be"):
        CollectiveMatmul(mode="off", auto_forms=("ring", "halves"))(fn)


def test_unproved_cases_stay_as_written():
    g = ((0, 1, 2, 3),)
    b = Builder("keep")
    x = b.param(TensorType((4, 2), F32))
    w = b.param(TensorType((8, 4), F32))
    v = b.param(TensorType((4, 8), F32))
    (xg,) = b.op("all_gather", [x], {"replica_groups": g, "all_gather_dim": 1})  # contracting
    (y,) = b.op("dot_general", [xg, w], MM)
    (m,) = b.op(
        "reduce_scatter",
        [y],
        {"replica_groups": g, "scatter_dimension": 0, "computation": "maximum"},
    )
    (vg,) = b.op("all_gather", [v], {"replica_groups": g, "all_gather_dim": 0})
    (z,) = b.op("dot_general", [vg, w], MM)  # the gathered v has a second use
    fn = verify(b.finish([m, z, vg]))
    assert find_candidates(fn) == []
    res = CollectiveMatmul(mode="on", form="chunked2")(fn)
    assert not res.changed and print_function(res.fn) == print_function(fn)


def test_keys_name_the_forms_timed():
    gather, _ = find_candidates(tp_mlp())
    ring = signature(gather, 4)
    assert ring.startswith("mesh 4 forms ring unroll False\n")
    assert signature(gather, 4, forms=("ring",)) == ring
    both = signature(gather, 4, forms=("ring", "chunked2"))
    two = signature(gather, 4, forms=("chunked2",))
    assert both.startswith("mesh 4 forms ring,chunked2 unroll False\n")
    assert two.startswith("mesh 4 forms chunked2\n") and len({ring, both, two}) == 3
    # the loop or unrolled ring does not matter where the ring is not timed
    assert signature(gather, 4, True, ("chunked2",)) == two
    assert signature(gather, 4, True, ("ring", "chunked2")) != both
    cm = CollectiveMatmul(auto_forms=("ring", "chunked2"))
    assert cm.key_signature(4)(gather) == both
    # a pass timing other forms looks its decisions up under other keys
    fn = tp_mlp()
    keys = decision_keys(fn, find_candidates(fn), cm.key_signature(None))
    other = decision_keys(fn, find_candidates(fn), CollectiveMatmul().key_signature(None))
    assert set(keys.values()).isdisjoint(other.values())


def _unit_decision(rows):
    """A timing unit's decision over `rows` of (form, plain_s, form_s): the best by ratio,
    taken when over 2% faster."""
    rows = [(f, p, s, s < 0.98 * p) for f, p, s in rows]
    form, plain_s, form_s, faster = min(rows, key=lambda r: r[2] / r[1])
    return TimedDecision(plain_s, form_s, faster, "injected", form, tuple(rows))


def test_auto_takes_the_form_that_beats_plain_by_the_most_for_the_whole_unit():
    fn = tp_mlp()
    gather, scatter = find_candidates(fn)
    cm = CollectiveMatmul(auto_forms=("ring", "chunked2", "chunked4"))
    keys = decision_keys(fn, [gather, scatter], cm.key_signature(None))
    # the MLP is one timing unit: both members carry its one decision (the gather's 2 rows
    # per device cannot take 4 chunks, so the unit was not timed in chunked4)
    rows = [("ring", 1e-3, 1.2e-3), ("chunked2", 1.1e-3, 0.9e-3)]
    d = _unit_decision(rows)
    assert d.form == "chunked2"
    res = cm.timed({keys[gather]: d, keys[scatter]: d})(fn)
    forms = [c["form"] for c in res.report["candidates"]]
    assert forms == ["chunked2", "chunked2"] and res.report["rewritten"] == 2
    per_form = res.report["candidates"][0]["forms"]
    assert {f: v["ring"] for f, v in per_form.items()} == {"ring": False, "chunked2": True}
    line = (
        "timed plain 1100.0 us, ring 1200.0 us (plain 1000.0 us), chunked2 900.0 us, chose "
        "chunked2 (injected)"
    )
    assert res.report["timed"] == f"all_gather->dot {line}; dot->reduce_scatter {line}"
    after = verify(res.fn)
    assert ops(after).count("all_gather") == 2 and ops(after).count("reduce_scatter") == 2
    assert "collective_permute" not in ops(after)
    equal_numbers(fn, after, 4)
    # a decision naming a form a member cannot take (injected): that member stays
    four = _unit_decision([("chunked4", 1e-3, 0.8e-3)])
    res = cm.timed({keys[gather]: four, keys[scatter]: four})(fn)
    assert [c["form"] for c in res.report["candidates"]] == [None, "chunked4"]
    assert "4" in res.report["candidates"][0]["refused"]
    # nothing beats plain: left as written
    slow = _unit_decision([("ring", 1e-3, 2e-3), ("chunked2", 1e-3, 0.99e-3)])
    assert slow.form == "chunked2" and not slow.ring  # 1% faster: within the margin
    res = cm.timed({keys[gather]: slow, keys[scatter]: slow})(fn)
    assert not res.changed and [c["form"] for c in res.report["candidates"]] == [None, None]
    # decisions are kept per form set: a pass timing the ring alone finds none of these
    only_ring = CollectiveMatmul(auto_forms=("ring",)).timed({keys[gather]: d, keys[scatter]: d})
    got = only_ring(fn)
    assert not got.changed and [c["form"] for c in got.report["candidates"]] == [None, None]


def test_compiled_on_cpu_devices_against_pass_off_and_jax():
    from _harness import run_cases

    cases = os.path.join(os.path.dirname(__file__), "cases_collective_matmul_chunked.py")
    results = run_cases(cases)
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())


def test_compiler_option_names_the_form():
    from purejit.compiler.options import CompilerOptions
    from purejit.passes import Pipeline

    for value in (None, "off", "auto", "ring", "chunked2", "chunked8", "chunked4_free"):
        assert CompilerOptions.parse({"collective_matmul": value}).collective_matmul == value
    for bad in ("chunked1", "chunky", "on", 4):
        with pytest.raises(ValueError, match="collective_matmul="):
            CompilerOptions.parse({"collective_matmul": bad})

    def first(value, passes=None):
        p = CompilerOptions.parse({"collective_matmul": value}).pipeline(passes)
        return p.passes[0]

    assert first("chunked4") == CollectiveMatmul(mode="on", form="chunked4")
    assert first("ring") == CollectiveMatmul(mode="on")
    assert first("auto") == CollectiveMatmul()
    assert "collective_matmul" not in CompilerOptions.parse({}).pipeline().names()
    assert (
        "collective_matmul"
        not in CompilerOptions.parse({"collective_matmul": "off"}).pipeline().names()
    )
    with pytest.raises(ValueError, match="set it in one place"):
        first("chunked2", Pipeline([CollectiveMatmul()]))


def mlp_with(region, n=4, rows=2, extra_result=False):
    """all_gather -> dot -> region(b, h) -> dot -> reduce_scatter; `region` builds the ops
    between the matmuls with Builder `b` and returns their last value."""
    g = replica_groups((n,), ("x",), ("x",))
    b = Builder("mlp")
    x = b.param(TensorType((rows, 8), F32))
    w1 = b.param(TensorType((8, 6), F32))
    w2 = b.param(TensorType((6, 8), F32))
    (xg,) = b.op("all_gather", [x], {"replica_groups": g, "all_gather_dim": 0})
    (h,) = b.op("dot_general", [xg, w1], MM)
    a = region(b, h)
    (y,) = b.op("dot_general", [a, w2], MM)
    rs = {"replica_groups": g, "scatter_dimension": 0, "computation": "add"}
    (r,) = b.op("reduce_scatter", [y], rs)
    return verify(b.finish([r, h] if extra_result else [r]))


def gelu_ish(b, h):
    """tanh(h + bias) * 0.5 with a bias per column and a scalar, both broadcast (the scalar
    behind shard_map's typing mark, as traced)."""
    bias = b.param(TensorType((6,), F32))
    shape = h.type.shape
    (bb,) = b.op("broadcast_in_dim", [bias], {"shape": shape, "broadcast_dimensions": (1,)})
    (half,) = b.op("constant", [], {"value": np.array(0.5, F32)})
    (hb,) = b.op("broadcast_in_dim", [half], {"shape": shape, "broadcast_dimensions": ()})
    g = replica_groups((4,), ("x",), ("x",))
    (hb,) = b.op("pvary", [hb], {"axes": ("x",), "replica_groups": g})
    (s,) = b.op("add", [h, bb])
    (t,) = b.op("tanh", [s])
    (m,) = b.op("multiply", [t, hb])
    return m


def test_pipelined_layer_moves_no_row_and_keeps_the_numbers():
    before = tp_mlp()
    res = CollectiveMatmul(mode="on", form="pipelined2")(before)
    after = verify(res.fn)
    assert [c["form"] for c in res.report["candidates"]] == ["pipelined2"] * 2
    assert res.report["rewritten"] == 2
    # each piece: its all-gather, both matmuls, tanh, its reduce-scatter; no reshape
    names = ops(after)
    assert names.count("all_gather") == names.count("reduce_scatter") == 2
    assert names.count("tanh") == 2 and names.count("dot_general") == 4
    assert "reshape" not in names and names.count("concatenate") == 1
    assert names.count("optimization_barrier") == 2
    equal_numbers(before, after, 4)
    free = verify(CollectiveMatmul(mode="on", form="pipelined2_free")(before).fn)
    assert "optimization_barrier" not in ops(free)
    equal_numbers(before, free, 4)


def test_pipelined_layer_through_broadcasts_constant_along_the_rows():
    before = mlp_with(gelu_ish, rows=4)
    res = CollectiveMatmul(mode="on", form="pipelined4")(before)
    assert [c["form"] for c in res.report["candidates"]] == ["pipelined4"] * 2
    after = verify(res.fn)
    # the bias and the scalar broadcast once at a piece's shape (4 devices x 1 row)
    shapes = [op.results[0].type.shape for op in after.ops if op.name == "broadcast_in_dim"]
    assert shapes.count((4, 6)) >= 2, shapes
    assert ops(after).count("tanh") == 4
    equal_numbers(before, after, 4)


def row_bias(b, h):
    """h + a bias per row: it varies along the gathered rows."""
    bias = b.param(TensorType((8,), F32))
    shape = h.type.shape
    (bb,) = b.op("broadcast_in_dim", [bias], {"shape": shape, "broadcast_dimensions": (0,)})
    (s,) = b.op("add", [h, bb])
    return s


def reversed_rows(b, h):
    (r,) = b.op("reverse", [h], {"dimensions": (0,)})
    return r


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(lambda: mlp_with(row_bias), id="bias_varies_along_rows"),
        pytest.param(lambda: mlp_with(gelu_ish, extra_result=True), id="product_used_outside"),
        # reversing the rows moves them across pieces: not elementwise, not pipelined
        pytest.param(lambda: mlp_with(reversed_rows), id="rows_reversed"),
    ],
)
def test_unproved_layers_take_the_chunked_form_per_candidate(fn):
    before = fn()
    res = CollectiveMatmul(mode="on", form="pipelined2")(before)
    forms = [c["form"] for c in res.report["candidates"]]
    assert forms == ["chunked2"] * len(forms) and len(forms) >= 1, forms
    after = verify(res.fn)
    equal_numbers(before, after, 4)


def test_pipelined_is_forced_only():
    fn = tp_mlp()
    with pytest.raises(ValueError, match="does not time pipelined"):
        CollectiveMatmul(auto_forms=("ring", "pipelined2")).timed({})(fn)
    # 4 pieces do not divide the 2 rows: no layer; the scatter alone takes 4 chunks
    res = CollectiveMatmul(mode="on", form="pipelined4")(fn)
    assert [c["form"] for c in res.report["candidates"]] == [None, "chunked4"]
    assert res.report["candidates"][0]["refused"].startswith("chunked4: the 2 rows")


def gather_case(gather_dim, contract, shape, n):
    """all_gather(x, gather_dim) -> dot contracting x's dim `contract` with w [D, 3]."""
    g = replica_groups((n,), ("x",), ("x",))
    b = Builder("g")
    x = b.param(TensorType(shape, F32))
    w = b.param(TensorType((shape[contract], 3), F32))
    (xg,) = b.op("all_gather", [x], {"replica_groups": g, "all_gather_dim": gather_dim})
    dims = dict(MM, lhs_contracting_dimensions=(contract,))
    (y,) = b.op("dot_general", [xg, w], dims)
    return verify(b.finish([y]))


def scatter_case(scatter_dim, shape, n):
    """reduce_scatter(dot(a [*shape[:-1], 5], w [5, shape[-1]]), scatter_dim)."""
    g = replica_groups((n,), ("x",), ("x",))
    b = Builder("s")
    a = b.param(TensorType((*shape[:-1], 5), F32))
    w = b.param(TensorType((5, shape[-1]), F32))
    dims = dict(MM, lhs_contracting_dimensions=(len(shape) - 1,))
    (z,) = b.op("dot_general", [a, w], dims)
    rs = {"replica_groups": g, "scatter_dimension": scatter_dim, "computation": "add"}
    (r,) = b.op("reduce_scatter", [z], rs)
    return verify(b.finish([r]))


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda n: gather_case(0, 1, (4, 6), n), id="gather_rows"),
        pytest.param(lambda n: gather_case(1, 0, (6, 4), n), id="gather_cols"),
        pytest.param(lambda n: gather_case(1, 2, (3, 4, 5), n), id="gather_mid_b3"),
        pytest.param(lambda n: gather_case(0, 2, (6, 2, 5), n), id="gather_first_of_3"),
        pytest.param(lambda n: gather_case(2, 1, (2, 5, 6), n), id="gather_last"),
        pytest.param(lambda n: scatter_case(0, (n * 6, 3), n), id="scatter_rows_3_cols"),
        pytest.param(lambda n: scatter_case(0, (n * 4, 8), n), id="scatter_rows_8_cols"),
        pytest.param(lambda n: scatter_case(1, (3, n * 4, 5), n), id="scatter_mid"),
        pytest.param(lambda n: scatter_case(1, (2, n * 6), n), id="scatter_last"),
    ],
)
def test_every_split_rule_keeps_the_numbers_or_refuses(build, k, n):
    """Each cut the rules allow, at every size that divides or not: the same numbers as the
    plain program, or the candidate left as written with the reason."""
    before = build(n)
    (c,) = find_candidates(before)
    res = CollectiveMatmul(mode="on", form=f"chunked{k}")(before)
    (est,) = res.report["candidates"]
    if isinstance(split(c, k), str):
        assert not res.changed and est["refused"] == split(c, k)
        assert print_function(res.fn) == print_function(before)
        return
    after = verify(res.fn)
    collective = c.collective.name
    assert ops(after).count(collective) == k
    equal_numbers(before, after, n)


@pytest.mark.parametrize("k", [2, 4])
def test_pipelined_layer_gathered_along_a_middle_dimension(k):
    """x [B, S, D] gathered along S: the pieces are cut along S, through dims that are not 0."""
    g = replica_groups((4,), ("x",), ("x",))
    b = Builder("seq")
    x = b.param(TensorType((3, 4, 8), F32))
    w1 = b.param(TensorType((8, 6), F32))
    w2 = b.param(TensorType((6, 5), F32))
    (xg,) = b.op("all_gather", [x], {"replica_groups": g, "all_gather_dim": 1})
    (h,) = b.op("dot_general", [xg, w1], dict(MM, lhs_contracting_dimensions=(2,)))
    (t,) = b.op("tanh", [h])
    (y,) = b.op("dot_general", [t, w2], dict(MM, lhs_contracting_dimensions=(2,)))
    rs = {"replica_groups": g, "scatter_dimension": 1, "computation": "add"}
    (r,) = b.op("reduce_scatter", [y], rs)
    before = verify(b.finish([r]))
    res = CollectiveMatmul(mode="on", form=f"pipelined{k}")(before)
    assert [c["form"] for c in res.report["candidates"]] == [f"pipelined{k}"] * 2
    after = verify(res.fn)
    assert ops(after).count("tanh") == k and "reshape" not in ops(after)
    equal_numbers(before, after, 4)


def test_a_layer_whose_collectives_span_other_groups_is_not_pipelined():
    """All-gather over one mesh axis, reduce-scatter over the other: the pieces' rows would
    not line up; each candidate takes the chunked form alone."""
    along = replica_groups((2, 4), ("a", "x"), ("x",))  # ((0,1,2,3), (4,5,6,7))
    across = replica_groups((2, 4), ("a", "x"), ("a",))  # ((0,4), (1,5), ...)
    b = Builder("two_axes")
    x = b.param(TensorType((2, 8), F32))
    w1 = b.param(TensorType((8, 6), F32))
    w2 = b.param(TensorType((6, 8), F32))
    (xg,) = b.op("all_gather", [x], {"replica_groups": along, "all_gather_dim": 0})
    (h,) = b.op("dot_general", [xg, w1], MM)
    (t,) = b.op("tanh", [h])
    (y,) = b.op("dot_general", [t, w2], MM)
    rs = {"replica_groups": across, "scatter_dimension": 0, "computation": "add"}
    (r,) = b.op("reduce_scatter", [y], rs)
    before = verify(b.finish([r]))
    res = CollectiveMatmul(mode="on", form="pipelined2")(before)
    assert [c["form"] for c in res.report["candidates"]] == ["chunked2", "chunked2"]
    equal_numbers(before, verify(res.fn), 8)
