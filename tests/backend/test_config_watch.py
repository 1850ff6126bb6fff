"""Options reach the backend through `config.watch`: config imports nothing of purejit, and
pjrt keeps jax's x64 flag in step by the callback it registers when imported."""

from __future__ import annotations

import ast
import importlib
import pathlib

import jax
import pytest

from purejit.backend import pjrt  # noqa: F401 - registers its enable_x64 watcher
from purejit.config import config


def test_config_imports_nothing_of_purejit():
    module = importlib.import_module("purejit.config")  # `purejit.config` is the object
    tree = ast.parse(pathlib.Path(module.__file__).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in names if m.startswith("purejit")]


def test_watchers_see_every_update_of_their_option():
    seen = []
    config.watch("recompile_warn_after", seen.append)
    old = config.read("recompile_warn_after")
    try:
        config.update("recompile_warn_after", 3)
        config.update(recompile_warn_after=5, recompile_raise=False)
        config.update("recompile_raise", False)  # another option: not seen
    finally:
        config.update("recompile_warn_after", old)
        config._watchers["recompile_warn_after"].remove(seen.append)
    assert seen == [3, 5, old]


def test_watching_an_unknown_option_raises():
    with pytest.raises(KeyError, match="unknown purejit option"):
        config.watch("no_such_option", print)


def test_enable_x64_reaches_jax():
    old = config.enable_x64
    try:
        config.update("enable_x64", not old)
        assert jax.config.jax_enable_x64 == (not old)
    finally:
        config.update("enable_x64", old)
    assert jax.config.jax_enable_x64 == old
