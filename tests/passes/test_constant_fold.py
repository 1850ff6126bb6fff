"""Constant folding with the reference rules: IR text in -> IR text out, must-not-change
cases, and the interpreter gives the same numbers."""

import numpy as np
import pytest
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes.constant_fold import ConstantFold
from purejit.passes.cse import CSE
from purejit.passes.dce import DCE
from purejit.passes.pipeline import FixedPoint
from purejit.passes.simplify import Simplify


def _run(src: str, passes):
    fn = verify(parse(src))
    res = passes(fn)
    verify(res.fn)
    args = [
        np.random.default_rng(0).standard_normal(p.type.shape).astype(p.type.dtype)
        for p in fn.params
    ]
    for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
        np.testing.assert_array_equal(b, a)
    return print_function(res.fn), res


SRC = """func @f(%0: f32[4]) -> (f32[4]) {
  %1 = constant() {value=array<f32[4]: [1.0, 2.0, 3.0, 4.0]>} : (f32[4])
  %2 = constant() {value=array<f32[4]: [0.5, 0.5, 0.5, 0.5]>} : (f32[4])
  %3 = multiply(%1, %2) : (f32[4])
  %4 = sqrt(%3) : (f32[4])
  %5 = constant() {value=array<f32[]: [2.0]>} : (f32[])
  %6 = broadcast_in_dim(%5) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %7 = add(%6, %6) : (f32[4])
  %8 = constant() {value=array<s32[]: [7]>} : (s32[])
  %9 = constant() {value=array<s32[]: [-2]>} : (s32[])
  %10 = divide(%8, %9) : (s32[])
  %11 = convert(%10) {dtype=f32} : (f32[])
  %12 = broadcast_in_dim(%11) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %13 = add(%0, %4) : (f32[4])
  %14 = add(%13, %7) : (f32[4])
  %15 = multiply(%14, %12) : (f32[4])
  return %15
}"""


def test_fold_alone_evaluates_chains_of_constant_ops():
    out, res = _run(SRC, ConstantFold())
    # multiply and sqrt fold in one sweep; s32 7 / -2 truncates to -3 (XLA); the broadcast
    # of a scalar constant is already folded form; add(%6, %6) reads broadcasts, not
    # constants, so it is left to simplify
    assert "array<f32[4]: [0.5, 1.0, 1.5, 2.0]>" in out
    assert "array<s32[]: [-3]>" in out and "array<f32[]: [-3.0]>" in out
    assert "sqrt(" not in out and "divide(" not in out and "convert(" not in out
    assert "add(%6, %6)" in out
    assert res.report == {"folded_ops": 4}


def test_cleanup_group_folds_everything_foldable():
    out, _ = _run(SRC, FixedPoint([ConstantFold(), Simplify(), CSE(), DCE()]))
    assert (
        out
        == """func @f(%0: f32[4]) -> (f32[4]) {
  %1 = constant() {value=array<f32[4]: [0.7071067690849304, 1.0, 1.2247449159622192, 1.4142135381698608]>} : (f32[4])
  %2 = constant() {value=array<f32[]: [4.0]>} : (f32[])
  %3 = broadcast_in_dim(%2) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %4 = constant() {value=array<f32[]: [-3.0]>} : (f32[])
  %5 = broadcast_in_dim(%4) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %6 = add(%0, %1) : (f32[4])
  %7 = add(%6, %3) : (f32[4])
  %8 = multiply(%7, %5) : (f32[4])
  return %8
}"""
    )


def test_splat_results_fold_to_a_broadcast_of_a_scalar():
    src = """func @f() -> (f32[2,3]) {
  %0 = constant() {value=array<f32[2,3]: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]>} : (f32[2,3])
  %1 = sqrt(%0) : (f32[2,3])
  return %1
}"""
    out, _ = _run(src, ConstantFold())
    e = float(np.sqrt(np.float32(1.0)))  # the reference rule's number
    assert (
        out
        == f"""func @f() -> (f32[2,3]) {{
  %0 = constant() {{value=array<f32[2,3]: [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]>}} : (f32[2,3])
  %1 = constant() {{value=array<f32[]: [{e!r}]>}} : (f32[])
  %2 = broadcast_in_dim(%1) {{shape=[2, 3], broadcast_dimensions=[]}} : (f32[2,3])
  return %2
}}"""
    )


def test_must_not_change_large_constants_live_inputs_and_scalar_broadcasts():
    big = np.arange(2048, dtype=np.float32)
    hexdata = "0x" + big.tobytes().hex()
    src = f"""func @f(%0: f32[2048]) -> (f32[2048], f32[2048]) {{
  %1 = constant() {{value=array<f32[2048]: {hexdata}>}} : (f32[2048])
  %2 = sqrt(%1) : (f32[2048])
  %3 = constant() {{value=array<f32[]: [2.0]>}} : (f32[])
  %4 = broadcast_in_dim(%3) {{shape=[2048], broadcast_dimensions=[]}} : (f32[2048])
  %5 = add(%0, %4) : (f32[2048])
  return %2, %5
}}"""
    out, res = _run(src, ConstantFold())
    assert out == src and not res.changed
    out, res = _run(src, ConstantFold(max_elements=4096))
    assert "sqrt(" not in out and res.report == {"folded_ops": 1}


def test_must_not_fold_approximate_ops():
    # exp, log, erf...: XLA's polynomials give other last bits than NumPy's, so folding them
    # would make a program's numbers depend on which of its inputs are constants
    src = """func @f() -> (f32[3], f32[3]) {
  %0 = constant() {value=array<f32[3]: [0.5, 1.0, 1.5]>} : (f32[3])
  %1 = erf(%0) : (f32[3])
  %2 = exponential(%0) : (f32[3])
  return %1, %2
}"""
    out, res = _run(src, ConstantFold())
    assert out == src and not res.changed


def test_a_pure_callback_that_raises_is_left_to_run_time():
    # its Python function may sit in a branch that never runs and raise there (Equinox's
    # error_if): the error belongs to the run that takes the branch, not to compiling
    import purejit

    calls = []

    def boom(i):
        calls.append(int(i))
        raise RuntimeError("ran")

    def f(x, pred):
        def bad(v):
            return purejit.pure_callback(boom, purejit.ShapeDtypeStruct((), np.int32), 0) + v

        return purejit.lax.cond(pred, bad, lambda v: v, x)

    fn = purejit.jit(f).trace(np.int32(1), False).jaxpr.fn
    res = ConstantFold()(fn)
    assert any(op.name == "pure_callback" for op in res.fn.walk())
    assert int(purejit.jit(f)(np.int32(1), False)) == 1
    with pytest.raises(Exception, match="ran"):
        purejit.jit(f)(np.int32(1), True)


def test_must_not_fold_float_accumulations_but_folds_integer_ones():
    # NumPy sums pairwise and BLAS blocks its dot products: folding a float reduce or dot of
    # constants would give other last bits than XLA computing the same program (in JAX)
    src = """func @f() -> (f32[], f32[2,2], s32[]) {
  %0 = constant() {value=array<f32[4]: [0.1, 0.2, 0.3, 0.4]>} : (f32[4])
  %1 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %2 = reduce(%0, %1) {dimensions=[0]} : (f32[]) region(%20: f32[], %21: f32[]) {
    %22 = add(%20, %21) : (f32[])
    return %22
  }
  %3 = constant() {value=array<f32[2,2]: [1.5, 2.5, 3.5, 4.5]>} : (f32[2,2])
  %4 = dot_general(%3, %3) {lhs_batching_dimensions=[], rhs_batching_dimensions=[], lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0]} : (f32[2,2])
  %5 = constant() {value=array<s32[4]: [1, 2, 3, 4]>} : (s32[4])
  %6 = constant() {value=array<s32[]: [0]>} : (s32[])
  %7 = reduce(%5, %6) {dimensions=[0]} : (s32[]) region(%23: s32[], %24: s32[]) {
    %25 = add(%23, %24) : (s32[])
    return %25
  }
  return %2, %4, %7
}"""
    out, res = _run(src, ConstantFold())
    assert "%2 = reduce(" in out and "dot_general(" in out, out
    assert res.changed and "s32" in out and out.count("reduce(") == 1, out


def test_constant_sums_and_matmuls_keep_jaxs_bits():
    jax = pytest.importorskip("jax")
    import purejit
    import purejit.numpy as pnp

    rng = np.random.default_rng(0)
    c = (rng.standard_normal(1000) * 1e3).astype(np.float32)
    m = rng.standard_normal((16, 16)).astype(np.float32)

    def f(xp, x):
        return xp.sum(xp.asarray(c)) + x, (xp.asarray(m) @ xp.asarray(m))[0, 0] + x

    got = purejit.jit(lambda x: f(pnp, x))(np.float32(0))
    want = jax.jit(lambda x: f(jax.numpy, x))(np.float32(0))
    for g, w in zip(got, want):
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes(), (float(g), float(w))
