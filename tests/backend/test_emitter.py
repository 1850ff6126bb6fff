"""The emitter core: symbol names XLA accepts, the one region emitter, and lowerings that
only the emitter reaches (an empty collective permutation)."""

from __future__ import annotations

import numpy as np
import pytest
from purejit.ir import Builder, TensorType, parse, verify

import purejit
from purejit.backend import stablehlo
from purejit.backend.stablehlo import symbol_name


@pytest.mark.parametrize(
    "name, want",
    [
        ("f", "f"),
        ("café", "cafe"),
        ("naïve_fn2", "naive_fn2"),
        ("函数", "u51fd_u6570"),
        ("x函数y", "x_u51fd_u6570_y"),
        ("<lambda>", "_lambda_"),
        ("", "fn"),
    ],
)
def test_symbol_name_is_ascii_and_readable(name, want):
    got = symbol_name(name)
    assert got == want
    assert got.isascii() and all(c.isalnum() or c == "_" for c in got)


def test_non_ascii_function_names_compile():
    def café(x):
        return x * 2 + 1

    def 函数(x):
        return x - 1

    x = np.arange(3, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(purejit.jit(café)(x)), x * 2 + 1)
    np.testing.assert_allclose(np.asarray(purejit.jit(函数)(x)), x - 1)
    text = purejit.jit(café).lower(x).as_text()
    assert text.startswith("module @purejit_cafe ")


CASE_PROGRAM = """
func @f(%0: s32[], %1: f32[3]) -> (f32[3]) {
  %2 = case(%0, %1) : (f32[3]) region(%3: f32[3]) {
    %4 = negate(%3) : (f32[3])
    return %4
  } region(%5: f32[3]) {
    %6 = exponential(%5) : (f32[3])
    return %6
  }
  return %2
}"""


def test_regions_nest_with_their_own_indentation_and_terminator():
    text = stablehlo.emit(verify(parse(CASE_PROGRAM.strip())))
    stablehlo.verify_module(text)
    lines = text.splitlines()
    returns = [ln for ln in lines if '"stablehlo.return"' in ln]
    assert len(returns) == 2  # one per branch, none for the function
    assert all(ln.startswith("      ") for ln in returns)  # one step inside the function body
    assert sum('"func.return"' in ln for ln in lines) == 1
    assert "^bb0" not in text  # case branches take no block arguments: captures are outer


def test_body_binds_block_arguments_and_outer_values():
    b = Builder("g")
    t = TensorType((2,), np.float32)
    x, y = b.param(t), b.param(t)
    (z,) = b.op("add", [x, y])
    fn = b.finish([z])
    ctx = stablehlo.EmitContext()
    decls, lines = ctx.body(fn, block_args=1, outer=["%outer"])
    assert decls == ["%v1: tensor<2xf32>"]
    assert '"stablehlo.add"(%v1, %outer)' in lines[0]
    assert lines[-1].strip() == '"stablehlo.return"(%v2) : (tensor<2xf32>) -> ()'
    assert ctx.lines == []  # the body is returned, not left in the enclosing block


def test_empty_collective_permute_lowers_to_zeros():
    fn = verify(
        parse(
            """
func @f(%0: f32[4]) -> (f32[4]) {
  %1 = collective_permute(%0) {source_target_pairs=[]} : (f32[4])
  return %1
}""".strip()
        )
    )
    text = stablehlo.emit(fn)
    stablehlo.verify_module(text)
    assert "stablehlo.collective_permute" not in text
    assert '"stablehlo.broadcast_in_dim"' in text and '"stablehlo.constant"' in text
