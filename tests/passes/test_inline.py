"""Inline: IR text in -> IR text out for `call` ops (nested, inside regions, called twice),
the interpreter gives the same numbers, and a program with a call compiles to the numbers
of the same program written flat (and of JAX)."""

import jax
import jax.numpy as jnp
import numpy as np
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes.inline import Inline

from purejit.backend import pjrt, stablehlo


def _run(src: str):
    fn = verify(parse(src))
    res = Inline()(fn)
    verify(res.fn)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.type.shape).astype(p.type.dtype) for p in fn.params]
    for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
        np.testing.assert_array_equal(b, a)
    return print_function(res.fn), res


TWICE = """func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = call(%0, %1) {callee="g"} : (f32[4]) region(%3: f32[4], %4: f32[4]) {
    %5 = multiply(%3, %4) : (f32[4])
    %6 = sine(%5) : (f32[4])
    return %6
  }
  %7 = call(%2, %1) {callee="g"} : (f32[4]) region(%8: f32[4], %9: f32[4]) {
    %10 = multiply(%8, %9) : (f32[4])
    %11 = sine(%10) : (f32[4])
    return %11
  }
  return %7
}"""


def test_inlines_every_call_with_fresh_values():
    out, res = _run(TWICE)
    assert res.changed and res.report == {"calls_inlined": 2}
    assert (
        out
        == """func @f(%0: f32[4], %1: f32[4]) -> (f32[4]) {
  %2 = multiply(%0, %1) : (f32[4])
  %3 = sine(%2) : (f32[4])
  %4 = multiply(%3, %1) : (f32[4])
  %5 = sine(%4) : (f32[4])
  return %5
}"""
    )


def test_nested_calls_and_calls_inside_regions():
    src = """func @f(%0: s32[], %1: f32[3]) -> (f32[3], f32[3]) {
  %2 = case(%0, %1) : (f32[3]) region(%3: f32[3]) {
    %4 = call(%3) {callee="outer"} : (f32[3]) region(%5: f32[3]) {
      %6 = call(%5, %5) {callee="inner"} : (f32[3]) region(%7: f32[3], %8: f32[3]) {
        %9 = add(%7, %8) : (f32[3])
        return %9
      }
      %10 = exponential(%6) : (f32[3])
      return %10
    }
    return %4
  } region(%11: f32[3]) {
    return %11
  }
  %12 = call(%1) {callee="id"} : (f32[3]) region(%13: f32[3]) {
    return %13
  }
  return %2, %12
}"""
    out, res = _run(src)
    assert res.report == {"calls_inlined": 3}
    assert (
        out
        == """func @f(%0: s32[], %1: f32[3]) -> (f32[3], f32[3]) {
  %2 = case(%0, %1) : (f32[3]) region(%3: f32[3]) {
    %4 = add(%3, %3) : (f32[3])
    %5 = exponential(%4) : (f32[3])
    return %5
  } region(%6: f32[3]) {
    return %6
  }
  return %2, %1
}"""
    )


def test_a_program_without_calls_is_handed_on_unchanged():
    src = """func @f(%0: f32[2]) -> (f32[2]) {
  %1 = negate(%0) : (f32[2])
  return %1
}"""
    fn = parse(src)
    res = Inline()(fn)
    assert res.fn is fn and not res.changed


def test_compiled_call_matches_the_flat_program_and_jax():
    fn = verify(parse(TWICE))
    x, y = (np.random.default_rng(1).standard_normal(4).astype(np.float32) for _ in range(2))
    want = jax.jit(lambda a, b: jnp.sin(jnp.sin(a * b) * b))(x, y)
    # the call lowered as it is (the lowering inlines it) and after the pass
    for f in (fn, Inline()(fn).fn):
        exe = pjrt.compile(stablehlo.emit(f), f.param_types, f.result_types)
        (got,) = exe.execute([pjrt.to_device(x), pjrt.to_device(y)])
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    np.testing.assert_allclose(interpret(fn, x, y)[0], want, rtol=1e-6)
