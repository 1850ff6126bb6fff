"""guard_aliased_update: IR in -> IR out for the `dynamic_update_slice`s XLA's CPU compiler
updates in place over values their update still reads; the interpreter gives the same
numbers before and after for every kind of start (negative, past the end, unsigned, 64-bit);
the compiled program gives NumPy's numbers where `jax.jit` does not; what must stay is left
exactly as it was."""

import jax
import numpy as np
import pytest
from purejit.ir import Builder, TensorType, interpret, print_function, verify
from purejit.passes.guard_aliased_update import GuardAliasedUpdate

import purejit
import purejit.lax as plax


def _program(shape, update_rows, view, start_dtype=np.int32, reader="slice"):
    """x[shape]; u = reverse(x[1:1+update_rows]) (or dynamic_slice); dus(x, u, i, 0...);
    then `view` ("transpose", "reshape" or None)."""
    b = Builder("f")
    x = b.param(TensorType(shape, np.int32))
    i = b.param(TensorType((), start_dtype))
    zero = b.op("constant", [], {"value": np.asarray(0, start_dtype)})[0]
    rank = len(shape)
    if reader == "slice":
        limit = (1 + update_rows, *shape[1:])
        attrs = {"start_indices": (1,) + (0,) * (rank - 1), "limit_indices": limit,
                 "strides": (1,) * rank}  # fmt: skip
        (u,) = b.op("slice", [x], attrs)
    else:
        sizes = (update_rows, *shape[1:])
        (u,) = b.op("dynamic_slice", [x, i] + [zero] * (rank - 1), {"slice_sizes": sizes})
    (u,) = b.op("reverse", [u], {"dimensions": (0,)})
    (d,) = b.op("dynamic_update_slice", [x, u, i] + [zero] * (rank - 1))
    if view == "transpose":
        (d,) = b.op("transpose", [d], {"permutation": tuple(reversed(range(rank)))})
    elif view == "reshape":
        (d,) = b.op("reshape", [d], {"shape": (int(np.prod(shape)),)})
    return verify(b.finish([d]))


def _numpy(x, start, rows):
    u = x[1 : 1 + rows][::-1].copy()
    s = int(np.clip(int(start) + (x.shape[0] if int(start) < 0 else 0), 0, x.shape[0] - rows))
    y = x.copy()
    y[s : s + rows] = u
    return y


BEFORE = """func @f(%0: s32[3,1], %1: s32[]) -> (s32[1,3]) {
  %2 = constant() {value=array<s32[]: [0]>} : (s32[])
  %3 = slice(%0) {start_indices=[1, 0], limit_indices=[3, 1], strides=[1, 1]} : (s32[2,1])
  %4 = reverse(%3) {dimensions=[0]} : (s32[2,1])
  %5 = dynamic_update_slice(%0, %4, %1, %2) : (s32[3,1])
  %6 = transpose(%5) {permutation=[1, 0]} : (s32[1,3])
  return %6
}"""

# the update at the clamped start c (here clamp(0, i, 1)): pad by D - n = 1, slice at 1 - c,
# choose it where c <= row < c + 2
AFTER = """func @f(%0: s32[3,1], %1: s32[]) -> (s32[1,3]) {
  %2 = constant() {value=array<s32[]: [0]>} : (s32[])
  %3 = slice(%0) {start_indices=[1, 0], limit_indices=[3, 1], strides=[1, 1]} : (s32[2,1])
  %4 = reverse(%3) {dimensions=[0]} : (s32[2,1])
  %5 = constant() {value=array<s32[]: [0]>} : (s32[])
  %6 = pad(%4, %5) {edge_padding_low=[1, 0], edge_padding_high=[1, 0], interior_padding=[0, 0]} : (s32[4,1])
  %7 = convert(%1) {dtype=s64} : (s64[])
  %8 = constant() {value=array<s64[]: [0]>} : (s64[])
  %9 = constant() {value=array<s64[]: [1]>} : (s64[])
  %10 = clamp(%8, %7, %9) : (s64[])
  %11 = constant() {value=array<s64[]: [1]>} : (s64[])
  %12 = subtract(%11, %10) : (s64[])
  %13 = iota() {shape=[3, 1], dtype=s64, dimension=0} : (s64[3,1])
  %14 = broadcast_in_dim(%10) {shape=[3, 1], broadcast_dimensions=[]} : (s64[3,1])
  %15 = constant() {value=array<s64[]: [2]>} : (s64[])
  %16 = add(%10, %15) : (s64[])
  %17 = broadcast_in_dim(%16) {shape=[3, 1], broadcast_dimensions=[]} : (s64[3,1])
  %18 = compare(%13, %14) {comparison_direction="GE"} : (pred[3,1])
  %19 = compare(%13, %17) {comparison_direction="LT"} : (pred[3,1])
  %20 = and(%18, %19) : (pred[3,1])
  %21 = constant() {value=array<s64[]: [0]>} : (s64[])
  %22 = dynamic_slice(%6, %12, %21) {slice_sizes=[3, 1]} : (s32[3,1])
  %23 = select(%20, %22, %0) : (s32[3,1])
  %24 = transpose(%23) {permutation=[1, 0]} : (s32[1,3])
  return %24
}"""


def test_the_fuzzers_program_is_rewritten_ir_before_and_after():
    fn = _program((3, 1), 2, "transpose")
    assert print_function(fn) == BEFORE
    res = GuardAliasedUpdate()(fn)
    assert res.changed and res.report == {"rewritten": 1}
    assert print_function(verify(res.fn)) == AFTER


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
def test_the_interpreter_agrees_before_and_after_for_every_start(dtype):
    fn = _program((5, 1), 3, "transpose", start_dtype=dtype)
    new = GuardAliasedUpdate()(fn).fn
    x = np.arange(5, dtype=np.int32).reshape(5, 1) * 7 + 1
    info = np.iinfo(dtype)
    for s in sorted({0, 1, 2, 3, 7, 100, info.max, info.min, -1, -3}):
        if not info.min <= s <= info.max:
            continue
        start = np.asarray(s, dtype)
        (want,) = interpret(fn, x, start)
        (got,) = interpret(new, x, start)
        np.testing.assert_array_equal(got, want, err_msg=f"start {s} ({np.dtype(dtype)})")


def test_a_two_dimensional_window_agrees():
    b = Builder("f")
    x = b.param(TensorType((4, 6, 1), np.float32))
    i, j = b.param(TensorType((), np.int32)), b.param(TensorType((), np.int32))
    zero = b.op("constant", [], {"value": np.asarray(0, np.int32)})[0]
    attrs = {"start_indices": (0, 1, 0), "limit_indices": (2, 4, 1), "strides": (1, 1, 1)}
    (u,) = b.op("slice", [x], attrs)
    (u,) = b.op("reverse", [u], {"dimensions": (0, 1)})
    (d,) = b.op("dynamic_update_slice", [x, u, i, j, zero])
    (d,) = b.op("reshape", [d], {"shape": (4, 6)})
    fn = verify(b.finish([d]))
    new = GuardAliasedUpdate()(fn).fn
    assert "dynamic_update_slice" not in print_function(new)
    xv = np.arange(24, dtype=np.float32).reshape(4, 6, 1)
    for s, t in [(0, 0), (1, 2), (2, 4), (5, 9), (-1, -2), (3, 0)]:
        a = (xv, np.int32(s), np.int32(t))
        np.testing.assert_array_equal(interpret(new, *a)[0], interpret(fn, *a)[0])


@pytest.mark.parametrize(
    "shape,view,reader",
    [
        ((5, 1), None, "slice"),  # no bitcast-like op in the region
        ((5, 3), "transpose", "slice"),  # a real transpose, not a bitcast
        ((5, 1), "transpose", "dynamic_slice"),  # read by dynamic_slice: XLA gets it right
    ],
)
def test_what_xla_gets_right_is_left_alone(shape, view, reader):
    fn = _program(shape, 2, view, reader=reader)
    res = GuardAliasedUpdate()(fn)
    assert not res.changed and res.fn is fn and res.report == {}


def test_an_update_not_reading_the_operand_is_left_alone():
    b = Builder("f")
    x = b.param(TensorType((5, 1), np.int32))
    y = b.param(TensorType((2, 1), np.int32))
    i = b.param(TensorType((), np.int32))
    (d,) = b.op("dynamic_update_slice", [x, y, i, i])
    (d,) = b.op("transpose", [d], {"permutation": (1, 0)})
    fn = verify(b.finish([d]))
    assert GuardAliasedUpdate()(fn).fn is fn


def _user_program(lax, x, i):
    s = lax.slice(x, (1, 0), (3, 1))
    d = lax.dynamic_update_slice(x, lax.rev(s, (0,)), (i, 0))
    return lax.transpose(d, (1, 0))


def test_the_compiled_program_gives_numpys_numbers():
    x = np.array([[12], [9], [31]], np.int32)
    want = _numpy(x, 1, 2).T
    got = purejit.jit(lambda x, i: _user_program(plax, x, i))(x, np.int32(1))
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(got), [[12, 31, 9]])
    # jax.jit hands XLA the update as written (jaxlib 0.10.2 CPU: [[12, 31, 31]]); the
    # comparison is with NumPy, which is right on every version
    jax_got = np.asarray(jax.jit(lambda x, i: _user_program(jax.lax, x, i))(x, np.int32(1)))
    assert jax_got.shape == want.shape


def test_every_start_compiles_to_numpys_numbers():
    # x[5] -> dus(x, x[:3], i) -> [5, 1]: every start, compiled against NumPy
    f = purejit.jit(lambda x, i: plax.dynamic_update_slice(x, x[:3], (i,)).reshape(5, 1))
    x = np.arange(5, dtype=np.int32) + 10
    for s in range(-6, 7):
        y = x.copy()
        st = int(np.clip(s + (5 if s < 0 else 0), 0, 2))
        y[st : st + 3] = x[:3]
        np.testing.assert_array_equal(np.asarray(f(x, np.int32(s))).ravel(), y, err_msg=str(s))
