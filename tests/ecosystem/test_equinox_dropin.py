"""Equinox in drop-in mode: the same program (`_equinox_program.py`) run under JAX and under
`python -m purejit run`, each in its own process, gives the same numbers. Skips where
equinox is not installed."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import purejit
from purejit.compat import _views

HERE = pathlib.Path(__file__).resolve().parent
PROGRAM = HERE / "_equinox_program.py"

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("equinox") is None, reason="equinox is not installed"
    ),
    # equinox's import reads jax.pmap and jax.experimental (branch optax brings both)
    pytest.mark.skipif(
        not hasattr(purejit, "pmap") or _views._mapped_name("jax.experimental") is None,
        reason="drop-in mode lacks jax.pmap or jax.experimental, which equinox imports",
    ),
]

# float results that may differ from JAX's, and by how many ulp at most: purejit transposes
# dot_general as x^T @ ct where JAX computes (ct^T @ x)^T, so two weight gradients sum in
# another order (measured: 1 ulp on mlp_param0 and mlp_param2, hence the vmap outputs)
ULP = {"mlp_param0": 1, "mlp_param2": 1, "vmap": 1}
DROPIN = [sys.executable, "-m", "purejit", "run"]


def _ulp(a: np.ndarray, b: np.ndarray) -> int:
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    return int(np.abs(ia - ib).max()) if a.size else 0


def test_equinox_program_matches_jax(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(HERE.parents[1]))
    runs = {
        "jax": [sys.executable, str(PROGRAM), str(tmp_path / "jax.npz")],
        "purejit": [*DROPIN, str(PROGRAM), str(tmp_path / "pj.npz")],
    }
    procs = {k: subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True) for k, c in runs.items()}  # fmt: skip
    for k, p in procs.items():
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, f"{k}:\n{out[-4000:]}"
    want, got = np.load(tmp_path / "jax.npz"), np.load(tmp_path / "pj.npz")
    assert sorted(want) == sorted(got)
    assert bool(got["error_if_raised"]) and bool(want["error_if_raised"])
    # filter_jit re-raises the failed check as EquinoxRuntimeError on both (in drop-in mode
    # the callback's exception reaches it as JAX's JaxRuntimeError)
    assert str(want["error_if_type"]) == str(got["error_if_type"]) == "EquinoxRuntimeError"
    for k in want:
        w, g = want[k], got[k]
        assert (w.shape, w.dtype) == (g.shape, g.dtype), k
        if w.dtype == np.float32:
            assert _ulp(w, g) <= ULP.get(k, 0), f"{k}: {_ulp(w, g)} ulp from JAX"
        else:
            np.testing.assert_array_equal(g, w, err_msg=k)
