"""User-facing errors: each names what went wrong, the op / types / argument involved, the
user's source line, and what to do about it."""

import os

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.tracing import bind1

HERE = os.path.basename(__file__)


def _line_of(fn, offset: int) -> str:
    """`test_errors.py:N` for the line `offset` lines below `fn`'s `def`."""
    return f"{HERE}:{fn.__code__.co_firstlineno + offset}"


def f32(*shape):
    return np.ones(shape, np.float32)


# ---- concretization: Python needs a value that tracing does not have -----------------------


def test_if_on_a_tracer():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(purejit.ConcretizationTypeError) as e:
        purejit.jit(f)(f32(3))
    msg = str(e.value)
    assert _line_of(f, 1) in msg
    assert "lax.cond" in msg and "static_argnums" in msg
    assert "pred[]" in msg  # the traced value's type


@pytest.mark.parametrize("convert", [int, float, bool])
def test_int_float_bool_of_a_tracer(convert):
    def f(x):
        return x * convert(x)

    with pytest.raises(purejit.ConcretizationTypeError) as e:
        purejit.jit(f)(np.float32(2))
    msg = str(e.value)
    assert _line_of(f, 1) in msg
    assert "static_argnums" in msg and "traced" in msg


def test_concretization_error_is_a_type_error_as_in_jax():
    assert issubclass(purejit.ConcretizationTypeError, TypeError)


def test_static_argnums_is_the_fix_that_the_message_suggests():
    def f(x, n):
        return x * 2 if n > 1 else x

    with pytest.raises(purejit.ConcretizationTypeError):
        purejit.jit(f)(f32(2), 3)
    np.testing.assert_array_equal(purejit.jit(f, static_argnums=1)(f32(2), 3), [2, 2])


def test_numpy_on_a_tracer():
    def f(x):
        return np.sin(x)

    with pytest.raises(purejit.TracerArrayConversionError) as e:
        purejit.jit(f)(f32(2))
    assert _line_of(f, 1) in str(e.value) and "purejit.numpy" in str(e.value)


# ---- shapes and dtypes ---------------------------------------------------------------------


def test_shape_mismatch_names_op_shapes_and_line():
    def f(x, y):
        return x + y

    with pytest.raises(purejit.PurejitTypeError) as e:
        purejit.jit(f)(f32(3), f32(4))
    msg = str(e.value)
    assert msg.startswith("add:")
    assert "[3]" in msg and "[4]" in msg and "broadcast" in msg
    assert _line_of(f, 1) in msg


def test_shape_mismatch_in_eager_mode_names_the_line():
    x, y = jnp.asarray(f32(3)), jnp.asarray(f32(4))
    with pytest.raises(purejit.PurejitTypeError) as e:
        x * y
    line = e.traceback[0].lineno + 1  # pytest's line numbers count from 0
    assert f"{HERE}:{line}" in str(e.value) and "multiply" in str(e.value)


def test_matmul_mismatch_names_both_shapes():
    def f(a, b):
        return a @ b

    with pytest.raises(purejit.PurejitTypeError) as e:
        purejit.jit(f)(f32(3, 4), f32(5, 2))
    msg = str(e.value)
    assert "[3, 4]" in msg and "[5, 2]" in msg and _line_of(f, 1) in msg


def test_dtype_mismatch_at_the_ir_level():
    def f(x, y):
        return bind1("add", x, y)  # IR ops take equal dtypes; purejit.numpy promotes first

    with pytest.raises(purejit.PurejitTypeError) as e:
        purejit.jit(f)(f32(3), np.ones(3, np.int32))
    msg = str(e.value)
    assert msg.startswith("add:")
    assert "f32[3]" in msg and "s32[3]" in msg and _line_of(f, 1) in msg
    with pytest.raises(purejit.PurejitTypeError, match=r"add: .*f32\[3\].*s32\[3\]"):
        bind1("add", f32(3), np.ones(3, np.int32))  # eager reports it the same way


def test_reshape_size_mismatch():
    def f(x):
        return x.reshape(5)

    with pytest.raises(purejit.PurejitTypeError) as e:
        purejit.jit(f)(f32(3, 4))
    assert "reshape" in str(e.value) and "12" in str(e.value) and _line_of(f, 1) in str(e.value)


# ---- arguments and results -----------------------------------------------------------------


def test_unhashable_static_argument():
    f = purejit.jit(lambda x, dims: x.sum(axis=dims), static_argnums=1)
    with pytest.raises(ValueError) as e:
        f(f32(2, 2), [0, 1])
    msg = str(e.value)
    assert "unhashable" in msg and "list" in msg and "tuple" in msg
    np.testing.assert_array_equal(f(f32(2, 2), (0, 1)), 4.0)  # the suggested fix works


def test_non_array_argument_names_its_path():
    def loss(params, x):
        return params["w"] * x

    with pytest.raises(TypeError) as e:
        purejit.jit(loss)({"w": f32(2), "name": "layer1"}, f32(2))
    msg = str(e.value)
    assert "params['name']" in msg and "str" in msg and "static_argnums" in msg


def test_non_array_keyword_argument_and_object():
    f = purejit.jit(lambda x, *, opts: x)
    with pytest.raises(TypeError, match=r"opts\[0\] of type object"):
        f(f32(1), opts=(object(),))


def test_integer_too_large_for_int32():
    with pytest.raises(TypeError, match=r"argument n .*too large"):
        purejit.jit(lambda n: n + 1)(2**40)


@pytest.mark.parametrize(
    "ret, where, kind",
    [
        (lambda x: (x, "done"), "output[1]", "str"),
        (lambda x: {"y": x, "f": print}, "output['f']", "builtin_function_or_method"),
        (lambda x: object(), "output", "object"),
    ],
)
def test_impure_outputs_are_rejected(ret, where, kind):
    with pytest.raises(TypeError) as e:
        purejit.jit(ret)(f32(2))
    msg = str(e.value)
    assert where in msg and kind in msg and "pytree of arrays" in msg


def test_leaked_tracer():
    leaked = []

    def f(x):
        leaked.append(x)  # a side effect: the tracer outlives its trace
        return x

    purejit.jit(f)(f32(2))
    with pytest.raises(purejit.UnexpectedTracerError) as e:
        leaked[0] + 1
    assert "escaped" in str(e.value) and HERE in str(e.value)


def test_non_array_in_varargs_names_the_star_parameter():
    f = purejit.jit(lambda x, *rest: x + sum(rest))
    with pytest.raises(TypeError, match=r"argument rest\[1\] of type str"):
        f(f32(1), f32(1), "oops")
