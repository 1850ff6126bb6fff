"""Fixtures of the pass tests: `stacked_xs`, the roll pass as the GPU runs it."""

from __future__ import annotations

import pytest


@pytest.fixture
def stacked_xs(monkeypatch):
    """The compiler's roll pass with the layers' parameters stacked, the GPU's route (on CPU
    they are read per trip by a case, unstacked: test_roll_layers_select.py)."""
    from purejit.passes import pipeline

    default = pipeline.RollLayers
    monkeypatch.setattr(pipeline, "RollLayers", lambda **kw: default(**{**kw, "select_xs": False}))
