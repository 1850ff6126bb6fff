"""The interpreter's sort: a comparator that is NumPy's own ascending order (integers, or
floats with NaNs last, as purejit.numpy writes it) runs as one stable argsort; it must give
the permutation the general path (a Python call per comparison) gives, bit for bit, and
the compiled program's result."""

import ml_dtypes
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.ir.ops import sort as sort_op

RNG = np.random.default_rng(0)


def _values(dt):
    if dt is bool:
        return RNG.integers(0, 2, 60).astype(bool).reshape(6, 10)
    if np.dtype(dt).kind in "iu":
        return RNG.integers(0, 5, 60).astype(dt).reshape(6, 10)
    v = RNG.integers(-3, 3, 60).astype(np.float32)
    v[RNG.random(60) < 0.2] = np.nan
    v[RNG.random(60) < 0.1] = -0.0
    return v.astype(dt).reshape(6, 10)


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize(
    "dt", [np.uint32, np.int8, bool, np.float32, np.float16, ml_dtypes.bfloat16]
)
@pytest.mark.parametrize(
    "f",
    [
        lambda x: jnp.sort(x, axis=-1),
        lambda x: jnp.sort(x, axis=0),
        lambda x: jnp.argsort(x, axis=0),
        lambda x: jnp.argsort(x, axis=-1, stable=True),
    ],
    ids=["sort_last", "sort_first", "argsort_first", "argsort_last"],
)
def test_fast_order_equals_the_general_path(monkeypatch, dt, f):
    x = _values(dt)
    fn = purejit.jit(f).lower(x).traced
    (op,) = [o for o in fn.walk() if o.name == "sort"]
    assert sort_op._ascending(op.regions[0])
    fast = purejit.ir.interpret(fn, x)
    monkeypatch.setattr(sort_op, "_ascending", lambda cmp: False)
    slow = purejit.ir.interpret(fn, x)
    for a, b in zip(fast, slow):
        assert np.array_equal(_bits(a), _bits(b))
    assert np.array_equal(_bits(fast[0]), _bits(np.asarray(purejit.jit(f)(x))))


def _cmp(direction: str, lhs: str = "%0", rhs: str = "%1"):
    return purejit.ir.parse(
        "func @cmp(%0: s32[], %1: s32[]) -> (pred[]) {\n"
        f'  %2 = compare({lhs}, {rhs}) {{comparison_direction="{direction}"}} : (pred[])\n'
        "  return %2\n}"
    )


def test_other_comparators_take_the_general_path():
    assert sort_op._ascending(_cmp("LT"))
    assert not sort_op._ascending(_cmp("GT"))  # descending
    assert not sort_op._ascending(_cmp("LT", "%1", "%0"))  # operands swapped
    assert not sort_op._ascending(_cmp("LE"))  # not a strict order
