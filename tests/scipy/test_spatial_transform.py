"""scipy.spatial.transform (Rotation, Slerp) against jax.scipy.spatial.transform under jit:
the same formulas, vectorised the same way, so results are equal bit for bit (one case
excepted, stated below); plus pytree behaviour, errors, Rotation.random (which JAX lacks) and
the drop-in names."""

import jax
import jax.numpy as jjnp
import jax.scipy.spatial.transform as jst
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
import purejit.scipy.spatial.transform as pst
from purejit.compat import resolve

RNG = np.random.default_rng(0)
Q = RNG.standard_normal((5, 4)).astype(np.float32)
V = RNG.standard_normal((5, 3)).astype(np.float32)
TIMES = np.array([0.0, 0.3, 1.5, 3.99, 4.0], np.float32)


def _cases(t, np_):
    """name -> fn(q, v): the same calls written against jax's or purejit's module."""
    R, S = t.Rotation, t.Slerp
    cases = {
        "from_quat": lambda q, v: R.from_quat(q).quat,
        "as_matrix": lambda q, v: R.from_quat(q).as_matrix(),
        "from_matrix": lambda q, v: R.from_matrix(R.from_quat(q).as_matrix()).quat,
        "as_rotvec": lambda q, v: R.from_quat(q).as_rotvec(),
        "as_rotvec degrees": lambda q, v: R.from_quat(q).as_rotvec(degrees=True),
        "from_rotvec": lambda q, v: R.from_rotvec(v).quat,
        "from_rotvec small": lambda q, v: R.from_rotvec(v * 1e-4).as_rotvec(),
        "from_rotvec degrees": lambda q, v: R.from_rotvec(v * 50, degrees=True).quat,
        "as_mrp": lambda q, v: R.from_quat(q).as_mrp(),
        "from_mrp": lambda q, v: R.from_mrp(v).quat,
        "from_euler z": lambda q, v: R.from_euler("z", v[:, :1]).quat,
        "from_euler XY degrees": lambda q, v: R.from_euler("XY", v[:, :2] * 90, True).quat,
        "from_euler one": lambda q, v: R.from_euler("zyx", v[0]).quat,
        "apply": lambda q, v: R.from_quat(q).apply(v),
        "apply inverse": lambda q, v: R.from_quat(q).apply(v, inverse=True),
        "apply one to many": lambda q, v: R.from_quat(q[0]).apply(v),
        "mul": lambda q, v: (R.from_quat(q) * R.from_rotvec(v)).quat,
        "inv": lambda q, v: R.from_quat(q).inv().quat,
        "magnitude": lambda q, v: R.from_quat(q).magnitude(),
        "mean": lambda q, v: R.from_quat(q).mean().quat,
        "mean weighted": lambda q, v: R.from_quat(q).mean(v[:, 0] ** 2).quat,
        "as_quat canonical scalar_first": lambda q, v: R.from_quat(q).as_quat(True, True),
        "as_quat canonical": lambda q, v: R.from_quat(-q).as_quat(canonical=True),
        "getitem": lambda q, v: R.from_quat(q)[1:3].quat,
        "concatenate": lambda q, v: R.concatenate([R.from_quat(q), R.from_rotvec(v)]).quat,
        "identity": lambda q, v: R.identity().quat,
        "slerp": lambda q, v: S.init(np.arange(5.0), R.from_quat(q))(TIMES).quat,
        "slerp scalar time": lambda q, v: S.init(np.arange(5.0), R.from_quat(q))(2.5).quat,
        "slerp fields": lambda q, v: S.init(np.arange(5.0), R.from_quat(q)),
    }
    for seq in ("xyz", "ZXY", "zxz", "XYX"):
        cases[f"as_euler {seq}"] = lambda q, v, seq=seq: R.from_quat(q).as_euler(seq)
        cases[f"from_euler {seq}"] = lambda q, v, seq=seq: R.from_euler(seq, v, True).quat
    # gimbal lock: the middle angle 0 or pi takes the degenerate branches
    locked = np.array([[0.3, 0.0, 0.2], [0.3, np.pi, 0.2]], np.float32)
    cases["as_euler gimbal lock"] = lambda q, v: R.from_euler("zxz", locked).as_euler("zxz")
    cases["as_euler degrees"] = lambda q, v: R.from_quat(q).as_euler("yzx", degrees=True)
    return cases


# cases compared with a tolerance instead of bit for bit, and why
CLOSE = {
    # 1 ulp: XLA compiles JAX's `hstack(...) / (|mrp|^2 + 1)` as a multiplication by the
    # reciprocal (visible in the optimised HLO) and purejit's as a division
    "from_mrp": 2e-7,
}


def test_rotations_match_jax():
    ref_cases, our_cases = _cases(jst, jjnp), _cases(pst, pnp)
    names = list(ref_cases)
    refs = jax.jit(lambda q, v: [ref_cases[k](q, v) for k in names])(Q, V)
    outs = purejit.jit(lambda q, v: [our_cases[k](q, v) for k in names])(Q, V)
    for name, ref, out in zip(names, refs, outs):
        rs, os = jax.tree_util.tree_leaves(ref), purejit.tree_util.tree_leaves(out)
        assert len(rs) == len(os), name
        for r, o in zip(rs, os):
            assert r.weak_type == o.weak_type, name
            r, o = np.asarray(r), np.asarray(o)
            assert r.dtype == o.dtype and r.shape == o.shape, name
            if name in CLOSE:
                np.testing.assert_allclose(o, r, rtol=CLOSE[name], atol=CLOSE[name])
            else:
                np.testing.assert_array_equal(o, r, err_msg=name)


def test_rotation_is_a_pytree_and_works_eagerly():
    rot = pst.Rotation.from_quat(Q)
    doubled = purejit.jit(lambda r: r * r)(rot)
    assert isinstance(doubled, pst.Rotation) and len(doubled) == 5
    # twice the angle, folded into [0, pi]
    twice = 2 * np.asarray(jst.Rotation.from_quat(Q).magnitude())
    expected = np.minimum(twice, 2 * np.pi - twice)
    np.testing.assert_allclose(np.asarray(doubled.magnitude()), expected, atol=1e-5)
    # the composition rotates like the product of the matrices
    m = np.asarray(rot.as_matrix())
    np.testing.assert_allclose(np.asarray(doubled.as_matrix()), m @ m, atol=1e-5)


def test_errors():
    R = pst.Rotation
    with pytest.raises(ValueError, match="consecutive axes"):
        R.from_euler("xxy", np.zeros(3))
    with pytest.raises(ValueError, match=r"\['x', 'y', 'z'\]"):
        R.from_euler("xYz", np.zeros(3))
    with pytest.raises(ValueError, match="upto 3"):
        R.from_euler("xyzx", np.zeros(4))
    with pytest.raises(ValueError, match="last axis"):
        R.from_euler("z", np.zeros(3))
    with pytest.raises(ValueError, match="Expected 3 axes"):
        R.from_quat(Q).as_euler("xy")
    with pytest.raises(TypeError, match="not subscriptable"):
        R.from_quat(Q[0])[0]
    with pytest.raises(TypeError, match="no len"):
        len(R.from_quat(Q[0]))
    with pytest.raises(ValueError, match="number of values"):
        R.from_quat(Q).mean(np.ones(3))
    with pytest.raises(TypeError, match="Rotation"):
        pst.Slerp.init([0, 1], Q[:2])
    with pytest.raises(ValueError, match="at least 2"):
        pst.Slerp.init([0], R.from_quat(Q[:1]))
    with pytest.raises(ValueError, match="timestamps"):
        pst.Slerp.init([0, 1, 2], R.from_quat(Q[:2]))


def test_random_is_uniform_on_so3():
    # JAX's Rotation.random raises NotImplementedError; purejit's samples as SciPy does.
    # A uniform rotation's angle has CDF (t - sin t) / pi: 0.1817 at t = pi/2.
    rot = purejit.jit(lambda k: pst.Rotation.random(k, 4000))(purejit.random.key(0))
    quat = np.asarray(rot.quat)
    assert quat.shape == (4000, 4) and quat.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(quat, axis=-1), 1.0, atol=1e-6)
    below = np.mean(np.asarray(rot.magnitude()) < np.pi / 2)
    assert abs(below - (np.pi / 2 - 1) / np.pi) < 0.02, below
    assert abs(np.mean(quat, axis=0)).max() < 0.05
    assert pst.Rotation.random(purejit.random.key(1)).quat.shape == (4,)
    assert pst.Rotation.identity(3).quat.shape == (3, 4)


def test_dropin_names():
    view = resolve("jax.scipy.spatial.transform")
    assert view.Rotation is pst.Rotation and view.Slerp is pst.Slerp
    assert resolve("jax.scipy.spatial").transform is view
