"""`python -m purejit info` and `python -m purejit demo` (what `make demo` runs)."""

import inspect
import subprocess
import sys

import jax
import numpy as np

import purejit
from purejit import demo
from purejit.__main__ import main


def test_info_prints_versions_backend_and_devices(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"purejit    {purejit.__version__}" in out
    assert f"jax        {jax.__version__}" in out
    assert "stablehlo  1." in out  # jaxlib's StableHLO dialect version
    assert f"backend    {jax.default_backend()}" in out
    assert "device 0:" in out


def test_demo_tour_small(capsys):
    res = demo.main(batch=4, sizes=(8, 16, 3))
    out = capsys.readouterr().out
    for section in ("1. trace, optimise", "2. compile with XLA", "3. steady-state"):
        assert section in out
    # purejit's own modules never import JAX outside purejit/backend (bench/ compares)
    assert "import jax" not in inspect.getsource(demo)
    names = [r.name for r in res["records"]]
    assert names[0] == "trace" and "dce" in names
    # the dead `h @ h.T` is gone: two layers, two matmuls
    final = purejit.jit(demo.mlp).lower(demo.init_params([8, 16, 3]), np.ones((4, 8), np.float32))
    assert demo.op_histogram(final.fn)["dot_general"] == 2
    assert demo.op_histogram(final.traced)["dot_general"] == 3
    assert np.allclose(np.exp(res["out"]).sum(-1), 1.0, atol=1e-5)
    assert set(res["times"]) == {"jit", "eager"}
    assert all(t > 0 for t in res["times"].values())


def test_module_entry_point_runs():
    proc = subprocess.run(
        [sys.executable, "-m", "purejit", "info"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "jaxlib" in proc.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "purejit", "nonsense"], capture_output=True, check=False
    )
    assert bad.returncode == 2  # argparse's usage error
