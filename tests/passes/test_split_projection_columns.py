"""How the split projection's parts read their columns of the weight (`COLUMNS` in
`passes/split_projection.py`): "barrier" (the default) passes each column slice through the
part's barrier (XLA copies it before the GEMM); "product" lets the product read the slice of
the weight itself where XLA's dot merger cannot merge the parts back (each part moving more
than `DOT_MERGER_BYTES`). Both compute the same numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

import purejit
from purejit import fused_attention
from purejit.ir import interpret, verify
from purejit.passes import split_projection as sp

from tests.passes.attention_util import BF16, fuse, traced
from tests.passes.test_split_projection import B, D, T, _loss, packed


def _split(columns, merger_bytes, monkeypatch):
    """The fused program of `packed` before the split, and after it in form `columns`."""
    monkeypatch.setattr(sp, "COLUMNS", columns)
    monkeypatch.setattr(sp, "DOT_MERGER_BYTES", merger_bytes)
    fn, args = traced(packed, (B, T, D), (D, 3 * D))
    unsplit = fuse(fn, split_projections=False).fn
    out, report = sp.split_projections(unsplit, 0)
    verify(out)
    assert len(report) == 1
    return unsplit, out, args


def _reads(fn, w):
    """For each part's product: the ops between the weight and it (by name)."""
    producer = {r: op for op in fn.ops for r in op.results}
    chains = []
    for op in fn.ops:
        if op.name == "dot_general" and op.results[0].type.shape == (B, T, D):
            chain, v = [], op.operands[1]
            while v is not w:  # a barrier passes (x, columns): follow its last operand
                chain.append(producer[v].name)
                v = producer[v].operands[-1]
            chains.append(chain)
    return chains


def test_by_default_each_part_reads_its_columns_through_a_barrier(monkeypatch):
    _, out, _ = _split("barrier", sp.DOT_MERGER_BYTES, monkeypatch)
    assert _reads(out, out.params[1]) == [["optimization_barrier", "slice"]] * 3


def test_product_reads_the_weights_columns_with_nothing_between(monkeypatch):
    unsplit, out, args = _split("product", 0, monkeypatch)
    assert _reads(out, out.params[1]) == [["slice"]] * 3
    assert not [op for op in out.ops if op.name == "optimization_barrier"]
    # the same sums as the barrier form and as the one product
    _, barred, _ = _split("barrier", 0, monkeypatch)
    for a, b, c in zip(interpret(out, *args), interpret(barred, *args), interpret(unsplit, *args)):
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(c, np.float32))


def test_product_keeps_the_barrier_where_the_dot_merger_could_merge_the_parts(monkeypatch):
    # these parts move a few KiB, far below XLA's 32 MiB threshold
    _, out, _ = _split("product", sp.DOT_MERGER_BYTES, monkeypatch)
    assert _reads(out, out.params[1]) == [["optimization_barrier", "slice"]] * 3


def test_an_unknown_form_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sp, "COLUMNS", "bitcast")
    fn, _ = traced(packed, (B, T, D), (D, 3 * D))
    with pytest.raises(ValueError, match=r"COLUMNS='bitcast' must be one of"):
        sp.split_projections(fuse(fn, split_projections=False).fn, 0)


def test_grad_with_columns_read_in_the_product_recomputes_them(monkeypatch):
    # the op lowers to its decomposed program off-GPU, so the whole path runs on CPU
    monkeypatch.setattr(
        fused_attention, "target_options", lambda: {"max_head_dim": 256, "split_min_flops": 0}
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, T, D)).astype(BF16)
    w = (rng.standard_normal((D, 3 * D)) / math.sqrt(D)).astype(BF16)
    got = {}
    for columns in ("barrier", "product"):
        monkeypatch.setattr(sp, "COLUMNS", columns)
        monkeypatch.setattr(sp, "DOT_MERGER_BYTES", 0)
        lowered = purejit.jit(purejit.value_and_grad(_loss, argnums=(0, 1))).lower(x, w)
        (rec,) = lowered.residuals
        saved = [r.what for r in rec.saved if r.type.shape == (D, D)]
        recomputed = [r.what for r in rec.recomputed if r.type.shape == (D, D)]
        got[columns] = lowered.compile()(x, w)
        if columns == "barrier":  # the copies pass the barrier and are saved
            assert saved == ["output of optimization_barrier"] * 3 and not recomputed
        else:  # the backward pass slices the weight again where its products read it
            assert not saved and recomputed == ["output of slice"] * 3
    (v0, g0), (v1, g1) = got["barrier"], got["product"]
    assert float(v0) == float(v1)
    for a, b in zip(g0, g1):
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))


def test_the_step_profile_form_sets_columns_in_the_split_pass():
    # `python -m bench.tools.step_profile --forms "purejit [COLUMNS=product]"`
    from bench.tools.step_profile import _remat_patch

    assert _remat_patch("purejit [COLUMNS=product]") == ("purejit", {"COLUMNS": "product"})
    assert hasattr(sp, "COLUMNS") and "product" in sp.COLUMN_FORMS
