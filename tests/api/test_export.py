"""`purejit.export` / `purejit.deserialize`."""

import collections
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.tracing import ShapedArray
from purejit.export import ExportError, treedef_from_json, treedef_to_json
from purejit.tree_util import tree_structure

RNG = np.random.default_rng(1)
X = RNG.standard_normal((4, 3)).astype(np.float32)
PARAMS = {"w": RNG.standard_normal((3, 2)).astype(np.float32), "b": np.zeros(2, np.float32)}


def model(x, params, *, scale):
    h = jnp.tanh(x @ params["w"] + params["b"])
    return {"y": h * scale, "stats": [h.sum(), None, (h.max(axis=0),)]}


def want():
    h = np.tanh(X @ PARAMS["w"] + PARAMS["b"])
    return h * 2.0, h.sum(), h.max(axis=0)


def _exported():
    return purejit.export(purejit.jit(model, static_argnames="scale"), X, PARAMS, scale=2.0)


def test_round_trip_in_process():
    e = _exported()
    e2 = purejit.deserialize(e.serialize())
    assert e2.in_tree == e.in_tree and e2.out_tree == e.out_tree
    assert e2.in_avals == e.in_avals and e2.out_avals == e.out_avals
    out = e2(X, PARAMS)
    y, s, m = want()
    np.testing.assert_allclose(np.asarray(out["y"]), y, rtol=1e-5)
    np.testing.assert_allclose(float(out["stats"][0]), s, rtol=1e-5)
    assert out["stats"][1] is None
    np.testing.assert_allclose(np.asarray(out["stats"][2][0]), m, rtol=1e-6)
    assert "func.func public @main" in e2.mlir_module()


def test_runs_in_a_fresh_process_without_the_users_code(tmp_path):
    path = tmp_path / "model.pjexport"
    path.write_bytes(_exported().serialize())
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "w.npy", PARAMS["w"])
    child = textwrap.dedent(
        f"""
        import json, sys
        import numpy as np
        import purejit
        e = purejit.deserialize(open({str(path)!r}, "rb").read())
        x = np.load({str(tmp_path / "x.npy")!r})
        w = np.load({str(tmp_path / "w.npy")!r})
        out = e(x, {{"w": w, "b": np.zeros(2, np.float32)}})
        user = [m for m in sys.modules if "test_export" in m or m.startswith("tests")]
        print(json.dumps({{"y": np.asarray(out["y"]).tolist(), "user": user,
                          "none": out["stats"][1] is None}}))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", child],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=str(tmp_path),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["user"] == [] and got["none"]
    np.testing.assert_allclose(got["y"], want()[0], rtol=1e-5)


def test_wrong_shapes_dtypes_and_structure_are_clear_errors():
    e = purejit.deserialize(_exported().serialize())
    with pytest.raises(
        TypeError,
        match=r"argument x is f32\[5,3\], but it was exported for "
        r"f32\[4,3\]",
    ):
        e(np.ones((5, 3), np.float32), PARAMS)
    with pytest.raises(TypeError, match=r"argument params\['b'\] is s32\[2\].*f32\[2\]"):
        e(X, {"w": PARAMS["w"], "b": np.zeros(2, np.int32)})
    with pytest.raises(TypeError, match="structured as"):
        e(X, [PARAMS["w"], PARAMS["b"]])


def test_shape_specs_and_target_versions():
    specs = (ShapedArray((2, 3), np.dtype(np.float32)), ShapedArray((3,), np.dtype(np.float32)))
    for target in ("minimum", "current", "week_4"):
        e = purejit.export(lambda a, b: a * b, *specs, target_version=target)
        data = e.serialize()
        assert f"StableHLO_v{e.target_version}".encode() in e.stablehlo[:40]
        a = np.ones((2, 3), np.float32)
        b = np.arange(3, dtype=np.float32)
        np.testing.assert_allclose(np.asarray(purejit.deserialize(data)(a, b)), a * b)


def test_default_target_is_the_12_week_window():
    from purejit.backend import pjrt

    e = purejit.export(lambda a: a + 1, X)
    assert e.target_version == pjrt.stablehlo_versions()["week_12"]


def test_custom_nodes_are_refused():
    Pair = collections.namedtuple("Pair", "a b")
    with pytest.raises(ExportError, match="namedtuple|Pair"):
        purejit.export(lambda p: p.a + p.b, Pair(X, X))
    with pytest.raises(ExportError, match="defaultdict"):
        purejit.export(lambda d: d["a"] * 2, collections.defaultdict(list, a=X))
    with pytest.raises(ExportError, match="dict key"):
        purejit.export(lambda d: d[(1, 2)] * 2, {(1, 2): X})


def test_treedef_json_round_trip():
    od = collections.OrderedDict([("z", 1), ("a", 2)])
    tree = ((1, [2, None, {"a": 3, "b": (4,)}, {7: 1, 2: 0}, od]), {"k": 5})
    td = tree_structure(tree)
    assert treedef_from_json(json.loads(json.dumps(treedef_to_json(td)))) == td


def test_corrupt_bytes_are_refused():
    data = _exported().serialize()
    with pytest.raises(ExportError, match="magic"):
        purejit.deserialize(b"nope" + data)
    with pytest.raises(ExportError, match="truncated or corrupt"):
        purejit.deserialize(data[:-5])
