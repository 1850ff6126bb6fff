"""Realised fusion groups never read or write pred values: XLA CPU aborts the process
(`Check failed: has_layout()`) on a pre-built `mhlo.fusion` with a pred operand or result."""

from __future__ import annotations

import numpy as np
import pytest

from purejit.backend import fusion as fb
from purejit.backend import pjrt
from purejit.ir import interpret, parse, print_function
from purejit.passes import Pipeline
from purejit.passes.fusion import Fusion
from purejit.passes.pipeline import default_passes

SELECT_ON_A_SHARED_COMPARE = """\
func @f(%0: f32[4,6], %1: f32[4,6]) -> (f32[4,6], f32[4,6]) {
  %2 = negate(%0) : (f32[4,6])
  %3 = compare(%2, %1) {comparison_direction="GT"} : (pred[4,6])
  %4 = negate(%1) : (f32[4,6])
  %5 = select(%3, %4, %0) : (f32[4,6])
  %6 = add(%0, %1) : (f32[4,6])
  %7 = select(%3, %6, %1) : (f32[4,6])
  return %5, %7
}"""


def _bool_boundaries(fn):
    for op in fn.walk():
        if op.name == "fusion":
            for v in list(op.operands) + list(op.results):
                if v.type.dtype == np.bool_:
                    yield op


def test_option_keeps_pred_out_of_group_boundaries():
    fn = parse(SELECT_ON_A_SHARED_COMPARE)
    plain = Fusion()(fn).fn
    strict = Fusion(bool_boundaries=False, min_group_ops=1)(fn).fn
    print(print_function(plain), print_function(strict), sep="\n\n")
    assert list(_bool_boundaries(plain)), "the example must exercise the option"
    assert not list(_bool_boundaries(strict))
    args = [np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)] * 2
    for a, b in zip(interpret(fn, *args), interpret(strict, *args)):
        np.testing.assert_array_equal(a, b)


def test_realised_route_compiles_and_agrees():
    cap = fb.probe_route()
    if not cap.realised:
        pytest.skip(f"fusion groups are not realised on this back end ({cap.route})")
    fn = parse(SELECT_ON_A_SHARED_COMPARE)
    opt, _ = Pipeline(default_passes(**cap.fusion_options())).run(fn)
    assert not list(_bool_boundaries(opt))
    text, off = fb.emit(opt, cap)
    exe = pjrt.compile(text, opt.param_types, opt.result_types, disable_xla_passes=off)
    rng = np.random.default_rng(0)
    args = [rng.uniform(-2, 2, (4, 6)).astype(np.float32) for _ in range(2)]
    got = [np.asarray(o) for o in exe.execute([pjrt.to_device(a) for a in args])]
    for g, w in zip(got, interpret(fn, *args)):
        np.testing.assert_allclose(g, w, rtol=1e-6)
