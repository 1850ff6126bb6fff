"""Every IR op against NumPy, through the reference interpreter AND the compiled path.

For each case (an op, its inputs in one dtype, and the result NumPy says it must give; see
ir_op_table.py and ir_op_table_shape.py) the test builds a one-op function with `Builder`,
runs it with `interpret`, then emits StableHLO, verifies it with jaxlib's MLIR verifier,
compiles it with PJRT and executes it on device buffers; both results must equal NumPy's in
dtype, shape and value.
"""

from __future__ import annotations

import numpy as np
import pytest
from ir_op_table import CONVERT_TYPES, convert_inputs, elementwise_cases
from ir_op_cases import convert
from ir_op_table_shape import all_shape_cases
from lowering_harness import mismatches, one_op, run_compiled

from purejit.ir import Builder, TensorType, interpret, verify

CASES = elementwise_cases() + all_shape_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_op_matches_numpy(case):
    fn = one_op(case.op, case.args, case.attrs, case.regions)
    want = case.expected(*case.args)
    assert [TensorType(np.shape(w), np.asarray(w).dtype) for w in want] == fn.result_types
    tol = dict(rtol=case.rtol, atol=case.atol, signed_zeros=case.signed_zeros)
    got = interpret(fn, *case.args)
    for w, g in zip(want, got, strict=True):
        assert not (msg := mismatches(g, w, **tol)), f"interpreter: {msg}"
    got = run_compiled(fn, *case.args)
    for w, g in zip(want, got, strict=True):
        assert not (msg := mismatches(g, w, **tol)), f"compiled: {msg}"


@pytest.mark.parametrize("src", CONVERT_TYPES, ids=str)
def test_convert_matches_numpy(src):
    """convert from `src` to every type: one function with one convert per target type."""
    x = convert_inputs(src)
    b = Builder("converts")
    p = b.param(TensorType(x.shape, x.dtype))
    outs = [b.op("convert", [p], {"dtype": dt})[0] for dt in CONVERT_TYPES]
    fn = verify(b.finish(outs))
    want = [convert(x, dt) for dt in CONVERT_TYPES]
    for path, got in (("interpreter", interpret(fn, x)), ("compiled", run_compiled(fn, x))):
        for dt, w, g in zip(CONVERT_TYPES, want, got, strict=True):
            msg = mismatches(g, w, rtol=0, signed_zeros=True)
            assert not msg, f"{path} {src}->{dt}: {msg}"
