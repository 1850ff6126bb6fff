"""purejit.nn.initializers gives jax.nn.initializers' values for the same key."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest

import purejit
import purejit.random as pr
from purejit.nn import initializers as pi

ji = jax.nn.initializers

CASES = [
    ("zeros", (), (3, 4)),
    ("ones", (), (2, 5)),
    ("constant", (0.25,), (3,)),
    ("uniform", (), (4, 6)),
    ("uniform", (0.5,), (7,)),
    ("normal", (), (5, 3)),
    ("normal", (2.0,), (9,)),
    ("truncated_normal", (), (8, 8)),
    ("truncated_normal", (0.1, None, -1.0, 3.0), (6,)),
    ("glorot_uniform", (), (16, 8)),
    ("glorot_normal", (), (16, 8)),
    ("xavier_uniform", (), (3, 3, 4, 5)),
    ("xavier_normal", (), (3, 3, 4, 5)),
    ("he_uniform", (), (32, 4)),
    ("he_normal", (), (32, 4)),
    ("kaiming_uniform", (), (2, 3)),
    ("kaiming_normal", (), (2, 3)),
    ("lecun_uniform", (), (10, 20)),
    ("lecun_normal", (), (10, 20)),
    ("variance_scaling", (0.5, "fan_out", "normal"), (6, 10)),
    ("variance_scaling", (2.0, "fan_geo_avg", "uniform"), (6, 10)),
    ("variance_scaling", (1.0, "fan_in", "truncated_normal", 0, 1), (12, 7)),
]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16], ids=str)
def test_initializers_match_jax(dtype):
    bad = []
    for name, args, shape in CASES:
        p, j = getattr(pi, name), getattr(ji, name)
        if name not in ("zeros", "ones"):
            p, j = p(*args), j(*args)
        for seed in (0, 7):
            got = p(pr.key(seed), shape, dtype)
            want = j(jax.random.key(seed), shape, dtype)
            if not _same(got, want):
                bad.append(f"{name}{args} {shape} seed={seed}")
    assert not bad, bad


def test_initializers_under_jit_match_jax_jit():
    for name in ("glorot_normal", "he_uniform", "lecun_normal"):
        got = purejit.jit(lambda k: getattr(pi, name)()(k, (8, 4)))(pr.key(3))
        want = jax.jit(lambda k: getattr(ji, name)()(k, (8, 4)))(jax.random.key(3))
        assert _same(got, want), name


def test_orthogonal_needs_qr():
    if hasattr(purejit.numpy, "linalg") and hasattr(purejit.numpy.linalg, "qr"):
        got = pi.orthogonal()(pr.key(0), (4, 4))
        want = ji.orthogonal()(jax.random.key(0), (4, 4))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    else:
        with pytest.raises(NotImplementedError, match="linalg.qr"):
            pi.orthogonal()(pr.key(0), (4, 4))
