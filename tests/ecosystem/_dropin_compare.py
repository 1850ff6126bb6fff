"""Shared by the drop-in ecosystem tests: run one program under JAX and under
`python -m purejit run`, each in its own process, and compare what they saved."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
DROPIN = [sys.executable, "-m", "purejit", "run"]


def run_both(program: pathlib.Path, tmp_path: pathlib.Path, timeout: int = 300):
    """(JAX's results, purejit's results): the npz files `program OUT.npz` wrote."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    runs = {
        "jax": [sys.executable, str(program), str(tmp_path / "jax.npz")],
        "purejit": [*DROPIN, str(program), str(tmp_path / "pj.npz")],
    }
    procs = {k: subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True) for k, c in runs.items()}  # fmt: skip
    for k, p in procs.items():
        out, _ = p.communicate(timeout=timeout)
        assert p.returncode == 0, f"{k}:\n{out[-4000:]}"
    return np.load(tmp_path / "jax.npz"), np.load(tmp_path / "pj.npz")


def scaled_ulp(want: np.ndarray, got: np.ndarray) -> float:
    """The largest difference in units of the last place of the array's largest magnitude
    (a gradient summed in another order differs in ulps of its scale, not of each entry)."""
    if not want.size:
        return 0.0
    scale = np.spacing(np.abs(want).max().astype(want.dtype))
    return float(np.abs(want.astype(np.float64) - got).max() / scale)
