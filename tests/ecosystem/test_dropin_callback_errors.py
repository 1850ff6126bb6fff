"""In drop-in mode a host callback's exception under jit surfaces as JAX raises it, a
`JaxRuntimeError` whose message names the exception (Equinox's filter_jit reads it there to
raise `EquinoxRuntimeError` for a failed `error_if`); outside drop-in mode purejit raises
the exception itself. Equinox's own path: tests/ecosystem/test_equinox_dropin.py."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.compat


def _fails(x):
    raise ValueError("boom 7")


@purejit.jit
def _checked(x):
    return purejit.pure_callback(_fails, purejit.ShapeDtypeStruct(x.shape, x.dtype), x)


def test_callback_exception_is_jax_runtime_error_in_dropin_mode_only():
    x = np.ones(2, np.float32)
    with pytest.raises(ValueError, match="boom 7"):
        _checked(x)
    with purejit.compat.dropin() as jax:
        with pytest.raises(jax.errors.JaxRuntimeError, match="ValueError: boom 7"):
            _checked(x)
        with purejit.compat.dropin():  # nested installs: still JAX's way
            with pytest.raises(jax.errors.JaxRuntimeError, match="boom 7"):
                _checked(x)
        with pytest.raises(jax.errors.JaxRuntimeError, match="boom 7"):
            _checked(x)
    with pytest.raises(ValueError, match="boom 7"):  # the hook removed: itself again
        _checked(x)
