"""lineax, optimistix and diffrax in drop-in mode: each program (`_sci_<library>_program.py`:
LU/Cholesky/CG/QR/GMRES/Tridiagonal solves and their gradients, and every other lineax solver
in `_sci_lineax_solvers_program.py`; Newton and Chord root finds, the root's
gradient, BFGS; Tsit5 with a PID controller saved at fixed times, Dopri5 backpropagated
through, Euler, Kvaerno5 on the stiff Robertson problem, a gradient through Kvaerno3) run
under JAX and under `python -m purejit run` gives the same arrays, bit for bit; numpyro's
NUTS likewise (test_numpyro_nuts_matches_jax says how). Each case skips where its library
is missing."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest
from _dropin_compare import run_both, scaled_ulp

HERE = pathlib.Path(__file__).resolve().parent

# library -> (arrays the program saves, at least)
CASES = {"lineax": 16, "optimistix": 7, "diffrax": 11}


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


# gradients that differ from JAX's in the last bit of a few entries when the value and the
# gradient are compiled as one program (a Diagonal solve has no linalg op at all: purejit's
# differentiated program rounds one product otherwise)
LINEAX_ULP = {"diagonal_grad_a", "normal_cholesky_grad_a", "normal_cholesky_grad_b",
              "lsmr_grad_a"}  # fmt: skip


def test_every_other_lineax_solver_matches_jax(tmp_path):
    """SVD, Diagonal, Triangular, Normal(CG), Normal(Cholesky), BiCGStab, LSMR and
    AutoLinearSolver, each jitted with its gradient: the solutions bit for bit, the gradients
    too except LINEAX_ULP's, within 4 ulps of the array's largest entry (1 and 2 measured)."""
    if importlib.util.find_spec("lineax") is None:
        pytest.skip("lineax is not installed")
    want, got = run_both(HERE / "_sci_lineax_solvers_program.py", tmp_path)
    assert sorted(want) == sorted(got) and len(want) == 24
    for k in want:
        assert (want[k].shape, want[k].dtype) == (got[k].shape, got[k].dtype), k
        if k in LINEAX_ULP:
            assert scaled_ulp(want[k], got[k]) <= 4, k
        else:
            np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_numpyro_nuts_matches_jax(tmp_path):
    """NUTS with `jit_model_args=True`: bit for bit. With the defaults numpyro computes the
    first gradient eagerly, where JAX's eager result is an ulp from its jitted one (purejit's
    equals it), so the chains part from the first step: their posterior summaries agree
    within Monte Carlo error (200 draws: the standard error of the mean of mu is about 0.02)."""
    if importlib.util.find_spec("numpyro") is None:
        pytest.skip("numpyro is not installed")
    want, got = run_both(HERE / "_sci_numpyro_program.py", tmp_path)
    assert sorted(want) == sorted(got)
    for k in ("mu", "sigma", "num_steps", "diverging"):
        np.testing.assert_array_equal(got["jit_" + k], want["jit_" + k], err_msg=k)
        assert got["default_" + k].shape == want["default_" + k].shape == (200,)
    assert not got["default_diverging"].any() and not want["default_diverging"].any()
    for k in ("mu", "sigma"):
        g, w = got["default_" + k], want["default_" + k]
        assert abs(g.mean() - w.mean()) < 0.1, (k, g.mean(), w.mean())
        assert abs(g.std() - w.std()) < 0.1, (k, g.std(), w.std())
    # the data's mean, 2.16, is where mu's posterior concentrates (a wide prior)
    assert abs(got["jit_mu"].mean() - 2.16) < 0.15
