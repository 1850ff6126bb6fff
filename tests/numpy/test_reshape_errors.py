"""reshape's errors name the op, the input's dtype and shape, the shape asked for and the user's
line, eager and under jit, grad and vmap."""

from __future__ import annotations

import numpy as np
import pytest

import purejit
import purejit.numpy as pnp

X = np.zeros((4, 6), np.float32)


def _wrapped(f, how):
    if how == "eager":
        return f
    if how == "jit":
        return purejit.jit(f)
    if how == "grad":
        return purejit.grad(lambda x: pnp.sum(f(x)))
    return lambda x: purejit.vmap(f)(np.stack([x, x]))


@pytest.mark.parametrize("how", ["eager", "jit", "grad", "vmap"])
@pytest.mark.parametrize(
    ("shape", "words"),
    [
        ((-1, -1), "only specify one unknown dimension"),
        ((5, -1), "do not divide 24"),
        ((5, 5), "cannot reshape"),
    ],  # fmt: skip
)
def test_reshape_error_names_op_shapes_and_line(how, shape, words):
    def f(x):
        return pnp.reshape(x, shape)  # the user's line

    with pytest.raises(ValueError if -1 in shape else TypeError) as info:
        _wrapped(f, how)(X)
    msg = str(info.value)
    assert msg.startswith("reshape:") and words in msg
    assert "float32[4, 6]" in msg and "24 elements" in msg
    assert str(shape).replace(" ", "") in msg.replace(" ", "") or str(list(shape)) in msg
    assert "test_reshape_errors.py:" in msg
