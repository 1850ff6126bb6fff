"""Traceback filtering: an error raised while tracing shows the user's frames, not purejit's
(as JAX's traceback filtering does), and `traceback_filtering="off"` shows everything."""

import os
import traceback

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.errors import PurejitTypeError

PKG = os.path.dirname(os.path.dirname(os.path.abspath(purejit.__file__)))


def _model(x):
    h = jnp.tanh(x)
    return jnp.add(h, jnp.ones(4))  # the user's mistake: [3] + [4]


def _frames(mode):
    old = purejit.config.read("traceback_filtering")
    purejit.config.update("traceback_filtering", mode)
    try:
        with pytest.raises(PurejitTypeError) as e:
            purejit.jit(_model)(np.ones(3, np.float32))
    finally:
        purejit.config.update("traceback_filtering", old)
    return e.value, traceback.extract_tb(e.value.__traceback__)


def _internal(frame) -> bool:
    f = os.path.abspath(frame.filename)
    return any(f.startswith(os.path.join(PKG, d) + os.sep) for d in ("purejit", "ir", "passes"))


def test_internal_frames_are_hidden_by_default():
    err, frames = _frames("on")
    mine = [f for f in frames if f.filename == __file__]
    assert [f.name for f in mine] == ["_frames", "_model"]
    assert "jnp.add(h, jnp.ones(4))" in mine[-1].line  # the user's line is the last one
    inside = [f for f in frames if _internal(f)]
    # only the jitted call's dispatch remains between the caller and the traced function
    # (entered from jaxlib's C++ dispatch on a miss, or from Jitted.__call__ without it)
    names = [(os.path.basename(f.filename), f.name) for f in inside]
    assert names[-1] == ("api.py", "_dispatch")
    assert names[:-1] in ([("api.py", "_cpp_cache_miss")], [("api.py", "__call__")])
    assert any("traceback_filtering" in n for n in err.__notes__)
    assert "test_errors_traceback.py" in str(err)  # the message names the line as well


def test_filtering_off_shows_every_frame():
    err, frames = _frames("off")
    inside = [f for f in frames if _internal(f)]
    assert len(inside) > 5 and any("tracing" in f.filename for f in inside)
    assert not getattr(err, "__notes__", [])
