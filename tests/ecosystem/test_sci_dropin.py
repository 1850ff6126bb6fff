"""lineax, optimistix and diffrax in drop-in mode: each program (`_sci_<library>_program.py`:
LU/Cholesky/CG solves and a solve's gradient; Newton and Chord root finds, the root's
gradient, BFGS; Tsit5 with a PID controller saved at fixed times, Dopri5 backpropagated
through, Euler) run under JAX and under `python -m purejit run` gives the same arrays, bit
for bit. Each case skips where its library is missing."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from _dropin_compare import run_both

HERE = pathlib.Path(__file__).resolve().parent

# library -> (arrays the program saves, at least)
CASES = {"lineax": 7, "optimistix": 7, "diffrax": 8}


@pytest.mark.parametrize("library", sorted(CASES))
def test_sci_program_matches_jax_bit_for_bit(library, tmp_path):
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")
    want, got = run_both(HERE / f"_sci_{library}_program.py", tmp_path)
    assert sorted(want) == sorted(got)
    assert len(want) >= CASES[library]
    for k in want:
        assert (want[k].shape, want[k].dtype) == (got[k].shape, got[k].dtype), k
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    # and the answers are right, not just alike: solvers report success (RESULTS 0)
    for k in ("cg_result", "newton_result"):
        if k in got:
            assert got[k] == 0, k
    if library == "diffrax":  # y(2) = (1 + 2) exp(-2 k), d/dk = -2 y(2)
        np.testing.assert_allclose(got["decay"], got["decay_exact"], rtol=1e-6)
        np.testing.assert_allclose(got["decay_grad"], -2 * got["decay_exact"], rtol=1e-5)
