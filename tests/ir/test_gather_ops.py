"""gather and scatter: the NumPy reference rules agree with XLA (clamped gather starts,
skipped out-of-bounds scatter windows, every combiner), the text form round-trips, and the
type rules reject malformed dimension numbers."""

import numpy as np
import pytest
from purejit.ir import Builder, IRTypeError, TensorType, interpret, parse, print_function, verify

from purejit.backend import pjrt, stablehlo

RNG = np.random.default_rng(0)


def _fn(name, args, attrs, regions=()):
    b = Builder(f"one_{name}")
    params = [b.param(TensorType(a.shape, a.dtype)) for a in args]
    outs = b.op(name, params, attrs, list(regions))
    return verify(b.finish(outs))


def _region(kind, dt):
    b = Builder("region")
    old = b.param(TensorType((), dt))
    new = b.param(TensorType((), dt))
    if kind == "set":
        return b.finish([new])
    (out,) = b.op(kind, [old, new])
    return b.finish([out])


def _interpret_and_run(fn, *args):
    """The interpreter's results and XLA's, after a text round trip and MLIR verification."""
    text = print_function(fn)
    assert print_function(parse(text)) == text
    module = stablehlo.emit(fn)
    stablehlo.verify_module(module)
    exe = pjrt.compile(module, fn.param_types, fn.result_types)
    compiled = [np.asarray(o) for o in exe.execute([pjrt.to_device(a) for a in args])]
    return interpret(fn, *args), compiled


def _gather_attrs(offset, collapsed, smap, ivd, sizes):
    return dict(offset_dims=offset, collapsed_slice_dims=collapsed, start_index_map=smap,
                index_vector_dim=ivd, slice_sizes=sizes, indices_are_sorted=False)  # fmt: skip


GATHERS = {
    "rows (out of range starts clamp)": (
        (5, 3), np.array([[0], [4], [7], [-3]], np.int32),
        _gather_attrs((1,), (0,), (0,), 1, (1, 3)),
    ),
    "windows, offset dims first, index_vector_dim 0": (
        (6, 4, 5), RNG.integers(-2, 8, size=(2, 3, 2)).astype(np.int32),
        _gather_attrs((0, 2), (1,), (2, 0), 0, (3, 1, 2)),
    ),
    "implicit index vector (index_vector_dim == rank)": (
        (7, 2), np.array([[1, 6], [0, 3]], np.int8), _gather_attrs((2,), (0,), (0,), 2, (1, 2))
    ),
    "point gather of a scalar element": (
        (4, 5), np.array([[3, 4], [-1, 9]], np.int32), _gather_attrs((), (0, 1), (0, 1), 1, (1, 1))
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(GATHERS))
def test_gather_reference_matches_xla(name):
    shape, idx, attrs = GATHERS[name]
    x = RNG.normal(size=shape).astype(np.float32)
    (ref,), (got,) = _interpret_and_run(_fn("gather", [x, idx], attrs), x, idx)
    np.testing.assert_array_equal(ref, got)


@pytest.mark.parametrize("kind", ["set", "add", "multiply", "maximum", "minimum", "subtract"])
def test_scatter_reference_matches_xla(kind):
    """Windows of 2 rows; a window starting at 5 (of 6 rows) or at -1 is skipped entirely."""
    x = RNG.normal(size=(6, 4)).astype(np.float32)
    idx = np.array([[0], [5], [2], [4], [-1], [3]], np.int32)
    if kind == "set":
        # no two windows overlap: which of two overlapping "set" windows wins is unspecified
        # (XLA on GPU and on CPU differ), so the window at 3 becomes one that is skipped
        idx[5] = -3
    else:
        idx[3] = 0  # overlapping windows accumulate
    u = RNG.normal(size=(6, 2, 4)).astype(np.float32)
    attrs = dict(
        update_window_dims=(1, 2),
        inserted_window_dims=(),
        unique_indices=False,
        scatter_dims_to_operand_dims=(0,),
        index_vector_dim=1,
        indices_are_sorted=False,
    )
    fn = _fn("scatter", [x, idx, u], attrs, [_region(kind, x.dtype)])
    (ref,), (got,) = _interpret_and_run(fn, x, idx, u)
    np.testing.assert_allclose(ref, got, rtol=1e-6)
    expect = x.copy()
    if kind == "set":
        for start, upd in zip(idx[:, 0], u):
            if 0 <= start <= 4:
                expect[start : start + 2] = upd
        np.testing.assert_array_equal(ref, expect)


def test_scatter_points_in_two_dims_int():
    x = np.zeros((3, 4), np.int32)
    idx = np.array([[0, 1], [2, 3], [0, 1], [3, 0], [1, -1]], np.int32)
    u = np.arange(1, 6, dtype=np.int32)
    attrs = dict(
        update_window_dims=(),
        inserted_window_dims=(0, 1),
        unique_indices=False,
        scatter_dims_to_operand_dims=(0, 1),
        index_vector_dim=1,
        indices_are_sorted=False,
    )
    fn = _fn("scatter", [x, idx, u], attrs, [_region("add", x.dtype)])
    (ref,), (got,) = _interpret_and_run(fn, x, idx, u)
    np.testing.assert_array_equal(ref, got)
    assert ref[0, 1] == 4 and ref[2, 3] == 2 and ref.sum() == 6  # two out-of-range dropped


def test_variadic_scatter():
    x = RNG.normal(size=(5,)).astype(np.float32)
    y = RNG.normal(size=(5,)).astype(np.float32)
    idx = np.array([[1], [3]], np.int32)
    u, v = np.ones(2, np.float32), np.full(2, 2.0, np.float32)
    b = Builder("region")
    a0, a1, n0, n1 = (b.param(TensorType((), np.float32)) for _ in range(4))
    (s0,) = b.op("add", [a0, n0])
    (s1,) = b.op("multiply", [a1, n1])
    region = b.finish([s0, s1])
    attrs = dict(
        update_window_dims=(),
        inserted_window_dims=(0,),
        unique_indices=False,
        scatter_dims_to_operand_dims=(0,),
        index_vector_dim=1,
        indices_are_sorted=False,
    )
    fn = _fn("scatter", [x, y, idx, u, v], attrs, [region])
    ref, got = _interpret_and_run(fn, x, y, idx, u, v)
    for r, g in zip(ref, got):
        np.testing.assert_allclose(r, g, rtol=1e-6)
    np.testing.assert_allclose(ref[1][[1, 3]], y[[1, 3]] * 2)


@pytest.mark.parametrize(
    "attrs, msg",
    [
        (_gather_attrs((1,), (0,), (0,), 1, (2, 3)), "collapsed dim 0 must have slice size 1"),
        (_gather_attrs((1,), (0,), (0,), 1, (1, 4)), "do not fit"),
        (_gather_attrs((1,), (0,), (0, 1), 1, (1, 3)), "needs 1 entries"),
        (_gather_attrs((2,), (0,), (0,), 1, (1, 3)), "offset_dims"),
        (_gather_attrs((1,), (0,), (0,), 3, (1, 3)), "index_vector_dim=3 out of range"),
    ],
)
def test_gather_type_errors(attrs, msg):
    b = Builder()
    x = b.param(TensorType((5, 3), np.float32))
    i = b.param(TensorType((4, 1), np.int32))
    with pytest.raises(IRTypeError, match=msg):
        b.op("gather", [x, i], attrs)


def test_scatter_type_errors():
    b = Builder()
    x = b.param(TensorType((5, 3), np.float32))
    i = b.param(TensorType((4, 1), np.int32))
    u = b.param(TensorType((4, 3), np.float32))
    good = dict(
        update_window_dims=(1,),
        inserted_window_dims=(0,),
        unique_indices=False,
        scatter_dims_to_operand_dims=(0,),
        index_vector_dim=1,
        indices_are_sorted=False,
    )
    b.op("scatter", [x, i, u], good, [_region("add", np.float32)])
    with pytest.raises(IRTypeError, match="region must be"):
        b.op("scatter", [x, i, u], good, [_region("add", np.int32)])
    with pytest.raises(IRTypeError, match="rank"):
        b.op("scatter", [x, i, u], {**good, "inserted_window_dims": ()},
             [_region("add", np.float32)])  # fmt: skip
    with pytest.raises(IRTypeError, match="index batch"):
        b.op("scatter", [x, i, u], {**good, "update_window_dims": (0, 1), "inserted_window_dims":
                                    ()}, [_region("add", np.float32)])  # fmt: skip
