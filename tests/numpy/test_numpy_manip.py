"""Array manipulation against jax.numpy: split, pad, flip, rot90, tile, repeat, roll,
atleast_*d, stacking, diagonals; eager and under jit."""

import numpy as np
import pytest
from jnp_compare import check_cases

import purejit
import purejit.numpy as jnp

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_split():
    cases = {
        "split sections": lambda m, x: m.split(x, 2, axis=2),
        "split indices": lambda m, x: m.split(x, [1, 3], axis=-1),
        "array_split uneven": lambda m, x: m.array_split(x, 3, axis=2),
        "array_split more than size": lambda m, x: m.array_split(x, 3, axis=0),
        "hsplit": lambda m, x: m.hsplit(x, 3),
        "vsplit": lambda m, x: m.vsplit(x, [1]),
    }
    check_cases(cases, X, eager=["array_split uneven"])


PAD_MODES = ["constant", "edge", "reflect", "symmetric", "wrap"]


def test_pad():
    cases = {}
    for mode in PAD_MODES:
        cases[f"{mode} per axis"] = lambda m, x, mode=mode: m.pad(x, ((0, 1), (2, 3), (1, 0)),
                                                                 mode=mode)  # fmt: skip
        cases[f"{mode} wider than the axis"] = lambda m, x, mode=mode: m.pad(x[0, 0], 5, mode)
    cases["constant values per side"] = lambda m, x: m.pad(
        x, 1, constant_values=((1, 2), (3, 4), (5, 6)))  # fmt: skip
    cases["constant int value"] = lambda m, x: m.pad(x.astype(m.int32), (1, 2), constant_values=7)
    cases["reflect size-1 axis"] = lambda m, x: m.pad(x[:, :1], ((0, 0), (2, 2), (0, 0)), "reflect")
    check_cases(cases, X, eager=["reflect per axis", "constant values per side"])


def test_pad_traced_value():
    cases = {"traced constant": lambda m, x, v: m.pad(x, 2, constant_values=v)}
    check_cases(cases, X[0], np.float32(-1), eager=True)


def test_flips_rolls_tiles():
    cases = {
        "flip all": lambda m, x, s: m.flip(x),
        "flip axes": lambda m, x, s: m.flip(x, (0, 2)),
        "fliplr": lambda m, x, s: m.fliplr(x),
        "flipud": lambda m, x, s: m.flipud(x),
        "tile": lambda m, x, s: m.tile(x, (2, 1, 1, 3)),
        "tile int": lambda m, x, s: m.tile(x, 2),
        "repeat axis": lambda m, x, s: m.repeat(x, 2, axis=1),
        "repeat flat": lambda m, x, s: m.repeat(x, 3),
        "repeat counts": lambda m, x, s: m.repeat(x, np.array([1, 0, 2]), axis=1),
        "roll flat": lambda m, x, s: m.roll(x, 2),
        "roll axes": lambda m, x, s: m.roll(x, (-1, 3), axis=(0, 2)),
        "roll big shift": lambda m, x, s: m.roll(x, 11, axis=1),
        "roll traced": lambda m, x, s: m.roll(x, s, axis=2),
    }
    for k in range(-1, 4):
        cases[f"rot90 k={k}"] = lambda m, x, s, k=k: m.rot90(x, k, axes=(1, 2))
    check_cases(cases, X, np.int32(-3), eager=["rot90 k=3", "roll traced", "repeat counts"])


def test_rank_and_stacking():
    cases = {
        "atleast_1d": lambda m, s, v, a: m.atleast_1d(s, v, a),
        "atleast_2d": lambda m, s, v, a: m.atleast_2d(s, v, a),
        "atleast_3d": lambda m, s, v, a: m.atleast_3d(s, v, a),
        "atleast one arg": lambda m, s, v, a: m.atleast_2d(v),
        "hstack": lambda m, s, v, a: m.hstack([a, a]),
        "hstack 1-D": lambda m, s, v, a: m.hstack([v, v[:2]]),
        "vstack": lambda m, s, v, a: m.vstack([a, v]),
        "dstack": lambda m, s, v, a: m.dstack([a, a]),
        "column_stack": lambda m, s, v, a: m.column_stack([v, v]),
        "broadcast_to": lambda m, s, v, a: m.broadcast_to(v, (5, 3)),
        "broadcast_arrays": lambda m, s, v, a: m.broadcast_arrays(v[:, None], a[:1]),
    }
    args = np.float32(1), np.arange(3, dtype=np.float32), np.ones((2, 3), np.float32)
    check_cases(cases, *args, eager=["atleast_3d", "vstack"])


def test_diagonals():
    cases = {
        "diag of matrix": lambda m, x: m.diag(x[0], 1),
        "diag from vector": lambda m, x: m.diag(x[0, 0], -2),
        "diag from vector k=1": lambda m, x: m.diag(x[0, 0], 1),
        "diagonal axes": lambda m, x: m.diagonal(x, 1, 0, 2),
        "diagonal negative offset": lambda m, x: m.diagonal(x[0], -1),
        "trace": lambda m, x: m.trace(x[0]),
        "trace offset": lambda m, x: m.trace(x, 1, 1, 2),
    }
    check_cases(cases, X, eager=["diagonal axes"])


def test_errors():
    x = jnp.asarray(X)
    with pytest.raises(ValueError, match="equal division"):
        jnp.split(x, 3, axis=2)
    with pytest.raises(NotImplementedError, match="mode 'median'"):
        jnp.pad(x, 1, mode="median")
    with pytest.raises(ValueError, match="non-negative"):
        jnp.pad(x, -1)
    with pytest.raises(NotImplementedError, match="data-dependent"):
        purejit.jit(lambda x, r: jnp.repeat(x, r))(X, np.int32(2))
