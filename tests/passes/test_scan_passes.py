"""Every pass treats `scan` as it treats `while` (by traits): it optimises inside the body,
keeps the op and its signature, and the interpreter gives the same numbers before and after.
"""

from __future__ import annotations

import numpy as np
import pytest
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes import Pipeline, default_passes, run
from purejit.passes.constant_fold import ConstantFold
from purejit.passes.cost import flops, predicted_kernels
from purejit.passes.cse import CSE
from purejit.passes.dce import DCE
from purejit.passes.fusion import Fusion
from purejit.passes.layout import LayoutAssignment
from purejit.passes.liveness import BufferAssignment
from purejit.passes.simplify import Simplify

import purejit
import purejit.numpy as jnp
from purejit import lax
from purejit.backend import pjrt, stablehlo

RNG = np.random.default_rng(0)
ARGS = (
    RNG.normal(size=(4, 3)).astype(np.float32),
    RNG.normal(size=(6, 4, 3)).astype(np.float32),
    RNG.normal(size=(3, 3)).astype(np.float32),
)


def _program():
    """A scan whose body has work for the passes: a repeated subexpression (CSE), `x * 1`
    and a double transpose (simplify), transposed matmul operands (layout) and elementwise
    chains (fusion)."""

    def f(h0, xs, w):
        def step(h, x):
            a = jnp.tanh(h @ w.T.T) * 6.0
            b = jnp.tanh(h @ w.T.T) * 1.0
            y = (x.T @ h).T  # f32[3,3] from a transposed operand
            return jnp.exp(a - b) * 0.5 + x.mean(), y.sum(axis=0)

        return lax.scan(step, h0, xs, reverse=True, unroll=2)

    return purejit.jit(f).lower(*ARGS).traced


def _check(before, after):
    verify(after)
    scans = [op for op in after.walk() if op.name == "scan"]
    assert len(scans) == 1
    assert scans[0].attrs["reverse"] is True and scans[0].attrs["unroll"] == 2
    text = print_function(after)
    assert print_function(parse(text)) == text
    for a, b in zip(interpret(before, *ARGS), interpret(after, *ARGS)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    return scans[0]


def _body_ops(fn):
    (scan,) = [op for op in fn.walk() if op.name == "scan"]
    return [op.name for op in scan.regions[0].ops]


@pytest.mark.parametrize(
    "pass_",
    [ConstantFold(), Simplify(), CSE(), DCE(), LayoutAssignment(), Fusion(), BufferAssignment()],
    ids=lambda p: p.name,
)
def test_each_pass_keeps_the_scan_and_its_numbers(pass_):
    fn = _program()
    res = pass_(fn)
    _check(fn, res.fn)


def test_passes_optimise_inside_the_body():
    fn = _program()
    ops = _body_ops(fn)
    assert _body_ops(CSE()(fn).fn).count("tanh") == 1 < ops.count("tanh")
    assert _body_ops(Simplify()(fn).fn).count("transpose") < ops.count("transpose")
    assert "fusion" in _body_ops(Fusion()(fn).fn)


def test_default_pipeline_emits_the_same_numbers_as_the_interpreter():
    fn = _program()
    out, _ = run(fn, Pipeline(default_passes()))
    _check(fn, out)
    text = stablehlo.emit(out)
    stablehlo.verify_module(text)
    exe = pjrt.compile(text, out.param_types, out.result_types)
    got = exe.execute([pjrt.to_device(a) for a in ARGS])
    for g, w in zip(got, interpret(fn, *ARGS)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)


def test_cost_looks_inside_the_scan_body():
    fn = _program()
    kernels = [k.op.name for k in predicted_kernels(fn)]
    assert "scan" not in kernels and "tanh" in kernels
    (scan,) = [op for op in fn.ops if op.name == "scan"]
    assert flops(scan) == sum(flops(op) for op in scan.regions[0].ops) > 0


def test_constant_fold_evaluates_a_scan_of_constants():
    src = """\
func @f() -> (f32[], f32[3]) {
  %0 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %1 = constant() {value=array<f32[3]: [1.0, 2.0, 3.0]>} : (f32[3])
  %2, %3 = scan(%0, %1) {length=3, reverse=true, unroll=1, num_consts=0, num_carry=1} : (f32[], f32[3]) region(%4: f32[], %5: f32[]) {
    %6 = multiply(%4, %5) : (f32[])
    return %6, %4
  }
  return %2, %3
}"""
    fn = verify(parse(src))
    out = ConstantFold()(fn).fn
    verify(out)
    assert not any(op.name == "scan" for op in out.walk())
    got = interpret(out)
    np.testing.assert_array_equal(got[0], np.float32(6.0))
    np.testing.assert_array_equal(got[1], np.array([6.0, 3.0, 1.0], np.float32))


def test_constant_fold_works_inside_the_body():
    src = """\
func @f(%0: f32[], %1: f32[3]) -> (f32[], f32[3]) {
  %2, %3 = scan(%0, %1) {length=3, reverse=false, unroll=1, num_consts=0, num_carry=1} : (f32[], f32[3]) region(%4: f32[], %5: f32[]) {
    %6 = constant() {value=array<f32[]: [2.0]>} : (f32[])
    %7 = constant() {value=array<f32[]: [3.0]>} : (f32[])
    %8 = multiply(%6, %7) : (f32[])
    %9 = multiply(%4, %8) : (f32[])
    %10 = add(%9, %5) : (f32[])
    return %10, %9
  }
  return %2, %3
}"""
    want = """\
func @f(%0: f32[], %1: f32[3]) -> (f32[], f32[3]) {
  %2, %3 = scan(%0, %1) {length=3, reverse=false, unroll=1, num_consts=0, num_carry=1} : (f32[], f32[3]) region(%4: f32[], %5: f32[]) {
    %6 = constant() {value=array<f32[]: [2.0]>} : (f32[])
    %7 = constant() {value=array<f32[]: [3.0]>} : (f32[])
    %8 = constant() {value=array<f32[]: [6.0]>} : (f32[])
    %9 = multiply(%4, %8) : (f32[])
    %10 = add(%9, %5) : (f32[])
    return %10, %9
  }
  return %2, %3
}"""
    fn = verify(parse(src))
    out = verify(ConstantFold()(fn).fn)
    assert print_function(out) == want
    args = (np.float32(1.5), np.array([1.0, -2.0, 0.5], np.float32))
    for a, b in zip(interpret(fn, *args), interpret(out, *args)):
        np.testing.assert_array_equal(b, a)
