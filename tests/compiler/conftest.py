"""Fixtures of the compiler tests."""

from __future__ import annotations

import pytest

from purejit import api


@pytest.fixture
def python_calls(monkeypatch):
    """The names of the jitted functions whose calls reached purejit's Python dispatch."""
    calls = []
    real = api.Jitted._dispatch

    def counting(self, args, kwargs):
        calls.append(self.__name__)
        return real(self, args, kwargs)

    monkeypatch.setattr(api.Jitted, "_dispatch", counting)
    return calls
