"""purejit.checkify (JAX's jax.experimental.checkify, user checks): eager checks raise,
checkified functions return an Error that leaves jit, messages format the checked values,
the first failed check wins, and what is not implemented says so."""

from __future__ import annotations

import jax
import jax.experimental.checkify as jcheckify
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import checkify


def _f(x):
    checkify.check(x > 0, "x must be positive, got {}", x)
    checkify.check(x < 10, "x must be below {limit}, got {x}", limit=10, x=x)
    return jnp.log(x)


def test_eager_check_raises_and_passes():
    checkify.check(jnp.all(np.array([1, 2]) > 0), "fine")
    with pytest.raises(checkify.JaxRuntimeError, match=r"bad: 3 \(`check` failed\)"):
        checkify.check(jnp.asarray(3.0) < 0, "bad: {}", 3)
    with pytest.raises(TypeError, match="scalar pred"):  # as JAX
        checkify.check(np.array([True, False]), "not a scalar")
    assert issubclass(checkify.JaxRuntimeError, ValueError)


@pytest.mark.parametrize("wrap", ["eager", "jit_outside", "jit_inside"])
def test_checkified_function_reports_the_first_failure(wrap):
    if wrap == "eager":
        g = checkify.checkify(_f)
    elif wrap == "jit_outside":
        g = purejit.jit(checkify.checkify(_f))
    else:
        g = checkify.checkify(purejit.jit(_f))
    err, y = g(np.float32(2.0))
    assert err.get() is None and np.isclose(y, np.log(2.0))
    err.throw()  # nothing failed
    err, _ = g(np.float32(-1.0))
    assert err.get().startswith("x must be positive, got -1.0")
    with pytest.raises(checkify.JaxRuntimeError, match="positive"):
        err.throw()
    err, _ = g(np.float32(20.0))
    assert err.get().startswith("x must be below 10, got 20.0")
    with pytest.raises(checkify.JaxRuntimeError, match="below 10"):
        checkify.check_error(err)


def test_messages_match_jax():
    def jf(x):
        jcheckify.check(x > 0, "x must be positive, got {}", x)
        return jax.numpy.log(x)

    jerr, _ = jax.jit(jcheckify.checkify(jf))(np.float32(-1.0))
    err, _ = purejit.jit(checkify.checkify(_f))(np.float32(-1.0))
    assert jerr.get().split(" (check failed")[0] == err.get().split(" (check failed")[0]


def test_unfunctionalised_and_unsupported():
    with pytest.raises(ValueError, match="not functionalized"):
        purejit.jit(lambda x: checkify.check(x > 0, "no"))(1.0)
    with pytest.raises(NotImplementedError, match="automatic checks"):
        checkify.checkify(_f, errors=checkify.all_checks)

    def nested(x):
        return purejit.vmap(lambda v: checkify.check(v > 0, "v") or v)(x)

    with pytest.raises(NotImplementedError, match="nested"):
        purejit.jit(checkify.checkify(nested))(np.ones(3, np.float32))


def test_message_of_typed_keys():
    key = purejit.random.key(0)

    def f(k):
        checkify.check(jnp.asarray(False), "keys {k} differ", k=k)
        return k

    err, _ = purejit.jit(checkify.checkify(f))(key)
    assert "key<fry>" in err.get()


def test_debug_check_only_inside_checkify_and_init_error():
    def g(x):
        checkify.debug_check(x > 0, "x must be positive, got {}", x)
        return x * 2

    def jg(x):
        jcheckify.debug_check(x > 0, "x must be positive, got {}", x)
        return x * 2

    # outside checkify a failing debug_check does nothing (JAX's too)
    x, jx = np.float32(-1.0), jax.numpy.float32(-1.0)
    assert float(g(x)) == -2.0 and float(jg(jx)) == -2.0
    err, y = purejit.jit(checkify.checkify(g))(x)
    jerr, _ = jax.jit(jcheckify.checkify(jg))(jx)
    assert err.get().split(" (")[0] == jerr.get().split(" (")[0] == "x must be positive, got -1.0"
    assert float(y) == -2.0
    with pytest.raises(TypeError, match="debug_check takes a scalar pred"):
        checkify.debug_check(np.array([True, False]), "no")
    # the Error of a run where nothing failed, as JAX's
    assert checkify.init_error.get() is None and jcheckify.init_error.get() is None
    checkify.init_error.throw()
    checkify.check_error(checkify.init_error)
