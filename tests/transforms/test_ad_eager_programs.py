"""Public JAX programs that differentiate Python control flow outside `jit`, run with the
imports swapped to purejit and checked against JAX in the same process.

1. JAX's documentation, "Control flow and logical operators with JIT", section "Python
   control flow + autodiff": `grad` of a function with a Python `if` on its argument.
2. JAX's tutorial "Custom derivative rules for JAX-transformable Python functions": a
   `custom_jvp` function and its rule both branch in Python on the value ("Python control
   flow works with custom_jvp").
3. The same tutorial's `custom_vjp` version: the function, `fwd` and `bwd` branch in Python.

Plus the README's `abs_val` example ("Automatic differentiation with grad").
"""

import jax
import numpy as np
import pytest

import purejit


def control_flow_doc(lib):
    def f(x):
        if x < 3:
            return 3.0 * x**2
        else:
            return -4 * x

    return [lib.grad(f)(2.0), lib.grad(f)(4.0)]


def custom_jvp_tutorial(lib):
    jnp = lib.numpy

    @lib.custom_jvp
    def f(x):
        if x > 0:
            return jnp.sin(x)
        else:
            return jnp.cos(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,) = primals
        (x_dot,) = tangents
        ans = f(x)
        if x > 0:
            return ans, 2 * x_dot
        else:
            return ans, 3 * x_dot

    return [f(1.0), lib.grad(f)(1.0), lib.grad(f)(-1.0)]


def custom_vjp_tutorial(lib):
    jnp = lib.numpy

    @lib.custom_vjp
    def f(x):
        if x > 0:
            return jnp.sin(x)
        else:
            return jnp.cos(x)

    def f_fwd(x):
        return f(x), x

    def f_bwd(x, g):
        if x > 0:
            return (2 * g,)
        else:
            return (3 * g,)

    f.defvjp(f_fwd, f_bwd)
    return [f(1.0), lib.grad(f)(1.0), lib.grad(f)(-1.0)]


def readme_abs_val(lib):
    def abs_val(x):
        if x > 0:
            return x
        else:
            return -x

    abs_val_grad = lib.grad(abs_val)
    return [abs_val_grad(1.0), abs_val_grad(-1.0)]


@pytest.mark.parametrize(
    "program", [control_flow_doc, custom_jvp_tutorial, custom_vjp_tutorial, readme_abs_val]
)
def test_program_matches_jax(program):
    got, want = program(purejit), program(jax)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_documented_values():
    assert [float(v) for v in control_flow_doc(purejit)] == [12.0, -4.0]
    assert [float(v) for v in custom_jvp_tutorial(purejit)[1:]] == [2.0, 3.0]
    assert [float(v) for v in custom_vjp_tutorial(purejit)[1:]] == [2.0, 3.0]
    assert [float(v) for v in readme_abs_val(purejit)] == [1.0, -1.0]
