"""debug.breakpoint (the command-line debugger over a jitted frame's values), debug.log (a
logging record at the user's line), inspect_array_sharding and the sharding grids of
visualize_sharding / visualize_array_sharding."""

import bdb
import io
import logging
import typing

import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit import debug


def _drive(monkeypatch, commands: str) -> io.StringIO:
    out = io.StringIO()
    monkeypatch.setattr("sys.stdin", io.StringIO(commands))
    monkeypatch.setattr("sys.stdout", out)
    return out


def test_breakpoint_shows_the_frames_values_under_jit(monkeypatch):
    @purejit.jit
    def f(x):
        y = x * 2.0
        scale = 3  # a Python local, kept as it is
        debug.breakpoint()
        return y + scale

    out = _drive(monkeypatch, "p y\np y.sum() + scale\nw\nll\nc\n")
    got = f(np.arange(3, dtype=np.float32))
    text = out.getvalue()
    np.testing.assert_array_equal(np.asarray(got), [3.0, 5.0, 7.0])
    assert "Entering purejit debugger at" in text and "test_debug_views.py" in text
    assert "array([0., 2., 4.], dtype=float32)" in text
    assert "np.float32(9.0)" in text or "9.0" in text
    assert "-> " in text and "debug.breakpoint()" in text  # the source around the line


def test_breakpoint_moves_up_and_quits(monkeypatch):
    def inner(v):
        debug.breakpoint()
        return v

    def outer(x):
        z = x + 1.0
        return inner(z * 2.0)

    out = _drive(monkeypatch, "p v\nu\np z\nd\nq\n")
    with pytest.raises(bdb.BdbQuit):
        purejit.jit(outer)(np.float32(1.0))
    text = out.getvalue()
    assert "np.float32(4.0)" in text or "array(4., dtype=float32)" in text
    assert "array(2., dtype=float32)" in text  # z, one frame up
    assert "in outer" in text and "in inner" in text


def test_log_records_the_value_at_the_users_line(caplog):
    @purejit.jit
    def f(x):
        debug.log("x is {x}", x=x)
        return x + 1

    with caplog.at_level(logging.INFO, logger="purejit.debug"):
        f(np.int32(41))
        debug.log("eager {}", np.int32(7))
    records = [r for r in caplog.records if r.name == "purejit.debug"]
    assert [r.getMessage() for r in records] == ["x is 41", "eager 7"]
    assert all(r.filename == "test_debug_views.py" and r.levelno == logging.INFO for r in records)


def test_inspect_and_visualize_one_device(capsys):
    x = pnp.arange(8.0)
    seen = []
    debug.inspect_array_sharding(x, callback=seen.append)
    assert seen == [x.sharding]
    debug.visualize_array_sharding(x)
    text = capsys.readouterr().out
    assert f"{x.devices().pop().platform.upper()} 0" in text and text.startswith("┌")
    with pytest.raises(NotImplementedError, match="traced value"):
        purejit.jit(lambda v: debug.inspect_array_sharding(v, callback=print))(x)
    with pytest.raises(ValueError, match="1-D and 2-D"):
        debug.visualize_sharding((2, 2, 2), x.sharding)


class _Dev(typing.NamedTuple):
    platform: str
    id: int


class _FourWay:
    """A 2x2 sharding of an (8, 4) array over four fake devices: rows by device // 2."""

    devices = [_Dev("cpu", i) for i in range(4)]

    def devices_indices_map(self, shape):
        return {
            d: (
                slice(4 * (d.id // 2), 4 * (d.id // 2) + 4),
                slice(2 * (d.id % 2), 2 * (d.id % 2) + 2),
            )
            for d in self.devices
        }


def test_visualize_sharding_draws_the_grid(capsys):
    debug.visualize_sharding((8, 4), _FourWay(), max_width=20)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "┌" + "─" * 10 + "┬" + "─" * 10 + "┐"
    assert lines[1] == "│" + "CPU 0".center(10) + "│" + "CPU 1".center(10) + "│"
    assert lines[3] == "│" + "CPU 2".center(10) + "│" + "CPU 3".center(10) + "│"
    assert lines[4].startswith("└") and len(lines) == 5
