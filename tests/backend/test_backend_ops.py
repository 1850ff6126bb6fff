"""Every IR op against NumPy, through the reference interpreter AND the compiled path.

For each case (an op, its inputs in one dtype, and the result NumPy says it must give; see
ir_op_table.py and ir_op_table_shape.py) the test builds a one-op function with `Builder`
and runs it with `interpret`. For the compiled path, the one-op functions of all cases of
an op are placed side by side in one module (one XLA compile per op, not per case), which is
emitted as StableHLO, checked by jaxlib's MLIR verifier, compiled with PJRT and executed on
device buffers. Both results must equal NumPy's in dtype, shape and value.
"""

from __future__ import annotations

import collections

import ml_dtypes
import numpy as np
import pytest
from ir_op_cases import convert
from ir_op_table import CONVERT_TYPES, convert_inputs, elementwise_cases
from ir_op_table_shape import all_shape_cases
from lowering_harness import merge, mismatches, one_op, run_compiled
from purejit.ir import Builder, TensorType, interpret, verify

BY_OP = collections.defaultdict(list)
for _case in elementwise_cases() + all_shape_cases():
    BY_OP[_case.op].append(_case)


@pytest.mark.parametrize("op", sorted(BY_OP))
def test_op_matches_numpy(op):
    fns, wants, failures = [], [], []
    for case in BY_OP[op]:
        fn = one_op(case.op, case.args, case.attrs, case.regions)
        want = case.expected(*case.args)
        assert [TensorType(np.shape(w), np.asarray(w).dtype) for w in want] == fn.result_types
        for w, g in zip(want, interpret(fn, *case.args), strict=True):
            if msg := mismatches(
                g, w, rtol=case.rtol, atol=case.atol, signed_zeros=case.signed_zeros
            ):
                failures.append(f"interpreter {case.id}: {msg}")
        fns.append(fn)
        wants.append(want)
    got = run_compiled(merge(fns, f"all_{op}"), *[a for c in BY_OP[op] for a in c.args])
    for case, want in zip(BY_OP[op], wants):
        for w in want:
            g = got.pop(0)
            if msg := mismatches(
                g, w, rtol=case.rtol, atol=case.atol, signed_zeros=case.signed_zeros
            ):
                failures.append(f"compiled {case.id}: {msg}")
    assert not failures, "\n".join(failures)


def test_convert_matches_numpy():
    """convert between every pair of types (one function holding every conversion)."""
    b = Builder("converts")
    args, outs, want, labels = [], [], [], []
    for src in CONVERT_TYPES:
        x = convert_inputs(src)
        args.append(x)
        p = b.param(TensorType(x.shape, x.dtype))
        for dt in CONVERT_TYPES:
            outs += b.op("convert", [p], {"dtype": dt})
            want.append(convert(x, dt))
            labels.append(f"{src}->{dt}")
    fn = verify(b.finish(outs))
    failures = []
    for path, got in (("interpreter", interpret(fn, *args)), ("compiled", run_compiled(fn, *args))):
        for label, w, g in zip(labels, want, got, strict=True):
            if msg := mismatches(g, w, rtol=0):
                failures.append(f"{path} {label}: {msg}")
    assert not failures, "\n".join(failures)


def test_bitcast_convert_matches_numpy_views():
    """bitcast_convert between types of one width: NumPy's view of the same bytes."""
    b = Builder("bitcasts")
    f32, f16, f64, bf16 = np.float32, np.float16, np.float64, ml_dtypes.bfloat16
    u8, s8, u16, s16, u32, s32, u64, s64 = (np.uint8, np.int8, np.uint16, np.int16, np.uint32,
                                            np.int32, np.uint64, np.int64)  # fmt: skip
    pairs = [(u32, f32), (f32, u32), (s32, f32), (u16, f16), (f16, u16), (u16, bf16),
             (bf16, s16), (u64, f64), (f64, s64), (u8, s8)]  # fmt: skip
    args, outs, want = [], [], []
    for src, dt in pairs:
        x = np.random.default_rng(len(args)).integers(0, 255, 64, dtype=np.uint8).view(src)
        p = b.param(TensorType(x.shape, x.dtype))
        args.append(x)
        outs += b.op("bitcast_convert", [p], {"dtype": np.dtype(dt)})
        want.append(x.view(dt))
    fn = verify(b.finish(outs))
    for path, got in (("interpreter", interpret(fn, *args)), ("compiled", run_compiled(fn, *args))):
        for (src, dt), w, g in zip(pairs, want, got, strict=True):
            g = np.asarray(g)
            assert g.dtype == np.dtype(dt), (path, src, dt)
            assert g.tobytes() == w.tobytes(), f"{path} {src}->{dt}"
