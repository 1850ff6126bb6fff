"""purejit.scipy.cluster.vq.vq against jax.scipy.cluster.vq.vq, both under jit on CPU, bit
for bit: 2-d and 1-d observations, integer input, ties."""

from __future__ import annotations

import jax
import jax.scipy.cluster.vq as jvq
import numpy as np
import pytest

import purejit
from purejit.scipy.cluster import vq

RNG = np.random.default_rng(0)
OBS = RNG.normal(size=(10, 3)).astype(np.float32)
CODES = RNG.normal(size=(4, 3)).astype(np.float32)


def _cases(fn):
    def f(obs, codes):
        ints = (obs * 3).astype(np.int32), (codes * 3).astype(np.int32)
        # two equal codes: the first wins
        tied = codes[np.array([0, 0])]
        return [fn(obs, codes), fn(obs[:, 0], codes[:, 0]), fn(*ints), fn(obs, tied)]

    return f


def test_vq_matches_jax_bitwise():
    got = purejit.jit(_cases(vq.vq))(OBS, CODES)
    want = jax.jit(_cases(jvq.vq))(OBS, CODES)
    for (gc, gd), (wc, wd) in zip(got, want):
        for g, w in ((gc, wc), (gd, wd)):
            g, w = np.asarray(g), np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
    assert (np.asarray(got[3][0]) == 0).all()


def test_vq_checks_ranks():
    with pytest.raises(ValueError, match="same rank"):
        vq.vq(OBS, CODES[0])
    with pytest.raises(ValueError, match="ndim different than 1 or 2"):
        vq.vq(OBS[None], CODES[None])


def test_dropin_mode_gives_purejits_module():
    import purejit.compat

    with purejit.compat.dropin():
        import jax.scipy.cluster.vq as dropped

        assert dropped.__name__ == "jax.scipy.cluster.vq"
        assert dropped.vq is purejit.scipy.cluster.vq.vq
