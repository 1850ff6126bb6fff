"""tools/random_hlo_diff.py: the float-op multisets it compares, on hand-written HLO and on
one real sampler (gumbel, whose float ops XLA compiles the same for purejit and JAX)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location(
        "_hlo_diff", ROOT / "tools" / "random_hlo_diff.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_HLO = """
ENTRY %main (p: bf16[4]) -> bf16[4] {
  %p = bf16[4]{0} parameter(0)
  %c = f32[4]{0} convert(%p)
  %l = f32[4]{0} log-plus-one(%c)
  %i = u32[4]{0} bitcast-convert(%l)
  %x = u32[4]{0} xor(%i, %i)
  ROOT %r = bf16[4]{0} convert(%l)
}
"""

_SHLO = """
func.func public @main(%arg0: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = "stablehlo.constant"() {value = dense<"0x803F"> : tensor<bf16>} : () -> tensor<bf16>
  %1 = "stablehlo.broadcast_in_dim"(%0) {broadcast_dimensions = array<i64>} : (tensor<bf16>) -> tensor<4xbf16>
  %2 = "stablehlo.multiply"(%arg0, %1) : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %3 = stablehlo.log_plus_one %2 : tensor<4xbf16>
  %4 = call @f(%3) : (tensor<4xbf16>) -> tensor<4xbf16>
  return %4 : tensor<4xbf16>
}
func.func private @f(%arg0: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = stablehlo.negate %arg0 : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}
"""  # noqa: E501


def test_counts_float_ops_and_conversions_only(tool):
    got = dict(tool._hlo_counts(_HLO))
    assert got == {"convert bf16->f32": 1, "log_plus_one f32": 1, "convert f32->bf16": 1}


def test_stablehlo_expands_calls_and_drops_multiply_by_one(tool):
    assert dict(tool._shlo_counts(_SHLO)) == {"log_plus_one bf16": 1, "negate bf16": 1}


def test_gumbel_compiles_to_the_same_float_ops_as_jax(tool):
    from bench import random_bits as rb

    group = next(g for g in rb.groups() if rb.label(g) == "gumbel[17]:bfloat16(,mode=high)")
    more_purejit, more_jax = tool.diff_group(group, "compiled")
    assert not more_purejit and not more_jax, (more_purejit, more_jax)
