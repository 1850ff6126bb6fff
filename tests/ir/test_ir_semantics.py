"""Property tests of the reference interpreter against plain-Python statements of XLA's
semantics (integer division, remainder, shifts, power, float->int conversion) and against
NumPy for the data-movement ops. Interpreter only: no compiles, so they stay fast."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from purejit.ir import Builder, TensorType, interpret, verify
from purejit.ir.interpreter import run_batched

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def run1(name, args, attrs=None, regions=()):
    b = Builder(name)
    ps = [b.param(TensorType(np.shape(a), np.asarray(a).dtype)) for a in args]
    fn = verify(b.finish(b.op(name, ps, attrs or {}, list(regions))))
    return interpret(fn, *args)


@st.composite
def int_pairs(draw, n=24):
    dt = np.dtype(draw(st.sampled_from(INT_TYPES)))
    info = np.iinfo(dt)
    edge = st.sampled_from([0, 1, 2, info.max, info.min, info.min + 1] + ([-1] if info.min else []))
    val = st.one_of(st.integers(int(info.min), int(info.max)), edge)
    a = draw(st.lists(val, min_size=n, max_size=n))
    b = draw(st.lists(val, min_size=n, max_size=n))
    return np.array(a, dtype=dt), np.array(b, dtype=dt)


def wrap(v: int, dt) -> int:
    bits = np.dtype(dt).itemsize * 8
    v &= (1 << bits) - 1
    return v - (1 << bits) if np.dtype(dt).kind == "i" and v >> (bits - 1) else v


def py_div(a, b, dt):
    if b == 0:
        return wrap(-1, dt)
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q, dt)  # INT_MIN / -1 wraps to INT_MIN


def py_rem(a, b, dt):
    if b == 0:
        return a
    r = abs(a) % abs(b)
    return wrap(r if a >= 0 else -r, dt)


@settings(max_examples=60, deadline=None)
@given(int_pairs())
def test_integer_divide_and_remainder(pair):
    a, b = pair
    dt = a.dtype
    q, r = run1("divide", [a, b])[0], run1("remainder", [a, b])[0]
    for x, y, qq, rr in zip(a.tolist(), b.tolist(), q.tolist(), r.tolist()):
        assert qq == py_div(x, y, dt), (dt, x, y, qq)
        assert rr == py_rem(x, y, dt), (dt, x, y, rr)
        if y != 0:  # q * b + r == a in the type's wrapping arithmetic
            assert wrap(qq * y + rr, dt) == x


@settings(max_examples=60, deadline=None)
@given(int_pairs())
def test_shifts_read_the_amount_as_unsigned(pair):
    a, b = pair
    dt = a.dtype
    bits = dt.itemsize * 8
    left = run1("shift_left", [a, b])[0].tolist()
    logical = run1("shift_right_logical", [a, b])[0].tolist()
    arith = run1("shift_right_arithmetic", [a, b])[0].tolist()
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        n = y & ((1 << bits) - 1)
        ux, sx = x & ((1 << bits) - 1), wrap(x, np.dtype(f"i{dt.itemsize}"))
        assert left[i] == (0 if n >= bits else wrap(ux << n, dt))
        assert logical[i] == (0 if n >= bits else wrap(ux >> n, dt))
        assert arith[i] == wrap(sx >> min(n, bits - 1), dt)


@settings(max_examples=60, deadline=None)
@given(int_pairs())
def test_integer_power(pair):
    a, b = pair
    dt = a.dtype
    bits = dt.itemsize * 8
    got = run1("power", [a, b % 70 if dt.kind == "u" else b])[0].tolist()
    b = (b % 70 if dt.kind == "u" else b).tolist()
    for x, y, g in zip(a.tolist(), b, got):
        signed_y = wrap(y, np.dtype(f"i{dt.itemsize}"))
        if signed_y < 0:
            sx = wrap(x, np.dtype(f"i{dt.itemsize}"))
            want = 1 if sx == 1 else ((-1 if y % 2 else 1) if sx == -1 else 0)
        else:
            want = pow(x, y & 63, 1 << bits)  # XLA squares over the low 6 exponent bits
        assert g == wrap(want, dt), (dt, x, y, g)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([np.float32, np.float64, np.float16]),
    st.sampled_from(INT_TYPES + [np.bool_]),
    st.lists(
        st.one_of(st.floats(allow_subnormal=False, width=16), st.floats(-1e20, 1e20)),
        min_size=1,
        max_size=30,
    ),  # fmt: skip
)
def test_convert_float_to_int_truncates_and_saturates(src, dst, xs):
    with np.errstate(over="ignore"):  # large values become inf in f16: also a case to test
        x = np.array(xs, np.float64).astype(src)
    got = run1("convert", [x], {"dtype": np.dtype(dst)})[0]
    assert got.dtype == np.dtype(dst)
    for v, g in zip(x.astype(np.float64).tolist(), got.tolist()):
        if dst is np.bool_:
            assert g == (v != 0)
            continue
        info = np.iinfo(dst)
        want = (
            0
            if math.isnan(v)
            else min(max(math.trunc(v) if math.isfinite(v) else v, info.min), info.max)
        )
        assert g == want, (src, dst, v, g)


@st.composite
def pads(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(0, 4)) for _ in range(rank)]
    interior = [draw(st.integers(0, 2)) for _ in range(rank)]
    lo, hi = [], []
    for d, i in zip(shape, interior):
        full = d + max(d - 1, 0) * i
        a = draw(st.integers(-full, 3))
        lo.append(a)
        hi.append(draw(st.integers(-(full + a), 3)))
    return shape, lo, hi, interior


@settings(max_examples=80, deadline=None)
@given(pads())
def test_pad_matches_an_element_by_element_definition(p):
    shape, lo, hi, interior = p
    x = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int32).reshape(shape)
    got = run1("pad", [x, np.array(-1, np.int32)], {
        "edge_padding_low": tuple(lo), "edge_padding_high": tuple(hi),
        "interior_padding": tuple(interior)})[0]  # fmt: skip
    want_shape = [d + a + b + max(d - 1, 0) * i for d, a, b, i in zip(shape, lo, hi, interior)]
    want = np.full(want_shape, -1, np.int32)
    for idx in np.ndindex(*shape):  # element idx lands at lo + idx * (interior + 1)
        out = tuple(a + k * (i + 1) for a, k, i in zip(lo, idx, interior))
        if all(0 <= o < n for o, n in zip(out, want_shape)):
            want[out] = x[idx]
    np.testing.assert_array_equal(got, want)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_slice_and_reverse_match_numpy(data):
    shape = data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))
    x = np.arange(int(np.prod(shape)), dtype=np.int16).reshape(shape)
    start = [data.draw(st.integers(0, d)) for d in shape]
    limit = [data.draw(st.integers(s, d)) for s, d in zip(start, shape)]
    strides = [data.draw(st.integers(1, 3)) for _ in shape]
    got = run1("slice", [x], {"start_indices": tuple(start), "limit_indices": tuple(limit),
                              "strides": tuple(strides)})[0]  # fmt: skip
    np.testing.assert_array_equal(got, x[tuple(map(slice, start, limit, strides))])
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True))
    got = run1("reverse", [x], {"dimensions": tuple(dims)})[0]
    np.testing.assert_array_equal(got, np.flip(x, tuple(dims)) if dims else x)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_broadcast_in_dim_matches_numpy(data):
    out_shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    dims = sorted(data.draw(st.lists(st.integers(0, len(out_shape) - 1), unique=True)))
    perm = data.draw(st.permutations(dims))
    in_shape = [data.draw(st.sampled_from([1, out_shape[d]])) for d in perm]
    x = np.arange(int(np.prod(in_shape)), dtype=np.float32).reshape(in_shape)
    got = run1(
        "broadcast_in_dim", [x], {"shape": tuple(out_shape), "broadcast_dimensions": tuple(perm)}
    )[0]
    # element by element: operand dim k indexes result dim perm[k] (index 0 if it has size 1)
    want = np.empty(out_shape, np.float32)
    for idx in np.ndindex(*out_shape):
        want[idx] = x[tuple(idx[d] if n > 1 else 0 for d, n in zip(perm, in_shape))]
    np.testing.assert_array_equal(got, want)


def _argmax_region():
    b = Builder("argmax")
    f, i = TensorType((), np.float32), TensorType((), np.int32)
    av, ai, bv, bi = b.param(f), b.param(i), b.param(f), b.param(i)
    (gt,) = b.op("compare", [av, bv], {"comparison_direction": "GT"})
    (eq,) = b.op("compare", [av, bv], {"comparison_direction": "EQ"})
    (lt,) = b.op("compare", [ai, bi], {"comparison_direction": "LT"})
    (pick,) = b.op("or", [gt, b.op("and", [eq, lt])[0]])
    return b.finish([b.op("select", [pick, av, bv])[0], b.op("select", [pick, ai, bi])[0]])


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.integers(1, 9), st.integers(0, 2**31))
def test_variadic_reduce_computes_argmax(rows, cols, seed):
    x = np.random.default_rng(seed).integers(-3, 3, (rows, cols)).astype(np.float32)  # ties
    idx = np.broadcast_to(np.arange(cols, dtype=np.int32), (rows, cols)).copy()
    vals, where = run1("reduce", [x, idx, np.array(-np.inf, np.float32), np.array(0, np.int32)],
                       {"dimensions": (1,)}, [_argmax_region()])  # fmt: skip
    np.testing.assert_array_equal(vals, x.max(1))
    np.testing.assert_array_equal(where, x.argmax(1))


def test_run_batched_equals_running_each_position():
    region = _argmax_region()
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(2)]
    indices = [rng.integers(0, 9, (3, 4)).astype(np.int32) for _ in range(2)]
    args = [values[0], indices[0], values[1], indices[1]]
    batched = run_batched(region, *args)
    for pos in np.ndindex(3, 4):
        one = interpret(region, *[a[pos] for a in args])
        for b, o in zip(batched, one):
            assert b[pos] == o
