"""Liveness and buffer assignment: live ranges, in-place reuse, donation, peak live bytes.

Peaks are computed by hand in the comments; one case is compared with XLA's own
`peak_memory_in_bytes` for the same program."""

import numpy as np
import pytest
from purejit.ir import interpret, parse, print_function
from purejit.passes.liveness import BufferAssignment, memory_plan, pair_aliases
from purejit.passes.pipeline import Pipeline

K = 1024  # bytes of an f32[256]

CHAIN = """func @chain(%0: f32[256], %1: f32[256]) -> (f32[256]) {
  %2 = exponential(%0) : (f32[256])
  %3 = multiply(%2, %1) : (f32[256])
  %4 = reshape(%3) {shape=[16, 16]} : (f32[16,16])
  %5 = reshape(%4) {shape=[256]} : (f32[256])
  %6 = add(%5, %0) : (f32[256])
  return %6
}"""


def _by_name(plan):
    return {plan.names[v]: v for v in plan.assignment}


def test_chain_peak_by_hand():
    # live bytes per op (params %0, %1 = 2K throughout):
    #   op0 exp:      %2 new                               -> 3K
    #   op1 multiply: %2 dies here, %3 written in place     -> 3K
    #   op2 reshape:  %3 (dies) and %4 (new buffer)         -> 4K  <- peak
    #   op3 reshape:  %4 (dies), %5 reuses %3's buffer      -> 4K
    #   op4 add:      %5 dies, %6 written over it (output)  -> 3K
    plan = memory_plan(parse(CHAIN))
    assert plan.peak_bytes == 4 * K and plan.peak_at == 2
    v = _by_name(plan)
    a = plan.assignment
    assert a[v["%3"]] == a[v["%2"]] and v["%3"] in plan.in_place
    assert a[v["%5"]] == a[v["%3"]] and v["%5"] not in plan.in_place  # reused, not in place
    assert a[v["%6"]] == a[v["%5"]] and v["%6"] in plan.in_place
    assert a[v["%4"]] != a[v["%3"]]  # a reshape is not elementwise: no overwrite
    assert plan.live_range[v["%2"]] == (0, 1) and plan.live_range[v["%0"]] == (-1, 5)
    assert plan.param_bytes == 2 * K and plan.output_bytes == K and plan.temp_bytes == K
    assert plan.unplanned_temp_bytes == 4 * K  # %2 %3 %4 %5 without reuse
    assert len(plan.buffers) == 4


def test_format_shows_the_plan():
    text = memory_plan(parse(CHAIN)).format()
    assert "peak live      4.0 KiB at op #2 reshape" in text
    assert "%2[0, 1] -> %3[1, 2] in place -> %5[3, 4] -> %6[4, 5] in place" in text
    assert "b0      param   1.0 KiB     %0[-1, 5]" in text


def test_dead_result_is_freed_at_once_and_reused():
    src = """func @d(%0: f32[256]) -> (f32[256]) {
  %1 = reverse(%0) {dimensions=[0]} : (f32[256])
  %2 = reverse(%0) {dimensions=[0]} : (f32[256])
  %3 = negate(%2) : (f32[256])
  return %3
}"""
    # %1 is never used: its buffer is free after op 0 and %2 takes it; %3 overwrites %2
    plan = memory_plan(parse(src))
    v = _by_name(plan)
    assert plan.assignment[v["%2"]] == plan.assignment[v["%1"]]
    assert plan.peak_bytes == 2 * K and len(plan.buffers) == 2


def test_constants_and_fused_broadcasts_take_no_buffer():
    src = """func @c(%0: f32[256]) -> (f32[256]) {
  %1 = constant() {value=array<f32[]: [2.0]>} : (f32[])
  %2 = broadcast_in_dim(%1) {shape=[256], broadcast_dimensions=[]} : (f32[256])
  %3 = multiply(%0, %2) : (f32[256])
  return %3
}"""
    plan = memory_plan(parse(src))
    v = {plan.names[x]: x for x in plan.names}
    assert v["%2"] in plan.virtual and v["%1"] in plan.constants
    assert plan.constant_bytes == 4 and plan.peak_bytes == 2 * K


SGD = """\
func @sgd(%0: f32[1024], %1: f32[1024], %2: f32[]) -> (f32[1024]) {
  %3 = fusion(%0, %1, %2) {kind="loop"} : (f32[1024]) region(%4: f32[1024], %5: f32[1024], \
%6: f32[]) {
    %7 = broadcast_in_dim(%6) {shape=[1024], broadcast_dimensions=[]} : (f32[1024])
    %8 = multiply(%7, %5) : (f32[1024])
    %9 = subtract(%4, %8) : (f32[1024])
    return %9
  }
  return %3
}"""


def test_donated_parameter_holds_the_output():
    fn = parse(SGD)
    # params 4K + 4K + 4 B; the output is 4K more unless it is written into donated %0
    plain = memory_plan(fn)
    assert plain.peak_bytes == 12 * K + 4 and plain.alias_bytes == 0
    donated = memory_plan(fn, donated=[True, False, False])
    assert donated.peak_bytes == 8 * K + 4
    assert donated.alias_bytes == 4 * K and donated.aliases == {0: 0}
    assert donated.output_bytes == 4 * K  # counted as XLA does: aliased outputs included
    assert "param*" in donated.format()


def test_plan_matches_xla_peak_for_the_same_program():
    from purejit.backend import pjrt, stablehlo

    fn = parse(SGD)
    alias = ["{tf.aliasing_output = 0 : i32}", "", ""]
    for donated, attrs in (([False] * 3, None), ([True, False, False], alias)):
        plan = memory_plan(fn, donated=donated)
        exe = pjrt.compile(stablehlo.emit(fn, arg_attrs=attrs), fn.param_types, fn.result_types)
        xla = exe.memory_analysis()
        # XLA adds a few bytes of bookkeeping (the scalar, the result tuple's pointer)
        assert 0 <= xla.peak_memory_in_bytes - plan.peak_bytes <= 64, (plan.format(), xla)
        assert xla.alias_size_in_bytes == plan.alias_bytes


def test_pair_aliases():
    from purejit.ir import TensorType

    t4, t2 = TensorType((4,), np.float32), TensorType((2,), np.float32)
    assert pair_aliases([t4, t4, t2], [True, True, True], [t4, t2]) == ({0: 0, 2: 1}, [1])
    with pytest.raises(ValueError):
        pair_aliases([t4], [True, False], [t4])


def test_pass_must_not_change_the_function_and_reports_the_plan():
    fn = parse(CHAIN)
    before = print_function(fn)
    out, records = Pipeline(passes=[BufferAssignment()]).run(fn)
    assert print_function(out) == before  # IR in == IR out
    (rec,) = [r for r in records if r.name == "buffer_assignment"]
    assert not rec.changed and rec.report["peak_bytes"] == 4 * K
    assert rec.report["plan"].format().startswith("memory plan of @chain")
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    np.testing.assert_array_equal(interpret(out, x, x)[0], interpret(fn, x, x)[0])


def test_memory_plan_of_a_lowered_function_next_to_xla():
    import purejit

    def sgd(p, g):
        return p - 0.1 * g

    x = np.ones(256, np.float32)
    lowered = purejit.jit(sgd, donate_argnums=0).lower(x, x)
    plan = memory_plan(lowered)  # takes the donation from the Lowered
    assert plan.aliases == {0: 0} and plan.alias_bytes == K
    table = plan.format_vs_xla(lowered.compile().memory_analysis())
    assert table.splitlines()[0].split() == ["bytes", "purejit", "plan", "XLA"]
    assert "aliased" in table and table.count("1.0 KiB") >= 2
