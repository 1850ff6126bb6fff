"""cuDNN attention custom calls as purejit emits them for a CUDA target, diffed against the
golden file recorded with the installed jax's minor version (`attention_golden.py`): target
names, operand/result types and layouts, and the whole `backend_config` JSON. Nothing is
compiled, so this runs on the CPU CI."""

from __future__ import annotations

import json

import jax
import pytest
from attention_golden import CASES, custom_calls, golden_path, jax_calls, purejit_calls

GOLDEN = golden_path(jax.__version__)


def _golden():
    if not GOLDEN.exists():
        pytest.skip(f"no golden file for jax {jax.__version__} ({GOLDEN.name}): record one")
    return json.loads(GOLDEN.read_text())["cases"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_purejit_emits_the_golden_calls(name):
    want = _golden()[name]
    got = purejit_calls(name)
    n_heads, k_heads = CASES[name][3], CASES[name][4]
    if k_heads != n_heads:  # grouped heads: the numerics contract keeps the backward decomposed
        assert [c for c in want if c["target"].endswith("Backward")], "golden has a backward"
        want = [c for c in want if not c["target"].endswith("Backward")]
    assert [c["target"] for c in got] == [c["target"] for c in want]
    for g, w in zip(got, want):
        assert g == w, json.dumps({"purejit": g, "golden": w}, indent=1)


def test_golden_file_is_what_this_jax_emits():
    # the file was recorded with this jax: its lowering still writes the same calls
    name = "padding_causal"
    assert jax_calls(name) == _golden()[name]


def test_extractor_reads_both_mlir_forms():
    text = (
        "%1:2 = stablehlo.custom_call @__cudnn$fmhaSoftmax(%a) {api_version = 2 : i32, "
        'backend_config = "{\\22x\\22: 1}", operand_layouts = [dense<[1, 0]> : '
        "tensor<2xindex>], result_layouts = [dense<0> : tensor<1xindex>]} : "
        "(tensor<2x2xbf16>) -> (tensor<0xui8>)"
    )
    (call,) = custom_calls(text)
    assert call["target"] == "__cudnn$fmhaSoftmax"
    assert call["backend_config"] == {"x": 1}
    assert call["layouts"] == {"operand_layouts": ["1, 0"], "result_layouts": ["0"]}
