"""Indexing (`x[idx]`) and functional updates (`x.at[idx].set/add/...`) against jax.numpy.

Each case runs eagerly and under purejit.jit and must match JAX's values, shapes, dtypes and
weak types, including JAX's bounds rules (traced reads clamp, writes drop out-of-range updates).
"""

import warnings

import jax

import numpy as np
import pytest
from jnp_compare import check, check_cases

import purejit
import purejit.numpy as jnp

X = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
RNG = np.random.default_rng(0)

READS = {
    "int": (1,),
    "negative int": (-1,),
    "slice": (slice(1, 3),),
    "reversed": (slice(None, None, -1),),
    "steps": (slice(None, None, 2), None, -1),
    "negative steps": (slice(2, 0, -2), slice(None), slice(-1, -6, -3)),
    "ellipsis": (Ellipsis, 2),
    "newaxes": (None, Ellipsis, None),
    "empty slice": (slice(2, 1),),
    "int array": (np.array([0, 2, -1]),),
    "broadcast arrays": (slice(None), np.array([[0], [3]]), np.array([1, 2, 4])),
    "int and array split by slice": (0, slice(None), np.array([0, 1])),
    "arrays split by newaxis": (slice(None), None, np.array([0, 1]), None, np.array([1, 2])),
    "arrays with newaxis after": (np.array([0]), slice(None), None, np.array([1])),
    "list index": ([0, 2], Ellipsis, slice(1, None, 2)),
    "static bool mask": (np.array([True, False, True]),),
    "2-D bool mask": (np.arange(12).reshape(3, 4) % 3 == 0,),
    "True": (True,),
    "False": (False,),
}


def test_getitem_static():
    cases = {name: (lambda m, x, idx=idx: x[idx]) for name, idx in READS.items()}
    eager = ["negative steps", "arrays split by newaxis", "2-D bool mask", "False"]
    check_cases(cases, X, eager=eager)


def test_getitem_static_out_of_range_clamps_with_mode_clip():
    """Static out-of-range reads raise (tests/api/test_errors_messages.py); mode="clip"
    gives JAX's clamping."""
    cases = {
        "int": lambda m, x: x.at[7].get(mode="clip"),
        "array": lambda m, x: x.at[np.array([0, 7, -9])].get(mode="clip"),
    }
    check_cases(cases, X, eager=["array"])


def test_getitem_traced_scalar():
    """A traced scalar index reads with dynamic_slice: negative wraps, out of range clamps."""
    for i in [1, -1, 7, -9]:
        cases = {"x[i]": lambda m, x, i: x[i], "x[:, i, 1:]": lambda m, x, i: x[:, i, 1:]}
        check_cases(cases, X, np.int32(i), eager=["x[:, i, 1:]"] if i == -1 else ())


def test_traced_scalar_uses_dynamic_slice():
    ir = purejit.jit(lambda x, i: x[i]).lower(X, np.int32(0)).ir()
    assert "dynamic_slice" in ir and "gather" not in ir


def test_getitem_traced_arrays():
    idx = np.array([[0, 2], [-1, 5]], np.int32)
    cases = {
        "x[i]": lambda m, x, i, j, k: x[i],
        "x[:, i, j]": lambda m, x, i, j, k: x[:, i, j],
        "x[1:, k] (int8)": lambda m, x, i, j, k: x[1:, k],
        "x[j, ..., i]": lambda m, x, i, j, k: x[j, ..., i],
    }
    check_cases(cases, X, idx, np.int32(-2), np.array([3, -1], np.int8), eager=["x[:, i, j]"])


def test_static_slicing_emits_no_gather():
    ir = purejit.jit(lambda x: x[1:, ::-2, None, 3]).lower(X).ir()
    assert "gather" not in ir and "slice" in ir and "reverse" in ir


def test_weak_type_is_kept():
    check(lambda m: m.full((3, 2), 2.0)[m.array([0, 2])], jit=False)
    check(lambda m: m.full((3, 2), 2.0)[1, ::-1], jit=False)


UPDATE_INDICES = {
    "int": (1,),
    "negative ints": (-1, 2),
    "slice": (slice(1, 3),),
    "strided slice and int": (slice(None, None, 2), 1),
    "negative step": (Ellipsis, slice(4, 0, -2)),
    "array": (np.array([0, 2, -1]),),
    "out of range array (dropped)": (np.array([0, 5, -7]),),
    "broadcast arrays": (slice(None), np.array([[0], [3]]), np.array([1, 2, 4])),
    "int and array split": (0, slice(None), np.array([0, 1])),
    "newaxis": (None, 1, slice(None)),
    "out of range int (dropped)": (7,),
    "bool mask": (np.array([True, False, True]),),
}


def test_at_update_scalar():
    cases = {
        f"{kind} {name}": (lambda m, x, v, idx=idx, kind=kind: getattr(x.at[idx], kind)(v))
        for kind in ["set", "add", "multiply", "min", "max", "subtract"]
        for name, idx in UPDATE_INDICES.items()
    }
    eager = ["add strided slice and int", "set out of range array (dropped)", "max newaxis"]
    check_cases(cases, X, np.float32(3.5), eager=eager)


def test_at_set_array():
    cases = {}
    for name, idx in [("strided", (slice(1, None, 2), slice(None), slice(0, 4, 3))),
                      ("split arrays", (slice(None), None, np.array([0, 1]), None,
                                        np.array([1, 2])))]:  # fmt: skip
        v = RNG.normal(size=X[idx].shape).astype(np.float32)
        cases[f"set {name}"] = lambda m, x, idx=idx, v=v: x.at[idx].set(v)
        cases[f"add {name}"] = lambda m, x, idx=idx, v=v: x.at[idx].add(v)
    check_cases(cases, X, eager=["set split arrays"])


def test_at_duplicates_accumulate():
    cases = {
        "add": lambda m, x, i, j: x.at[i].add(1.0),
        "multiply": lambda m, x, i, j: x.at[:, j].multiply(2.0),
    }
    check_cases(cases, X, np.array([0, 0, 2, 2, 2], np.int32), np.array([1, 1, -3], np.int32),
                eager=True)  # fmt: skip


def test_at_traced_indices():
    """Traced scalars and arrays: negative wraps, out-of-range updates are dropped."""
    cases = {
        "scalar": lambda m, x, i, j, k: x.at[i, 1].set(-1.0),
        "scalar out of range": lambda m, x, i, j, k: x.at[j, 1].set(-1.0),
        "array": lambda m, x, i, j, k: x.at[:, k].set(-1.0),
    }
    check_cases(cases, X, np.int32(-1), np.int32(3), np.array([0, 9, -2], np.int32),
                eager=["scalar out of range"])  # fmt: skip


def test_at_modes():
    cases = {
        "set clip": lambda m, x, i: x.at[:, i].set(-1.0, mode="clip"),
        "get fill": lambda m, x, i: x.at[:, i].get(mode="fill", fill_value=-5.0),
        "get clip": lambda m, x, i: x.at[1, i].get(mode="clip"),
        "get fill int": lambda m, x, i: x.astype(m.int32).at[i].get(mode="fill"),
    }
    check_cases(cases, X, np.array([0, 9, -2, -5], np.int32), eager=["get fill"])


def test_at_dtypes():
    """The update takes x's dtype; integer arrays and divide work like JAX."""
    cases = {
        "int add": lambda m, x: x.astype(m.int32).at[1].add(5),
        "int set float": lambda m, x: x.astype(m.int32).at[1, 2].set(2.7),
        "divide": lambda m, x: x.at[1:, 0].divide(4.0),
        "uint8 max": lambda m, x: x.astype(m.uint8).at[0].max(200),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # JAX warns about the float -> int set
        check_cases(cases, X, eager=["int set float"])


def test_at_update_box_uses_dynamic_update_slice():
    ir = purejit.jit(lambda x: x.at[1, 1:3].set(0.0)).lower(X).ir()
    assert "dynamic_update_slice" in ir and "scatter" not in ir
    ir = purejit.jit(lambda x, i: x.at[i].add(1.0)).lower(X, np.array([0], np.int32)).ir()
    assert "scatter" in ir


def test_take_and_take_along_axis():
    ind = RNG.integers(0, 5, (3, 4, 2)).astype(np.int32)
    cases = {
        "take axis": lambda m, x, i: m.take(x, i[0, 0], axis=1),
        "take flat": lambda m, x, i: m.take(x, i * 11),
        "along 2": lambda m, x, i: m.take_along_axis(x, i, axis=2),
        "along 0": lambda m, x, i: m.take_along_axis(x, i[:1, :, :1] % 3, axis=0),
        "along out of range": lambda m, x, i: m.take_along_axis(x, i[:, :3, :1] * 2 - 3, axis=1),
        "take clip": lambda m, x, i: m.take(x, i[0, 0] - 2, axis=1, mode="clip"),
    }
    check_cases(cases, X, ind, eager=["along 2"])


def test_edge_cases():
    cases = {
        "0-d ()": lambda m, s, e, x: s[()],
        "0-d ..., None": lambda m, s, e, x: s[..., None],
        "empty rows": lambda m, s, e, x: e[:, 1],
        "empty index array": lambda m, s, e, x: x[np.array([], np.int32)],
        "set with empty index array": lambda m, s, e, x: x.at[np.array([], np.int32)].set(1.0),
        "set everything": lambda m, s, e, x: x.at[:].set(5.0),
        "add everything": lambda m, s, e, x: x.at[...].add(x),
        "set empty slice": lambda m, s, e, x: x.at[2:1].set(5.0),
        "set reversed rows": lambda m, s, e, x: x.at[::-1].set(m.arange(4.0)[:, None]),
        "set into weak": lambda m, s, e, x: m.full((3,), 1.0).at[1].set(s),
        "set bool": lambda m, s, e, x: (x > 3).at[1].set(True),
        "apply box": lambda m, s, e, x: x.at[1:3].apply(m.sin),
        "apply repeated indices": lambda m, s, e, x: x.at[np.array([0, 0, 2])].apply(
            lambda v: v * 2 + 1
        ),
    }
    args = np.array(3, np.float32), np.zeros((0, 3), np.float32), X[0, :4, :3]
    check_cases(cases, *args, eager=["set reversed rows"])


def test_iteration_and_scalars():
    x = jnp.arange(6).reshape(2, 3)
    rows = list(x)
    assert [np.asarray(r).tolist() for r in rows] == [[0, 1, 2], [3, 4, 5]]
    assert int(x[1, -1]) == 5


def test_errors():
    x = jnp.asarray(X)
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(TypeError, match="integer or boolean"):
        x[np.array([0.5])]
    with pytest.raises(IndexError, match="could not be broadcast"):
        x[np.array([0, 1]), np.array([0, 1, 2])]
    with pytest.raises(purejit.errors.NonConcreteBooleanIndexError, match="data-dependent"):
        purejit.jit(lambda x: x[x > 3])(X)
    with pytest.raises(IndexError, match="static integer"):
        purejit.jit(lambda x, i: x[i:])(X, np.int32(1))
    with pytest.raises(ValueError, match="cannot broadcast"):
        x.at[0].set(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]


def test_error_names_user_line():
    with pytest.raises(IndexError, match=r"test_numpy_indexing\.py:\d+"):
        jnp.asarray(X)[np.array([0, 1]), np.array([0, 1, 2])]


def test_take_clip_clamps_negative_indices_to_zero():
    # NumPy's and JAX's take(mode="clip") never count a negative index from the end: -2 is 0
    # (purejit counted it from the end first; found by the CPU fuzzer, seed 5004).
    # take_along_axis does count from the end, then clips, in JAX as here.
    a = np.array([2147483647, 5, -4], np.int32)
    i = np.array([-18, 20, -2, 1], np.int32)
    want = jax.numpy.take(a, i, mode="clip")
    np.testing.assert_array_equal(jnp.take(a, i, mode="clip"), want)
    np.testing.assert_array_equal(purejit.jit(lambda a, i: jnp.take(a, i, mode="clip"))(a, i), want)
    np.testing.assert_array_equal(np.take(a, i, mode="clip"), want)
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(
        jnp.take(x, i, axis=1, mode="clip"), jax.numpy.take(x, i, axis=1, mode="clip")
    )
    np.testing.assert_array_equal(
        jnp.take_along_axis(a, i[:3], 0, mode="clip"),
        jax.numpy.take_along_axis(a, i[:3], 0, mode="clip"),
    )
