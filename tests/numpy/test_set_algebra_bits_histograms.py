"""intersect1d / setdiff1d / setxor1d / union1d (with size= and fill_value= under jit),
packbits / unpackbits, cross (axisa/axisb/axisc, 2-vectors) and histogram2d / histogramdd,
against jax.numpy."""

from __future__ import annotations

import jax.numpy as jjnp
import numpy as np
import pytest
from jnp_compare import check_cases

import purejit
import purejit.numpy as jnp
from purejit import errors
from purejit.backend import versions

RNG = np.random.default_rng(3)
A = RNG.integers(0, 8, 11).astype(np.int32)
B = RNG.integers(3, 12, (2, 4)).astype(np.int32)
F1 = np.array([3.0, 1.0, 2.0, 2.0, -1.0], np.float32)
F2 = np.array([2.0, 5.0, -1.0], np.float32)
SETS = ["intersect1d", "setdiff1d", "setxor1d", "union1d"]


def test_set_operations_with_size_match_jax():
    cases = {}
    for name in SETS:
        for size in (2, 4, 15):
            for fill in (None, -7):
                key = f"{name} size={size} fill={fill}"
                cases[key] = lambda m, a, b, f1, f2, name=name, s=size, fv=fill: [
                    getattr(m, name)(a, b, size=s, fill_value=fv),
                    getattr(m, name)(f1, f2, size=s, fill_value=fv),
                ]
    cases["intersect1d indices"] = lambda m, a, b, f1, f2: m.intersect1d(
        a, b, return_indices=True, size=6
    )
    check_cases(cases, A, B, F1, F2, weak=False)


def test_set_operations_eager_read_the_length():
    for name in SETS:
        for a, b in ((A, B), (np.array([1, 2]), np.array([3.5, 1.0]))):
            ref = getattr(jjnp, name)(a, b)
            got = getattr(jnp, name)(a, b)
            assert got.dtype == ref.dtype, name
            np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    ref = jjnp.intersect1d(A, B, return_indices=True)
    got = jnp.intersect1d(A, B, return_indices=True)
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
    with pytest.raises(errors.ConcretizationTypeError, match="size="):
        purejit.jit(jnp.setdiff1d)(A, B)


def test_packbits_unpackbits_match_jax():
    bits = RNG.integers(0, 2, (3, 13)).astype(np.bool_)
    ints = RNG.integers(-2, 3, (4, 9)).astype(np.int32)
    u8 = RNG.integers(0, 256, (3, 5)).astype(np.uint8)
    cases = {
        "pack": lambda m, b, i, u: m.packbits(b),
        "pack axis1 little": lambda m, b, i, u: m.packbits(b, axis=1, bitorder="little"),
        "pack ints axis0": lambda m, b, i, u: m.packbits(i, axis=0),
        "unpack": lambda m, b, i, u: m.unpackbits(u),
        "unpack axis0 little": lambda m, b, i, u: m.unpackbits(u, axis=0, bitorder="little"),
        "unpack count short": lambda m, b, i, u: m.unpackbits(u, axis=1, count=11),
        "unpack count long": lambda m, b, i, u: m.unpackbits(u, axis=1, count=50),
        "round trip": lambda m, b, i, u: m.unpackbits(m.packbits(b, axis=1), axis=1, count=13),
    }
    check_cases(cases, bits, ints, u8, eager=["pack", "unpack count short"])
    with pytest.raises(TypeError, match="unsigned byte"):
        jnp.unpackbits(np.ones(3, np.int32))
    with pytest.raises(TypeError, match="integer or boolean"):
        jnp.packbits(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="'order' must be"):
        jnp.packbits(bits, bitorder="middle")


def test_cross_matches_jax():
    a3 = RNG.normal(size=(4, 3)).astype(np.float32)
    b3 = RNG.normal(size=(3, 4)).astype(np.float32)
    a2 = RNG.normal(size=(4, 2)).astype(np.float32)
    cases = {
        "3x3": lambda m, a3, b3, a2: m.cross(a3, a3[::-1]),
        "axisb": lambda m, a3, b3, a2: m.cross(a3, b3, axisb=0),
        "axisc": lambda m, a3, b3, a2: m.cross(a3, b3, axisb=0, axisc=0),
        "axis": lambda m, a3, b3, a2: m.cross(b3, b3[::-1], axis=0),
        "int": lambda m, a3, b3, a2: m.cross(m.arange(3), m.arange(3, 6)),
    }
    two = {  # jax >= 0.12 takes 3-vectors only, as NumPy 2
        "2x2": lambda m, a3, b3, a2: m.cross(a2, a2[::-1]),
        "2x3": lambda m, a3, b3, a2: m.cross(a2, a3),
        "3x2 broadcast": lambda m, a3, b3, a2: m.cross(a3[:1], a2),
    }
    if versions.jax_release(2) < (0, 12):
        cases.update(two)
    else:
        for f in two.values():
            with pytest.raises(ValueError, match="must be 3"):
                f(jnp, a3, b3, a2)
    eager = [k for k in ("2x3", "axisc") if k in cases]
    check_cases(cases, a3, b3, a2, rtol=1e-5, atol=1e-6, eager=eager)
    with pytest.raises(ValueError, match="2 or 3|must be 3"):
        jnp.cross(np.ones(4), np.ones(4))


def test_histograms_match_jax():
    x = RNG.normal(size=50).astype(np.float32)
    y = RNG.normal(size=50).astype(np.float32)
    w = RNG.uniform(size=50).astype(np.float32)
    s3 = RNG.uniform(size=(40, 3)).astype(np.float32)
    edges = np.array([-2.0, -0.5, 0.0, 1.0, 3.0], np.float32)
    cases = {
        "2d": lambda m, x, y, w, s: m.histogram2d(x, y),
        "2d bins pair weights": lambda m, x, y, w, s: m.histogram2d(x, y, bins=(3, 5), weights=w),
        "2d shared edges density": lambda m, x, y, w, s: m.histogram2d(
            x, y, bins=edges, density=True
        ),
        "2d range": lambda m, x, y, w, s: m.histogram2d(x, y, bins=4, range=[(-1, 1), (0, 2)]),
        "dd": lambda m, x, y, w, s: m.histogramdd(s, bins=(2, 3, 4)),
        "dd density": lambda m, x, y, w, s: m.histogramdd(s, bins=3, density=True),
        "dd mixed": lambda m, x, y, w, s: m.histogramdd(
            s, bins=[2, np.array([0.0, 0.5, 1.0]), 3], range=[None, None, (0.2, 0.8)]
        ),
    }
    check_cases(cases, x, y, w, s3, rtol=1e-5, atol=1e-6, eager=["2d"])
    with pytest.raises(ValueError, match="one weight for each sample"):
        jnp.histogramdd(s3, weights=w)
    with pytest.raises(ValueError, match="a bin for each dimension"):
        jnp.histogramdd(s3, bins=[2, 3])


def test_vmap_of_sized_set_operations_and_histograms():
    import jax

    a = RNG.integers(0, 6, (3, 8)).astype(np.int32)
    b = RNG.integers(2, 9, (3, 5)).astype(np.int32)
    f = RNG.normal(size=(3, 10)).astype(np.float32)

    def run(m, vmap):
        return [
            vmap(lambda x, y: m.intersect1d(x, y, size=4))(a, b),
            vmap(lambda x, y: m.setxor1d(x, y, size=6, fill_value=-1))(a, b),
            vmap(lambda x, y: m.histogram2d(x, y, bins=3, range=[(-2, 2), (-2, 2)])[0])(f, f[::-1]),
        ]

    for g, r in zip(run(jnp, purejit.vmap), run(jjnp, jax.vmap)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r))
        assert g.dtype == r.dtype
