"""Errors at least as helpful as JAX's: each names the user's line and says what to do.

Out-of-range static indices (NumPy's IndexError), static/donate options naming parameters
the function lacks (at jit time), "must match" errors naming both sides (shapes, dtypes,
tree paths), `.item()` and a traced value used as a shape inside jit.
"""

import re

import numpy as np
import pytest

import purejit
import purejit.lax as lax
import purejit.numpy as jnp
from purejit import tree_util
from purejit.errors import ConcretizationTypeError, PurejitTypeError

X = np.arange(12, dtype=np.float32).reshape(3, 4)
HERE = "test_errors_messages.py"


def _line(exc) -> int:
    """The line of this file that the message names."""
    m = re.search(rf"\(at {HERE}:(\d+)\)", str(exc.value))
    assert m, str(exc.value)
    return int(m.group(1))


# --- out-of-range indices known while tracing --------------------------------------------


@pytest.mark.parametrize(
    "index, axis, size, shown",
    [(5, 0, 3, "5"), ((slice(None), -7), 1, 4, "-7"), (np.array([0, 4]), 0, 3, "4")],
)
def test_static_index_out_of_range_raises_index_error(index, axis, size, shown):
    for run in (purejit.jit(lambda x: x[index]), lambda x: jnp.asarray(x)[index]):
        with pytest.raises(IndexError) as e:
            run(X)
        msg = str(e.value)
        assert f"index {shown} is out of bounds for axis {axis} with size {size}" in msg
        assert "mode='clip'" in msg and HERE in msg
    # the traced index keeps JAX's clamping, and mode="clip" asks for it explicitly
    np.testing.assert_array_equal(np.asarray(purejit.jit(lambda x, i: x[i])(X, 5)), X[2])
    np.testing.assert_array_equal(np.asarray(jnp.asarray(X).at[5].get(mode="clip")), X[2])


# --- static_argnums / static_argnames / donate_argnums naming no parameter ----------------


def _model(x, y, *, scale=1.0):
    return x * scale + y


@pytest.mark.parametrize(
    "option, value, says",
    [
        ("static_argnums", 2, "takes 2 positional arguments"),
        ("static_argnums", (0, -3), "takes 2 positional arguments"),
        ("static_argnames", "z", "has no parameter 'z'"),
        ("donate_argnums", 5, "takes 2 positional arguments"),
        ("donate_argnames", ("x", "w"), "has no parameter 'w'"),
    ],
)
def test_argnums_naming_missing_parameters_raise_at_jit_time(option, value, says):
    with pytest.raises(ValueError) as e:
        purejit.jit(_model, **{option: value})
    msg = str(e.value)
    assert option in msg and says in msg
    assert "_model(x, y, *, scale=1.0)" in msg  # the signature
    assert _line(e) > 0


def test_argnums_that_exist_are_accepted():
    purejit.jit(_model, static_argnames="scale", donate_argnums=0)
    purejit.jit(lambda *args: args[0], static_argnums=3)  # *args takes any position
    purejit.jit(lambda x, **kw: x, static_argnames="anything")


# --- every "must match" names both sides --------------------------------------------------


def _mismatch(fn, *args):
    with pytest.raises(PurejitTypeError) as e:
        purejit.jit(fn)(*args)
    assert _line(e) > 0
    return str(e.value)


def test_cond_and_switch_branches_name_both_sides():
    msg = _mismatch(lambda p, x: lax.cond(p, lambda x: x, lambda x: x.astype(jnp.int32), x), 1, X)
    assert "f32[3,4]" in msg and "s32[3,4]" in msg and "true_fun" in msg and "false_fun" in msg
    msg = _mismatch(
        lambda p, x: lax.cond(p, lambda x: {"a": x, "b": x}, lambda x: {"a": x, "c": x}, x), 1, X
    )
    assert "['a', 'b']" in msg and "['a', 'c']" in msg  # the tree paths of both sides
    msg = _mismatch(lambda i, x: lax.switch(i, [lambda x: x, lambda x: x[0]], x), 1, X)
    assert "branch 0" in msg and "branch 1" in msg and "f32[3,4]" in msg and "f32[4]" in msg


def test_loop_carries_name_both_sides():
    msg = _mismatch(lambda x: lax.scan(lambda c, r: (c.sum(), r), x[0], x), X)
    assert "carry input" in msg and "f32[4]" in msg and "f32[]" in msg
    msg = _mismatch(lambda x: lax.while_loop(lambda c: c.sum() < 9, lambda c: c[0], x), X)
    assert "body_fun" in msg and "f32[3,4]" in msg and "f32[4]" in msg
    msg = _mismatch(lambda x: lax.fori_loop(0, 3, lambda i, c: (c, c), x), X)
    assert msg.startswith("fori_loop") and "body_fun" in msg and "scan.py" not in msg
    assert "carry input has a leaf, carry output has a tuple of 2 elements" in msg
    msg = _mismatch(lambda x: lax.fori_loop(0, 3, lambda i, c: {"w": c["w"][0]}, {"w": x}), X)
    assert "['w']" in msg and "f32[3,4]" in msg and "f32[4]" in msg


def test_tree_map_names_where_the_trees_differ():
    with pytest.raises(ValueError) as e:
        tree_util.tree_map(lambda a, b: a, {"w": (1, (2, 3)), "b": 3}, {"w": (1, [2, 3]), "b": 3})
    msg = str(e.value)
    assert "tree_map: argument 2" in msg
    assert "at ['w'][1]: expected a tuple of 2 elements, got a list of 2 elements" in msg
    assert _line(e) > 0


# --- concrete values asked for inside jit -------------------------------------------------


def test_item_inside_jit_says_what_to_do():
    with pytest.raises(ConcretizationTypeError) as e:
        purejit.jit(lambda x: x.sum().item())(X)
    assert ".item()" in str(e.value) and "call .item() on the result" in str(e.value)
    assert _line(e) > 0
    assert jnp.asarray(X).sum().item() == 66.0  # eagerly it is a Python number


def test_traced_value_as_a_shape_says_static_argnums():
    with pytest.raises(ConcretizationTypeError) as e:
        purejit.jit(lambda x, n: jnp.zeros((n, 2)) + x.sum())(X, 3)
    assert "used as a shape" in str(e.value) and "static_argnums" in str(e.value)
    assert _line(e) > 0
    f = purejit.jit(lambda x, n: jnp.zeros((n, 2)) + x.sum(), static_argnums=1)
    assert f(X, 3).shape == (3, 2)
