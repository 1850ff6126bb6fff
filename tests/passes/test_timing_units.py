"""The timing units of the collective-matmul pass's timed `auto` decision
(`passes/_timing_units.py`): which candidates are timed together, which elementwise ops come
with them, and the text their decisions are kept under."""

from __future__ import annotations

from purejit.ir import parse, print_function, verify
from purejit.passes import _timing_units
from purejit.passes.collective_matmul import find_candidates, signature

# the sequence-parallel Megatron MLP as one device's body: all-gather, matmul, a bias and a
# GELU-like chain, matmul, reduce-scatter
MLP = """
func @mlp(%0: f32[4,8], %1: f32[8,6], %2: f32[6], %3: f32[6,8]) -> (f32[4,8]) {
  %4 = all_gather(%0) {replica_groups=[[0, 1]], all_gather_dim=0, axes=["i"]} : (f32[8,8])
  %5 = dot_general(%4, %1) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[8,6])
  %6 = broadcast_in_dim(%2) {shape=[8, 6], broadcast_dimensions=[1]} : (f32[8,6])
  %7 = add(%5, %6) : (f32[8,6])
  %8 = constant() {value=array<f32[]: [0.5]>} : (f32[])
  %9 = broadcast_in_dim(%8) {shape=[8, 6], broadcast_dimensions=[]} : (f32[8,6])
  %10 = multiply(%9, %7) : (f32[8,6])
  %11 = tanh(%10) : (f32[8,6])
  %12 = multiply(%7, %11) : (f32[8,6])
  %13 = dot_general(%12, %3) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[8,8])
  %14 = reduce_scatter(%13) {replica_groups=[[0, 1]], scatter_dimension=0, computation="add", axes=["i"]} : (f32[4,8])
  return %14
}
"""

# two unrelated candidates: an all-gather's matmul read by a reduction (no chain), and a
# reduce-scatter of a matmul of the function's own inputs
UNRELATED = """
func @two(%0: f32[4,8], %1: f32[8,6], %2: f32[8,6], %3: f32[6,8]) -> (f32[8], f32[4,8]) {
  %4 = all_gather(%0) {replica_groups=[[0, 1]], all_gather_dim=0, axes=["i"]} : (f32[8,8])
  %5 = dot_general(%4, %1) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[8,6])
  %6 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %7 = reduce(%5, %6) {dimensions=[1]} : (f32[8]) region(%8: f32[], %9: f32[]) {
    %10 = add(%8, %9) : (f32[])
    return %10
  }
  %11 = exponential(%2) : (f32[8,6])
  %12 = dot_general(%11, %3) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[8,8])
  %13 = reduce_scatter(%12) {replica_groups=[[0, 1]], scatter_dimension=0, computation="add", axes=["i"]} : (f32[4,8])
  return %7, %13
}
"""


def _units(text):
    fn = parse(text)
    return fn, _timing_units.timing_units(fn, find_candidates(fn))


def test_the_mlp_is_one_joint_unit_with_its_chain():
    fn, units = _units(MLP)
    (unit,) = units
    assert [c.kind for c in unit.members] == ["all_gather->dot", "dot->reduce_scatter"]
    assert [op.name for op in unit.chain] == ["add", "multiply", "tanh", "multiply"]
    assert unit.describe() == "all_gather->dot + dot->reduce_scatter with add, multiply, tanh"
    plain, members = unit.function()
    verify(plain)
    # the unit is the whole body here: the bias and the constant come with their broadcasts
    assert print_function(plain).replace("@all_gather_dot_dot_reduce_scatter", "@mlp") == (
        print_function(fn)
    )
    assert [m.name for m in members] == ["all_gather", "reduce_scatter"]


def test_the_ring_variant_keeps_the_chain():
    """Both timing programs hold the tanh; the ring one has no all-gather or reduce-scatter."""
    from purejit.compiler.candidate_timing import unit_functions

    _, (unit,) = _units(MLP)
    for unroll in (False, True):
        plain, ring = unit_functions(unit, unroll)
        names = [op.name for op in ring.walk()]
        assert "tanh" in [op.name for op in plain.ops] and "tanh" in names
        assert "all_gather" not in names and "reduce_scatter" not in names
        assert "collective_permute" in names
        verify(ring)
    assert plain.param_types == ring.param_types and plain.result_types == ring.result_types


def test_unrelated_candidates_are_timed_apart():
    _, units = _units(UNRELATED)
    assert [[c.kind for c in u.members] for u in units] == [
        ["all_gather->dot"],
        ["dot->reduce_scatter"],
    ]
    gather, scatter = units
    # the all-gather's matmul is read by a reduction: no chain; the reduce-scatter's matmul
    # reads exp of an input: the exponential comes along (its input a parameter)
    assert gather.chain == () and gather.describe() == "all_gather->dot alone"
    assert [op.name for op in scatter.chain] == ["exponential"]
    g, _ = gather.function()
    assert [op.name for op in g.ops] == ["all_gather", "dot_general"]
    s, _ = scatter.function()
    assert [op.name for op in s.ops] == ["exponential", "dot_general", "reduce_scatter"]
    assert s.param_types == parse(UNRELATED).param_types[2:]


def test_a_chain_value_read_elsewhere_is_a_result():
    """A chain value the rest of the body reads is a result of the unit's function (the
    program materialises it, so the timing does)."""
    text = MLP.replace("-> (f32[4,8])", "-> (f32[4,8], f32[8,6])").replace(
        "return %14", "return %14, %11"
    )
    _, (unit,) = _units(text)
    plain, _ = unit.function()
    # in the order the unit defines them: the tanh, then the reduce-scatter
    assert plain.result_types == parse(text).result_types[::-1]


def test_the_key_differs_with_another_epilogue():
    fn, (unit,) = _units(MLP)
    other, (unit2,) = _units(MLP.replace("tanh(", "exponential("))
    sig = lambda c: signature(c, 2)  # noqa: E731
    # the candidates alone are the same; the units are not
    assert [signature(c, 2) for c in find_candidates(fn)] == [
        signature(c, 2) for c in find_candidates(other)
    ]
    assert unit.text(sig) != unit2.text(sig)
    keys = _timing_units.decision_keys(fn, find_candidates(fn), sig)
    keys2 = _timing_units.decision_keys(other, find_candidates(other), sig)
    assert len(set(keys.values())) == 2 and not set(keys.values()) & set(keys2.values())
    # the same body parsed again gives the same keys (the pass looks them up afresh)
    again = parse(MLP)
    assert sorted(_timing_units.decision_keys(again, find_candidates(again), sig).values()) == (
        sorted(keys.values())
    )


def test_both_timing_programs_compute_the_same_numbers():
    """The ring variant is the pass's own rewrite of the unit's function: on two devices the
    SPMD interpreter gives the plain variant's numbers (the chain included)."""
    import numpy as np

    from purejit.compiler.candidate_timing import unit_functions
    from purejit.ir.spmd import interpret_spmd

    rng = np.random.default_rng(0)
    for text in (MLP, UNRELATED):
        fn = parse(text)
        for unit in _timing_units.timing_units(fn, find_candidates(fn)):
            for unroll in (False, True):
                plain, ring = unit_functions(unit, unroll)
                args = [rng.standard_normal((2, *t.shape)).astype(np.float32)
                        for t in plain.param_types]  # fmt: skip
                for a, b in zip(interpret_spmd(plain, *args), interpret_spmd(ring, *args)):
                    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_small_constants_come_along_and_large_ones_are_inputs(monkeypatch):
    text = MLP.replace(
        "%8 = constant() {value=array<f32[]: [0.5]>} : (f32[])\n"
        "  %9 = broadcast_in_dim(%8) {shape=[8, 6], broadcast_dimensions=[]} : (f32[8,6])",
        "%8 = constant() {value=array<f32[]: [0.5]>} : (f32[])\n"
        "  %9 = constant() {value=array<f32[8,6]: 0x" + "0000003f" * 48 + ">} : (f32[8,6])",
    )
    _, (unit,) = _units(text)
    plain, _ = unit.function()
    assert "constant" in [op.name for op in plain.ops] and len(plain.params) == 4
    monkeypatch.setattr(_timing_units, "MAX_CONSTANT", 47)
    plain, _ = unit.function()
    # the 48-element constant is now a fifth input; the key text no longer holds its bytes
    assert "constant" not in [op.name for op in plain.ops] and len(plain.params) == 5
    assert "0000003f" not in unit.text(lambda c: "")


def test_each_form_takes_every_member_of_the_unit_and_keeps_the_numbers():
    """`auto` times each of its forms with every member of a joint unit in that form: the
    rings, both collectives in 2 pieces, both in 4, never a mix; each computes the plain
    unit's numbers (SPMD interpreter, two devices), the chain kept."""
    import numpy as np

    from purejit.compiler.candidate_timing import unit_functions
    from purejit.ir.spmd import interpret_spmd

    _, (unit,) = _units(MLP)
    plain, *variants = unit_functions(unit, False, ("ring", "chunked2", "chunked4"))
    assert len(variants) == 3
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((2, *t.shape)).astype(np.float32) for t in plain.param_types]
    want = interpret_spmd(plain, *args)
    for k, fn in zip((0, 2, 4), variants):
        verify(fn)
        names = [op.name for op in fn.walk()]
        assert names.count("all_gather") == names.count("reduce_scatter") == k, names
        assert ("collective_permute" in names) == (k == 0) and "tanh" in names
        for a, b in zip(want, interpret_spmd(fn, *args)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
