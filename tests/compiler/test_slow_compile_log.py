"""A compile that takes `slow_compile_log_s` seconds or more logs one line through the
`purejit` logger, naming the function, the time and what the persistent cache could do."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.config import config


@pytest.fixture
def limit():
    old = config.read("slow_compile_log_s")
    yield lambda v: config.update("slow_compile_log_s", v)
    config.update("slow_compile_log_s", old)


def _compile_fresh(name):
    def f(x):
        return jnp.sin(x) * 2.0 + 1.0

    f.__name__ = f.__qualname__ = name
    return purejit.jit(f)(np.arange(3.0, dtype=np.float32))


def test_default_is_five_seconds():
    assert config.read("slow_compile_log_s") == 5.0


def test_slow_compile_logs_one_line(limit, caplog):
    limit(1e-9)  # every compile counts as slow
    with caplog.at_level(logging.WARNING, logger="purejit"):
        _compile_fresh("my_slow_step")
    lines = [r.getMessage() for r in caplog.records if r.name == "purejit"]
    assert len(lines) == 1, lines
    assert "compiling my_slow_step took" in lines[0]
    assert "cache" in lines[0]


def test_fast_compile_and_silenced_log_nothing(limit, caplog):
    with caplog.at_level(logging.WARNING, logger="purejit"):
        limit(3600.0)
        _compile_fresh("quick_one")
        limit(None)
        _compile_fresh("silenced_one")
    assert [r for r in caplog.records if r.name == "purejit"] == []
