"""The core of purejit.numpy against jax.numpy: elementwise math, comparisons, where/clip,
reductions, products and shape functions, over several dtypes and weakly typed scalars.

Each group of cases is one jitted program per side (compiles dominate the run time); a few
cases of each group also run eagerly, op by op.
"""

import warnings

import ml_dtypes
import numpy as np
import pytest
from jnp_compare import check_cases

import purejit
import purejit.numpy as jnp

RNG = np.random.default_rng(0)
F32 = RNG.normal(size=(3, 4)).astype(np.float32)
F32[0, 0] = 0.0
I32 = RNG.integers(-5, 6, size=(3, 4)).astype(np.int32)
U8 = RNG.integers(0, 255, size=(3, 4)).astype(np.uint8)
BOOL = F32 > 0
BF16 = F32.astype(ml_dtypes.bfloat16)
F16 = F32.astype(np.float16)

# inputs inside each function's domain
POSITIVE = {"log", "log1p", "sqrt", "log2", "log10", "arccosh"}
UNIT = {"arcsin", "arccos", "arctanh"}
UNARY = [
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "exp", "expm1", "log", "log1p", "sqrt", "cbrt", "exp2", "log2",
    "log10", "negative", "positive", "abs", "absolute", "sign", "floor", "ceil", "trunc",
    "round", "around", "rint", "square", "reciprocal", "isfinite", "isnan", "isinf", "signbit",
    "deg2rad", "rad2deg", "real", "imag", "sinc", "conj", "conjugate", "logical_not",
    "invert", "bitwise_not",
]  # fmt: skip
INT_ONLY = {"invert", "bitwise_not"}
FLOAT_ONLY = {"round", "around"} | POSITIVE | UNIT  # JAX rejects bool rounding; domains


def _domain(name, x):
    """Map x into the domain of `name` (works for jax.numpy and purejit.numpy arrays)."""
    if name in POSITIVE:
        return abs(x) + (1.5 if name == "arccosh" else 0.25)
    if name in UNIT:
        return x * 0.3 if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16 else x
    return x


def _unary_cases(kind):
    cases = {}
    for name in UNARY:
        if name in INT_ONLY and kind not in ("int32", "uint8", "bool"):
            continue
        if kind == "bool" and name in FLOAT_ONLY | {"negative", "sign", "reciprocal", "square"}:
            continue
        cases[name] = lambda m, x, name=name: getattr(m, name)(_domain(name, x))
    return cases


@pytest.mark.parametrize(
    "kind, x",
    [("float32", F32), ("int32", I32), ("bool", BOOL), ("weak float", 0.6)],
)  # fmt: skip
def test_unary(kind, x):
    cases = _unary_cases(kind)
    if kind.startswith("weak"):
        cases = {n: f for n, f in cases.items() if n not in POSITIVE | UNIT or kind == "weak float"}
    eager = ["sin", "log1p", "sign", "rint"] if kind in ("float32", "int32") else ()
    check_cases(cases, x, eager=eager)


BINARY = [
    "add", "subtract", "multiply", "maximum", "minimum", "true_divide", "divide",
    "floor_divide", "remainder", "mod", "fmod", "power", "arctan2", "bitwise_and",
    "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "logical_and", "logical_or",
    "logical_xor", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "copysign", "hypot", "logaddexp",
]  # fmt: skip
BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}
PAIRS = {
    "f32, f32": (F32, F32[0] - 0.5),
    "i32, i32 (zeros included)": (I32, I32[::-1] % 4),
    "u8, i32": (U8, np.abs(I32[0])),
    "f32, weak 2": (F32, 2),
    "i32, weak 2.5": (I32, 2.5),
    "u8, weak 3": (U8, 3),
    "bool, bool": (BOOL, ~BOOL),
    "bf16, f16": (BF16, F16),
    "bool, i32": (BOOL, np.abs(I32)),
}


@pytest.mark.parametrize("pair", list(PAIRS))
def test_binary(pair):
    x, y = PAIRS[pair]
    kinds = {np.asarray(v).dtype.kind if isinstance(v, np.ndarray) else type(v).__name__
             for v in (x, y)}  # fmt: skip
    cases = {}
    for name in BINARY:
        inexact = kinds & {"f", "V", "float"} or BF16.dtype in (getattr(x, "dtype", None),)
        if name in BITWISE and (inexact or "b" in kinds and name.endswith("shift")):
            continue
        if pair == "bool, bool" and name == "subtract":  # a TypeError in both
            continue
        cases[name] = lambda m, a, b, name=name: getattr(m, name)(a, b)
    eager = ["floor_divide", "remainder", "power", "hypot"] if pair.startswith("i32, i32") else ()
    check_cases(cases, x, y, eager=eager)


def test_where_clip_astype():
    cases = {
        "where": lambda m, c, x, i: m.where(c, x, 1),
        "where promotes": lambda m, c, x, i: m.where(c, i, 1.5),
        "where weak": lambda m, c, x, i: m.where(c, 1.0, 2.0),
        "clip": lambda m, c, x, i: m.clip(x, -0.5, 0.5),
        "clip int": lambda m, c, x, i: m.clip(i, -2, 2),
        "clip upper only": lambda m, c, x, i: m.clip(x, None, 0),
        "astype int": lambda m, c, x, i: (x * 4).astype(m.int32),
        "astype bool": lambda m, c, x, i: m.astype(x, m.bool_),
        "astype bf16": lambda m, c, x, i: m.astype(i, m.bfloat16),
        "asarray list": lambda m, c, x, i: m.asarray([x[0, 0], 2.0]),
        "result_type": lambda m, c, x, i: m.zeros(2, m.result_type(i, 2.0)),
        "broadcast_arrays": lambda m, c, x, i: m.broadcast_arrays(x, i[:1]),
    }
    check_cases(cases, BOOL, F32, I32, eager=["where", "clip int"])


REDUCTIONS = ["sum", "mean", "var", "std", "max", "min", "prod", "argmax", "argmin", "any",
              "all", "amax", "amin"]  # fmt: skip
AXES = {"all": {}, "axis 0": dict(axis=0), "axis -1 keepdims": dict(axis=-1, keepdims=True),
        "both axes": dict(axis=(0, 1))}  # fmt: skip


@pytest.mark.parametrize(
    "kind, x", [("float32", F32), ("int32", I32), ("bool", BOOL), ("bf16", BF16)]
)
def test_reductions(kind, x):
    cases = {}
    for name in REDUCTIONS:
        for axes, kw in AXES.items():
            if name.startswith("arg") and isinstance(kw.get("axis"), tuple):
                continue
            cases[f"{name} {axes}"] = lambda m, a, name=name, kw=kw: getattr(m, name)(a, **kw)
    eager = ["sum axis 0", "argmax axis -1 keepdims", "var all"] if kind == "float32" else ()
    check_cases(cases, x, eager=eager, rtol=1e-5, atol=1e-5)


def test_reduction_options():
    nan = np.array([[1, np.nan, 3], [np.nan, np.nan, 0], [2, 5, 0]], np.float32)
    cases = {
        "sum dtype": lambda m, x, i, n: m.sum(i, dtype=m.float32),
        "sum initial": lambda m, x, i, n: m.sum(x, initial=2.0),
        "max initial": lambda m, x, i, n: m.max(i, axis=0, initial=3),
        "var ddof": lambda m, x, i, n: m.var(x, axis=0, ddof=1),
        "std int": lambda m, x, i, n: m.std(i),
        "mean of ints": lambda m, x, i, n: m.mean(m.arange(4)),
        "argmax with nan": lambda m, x, i, n: m.argmax(n, axis=1),
        "argmin with nan": lambda m, x, i, n: m.argmin(n, axis=0),
        "max with nan": lambda m, x, i, n: m.max(n, axis=1),
        "argmax keepdims": lambda m, x, i, n: m.argmax(x, keepdims=True),
        "argmin keepdims axis": lambda m, x, i, n: m.argmin(x, axis=0, keepdims=True),
        "sum of weak scalar": lambda m, x, i, n: m.sum(3.0),
        "prod of u8": lambda m, x, i, n: m.prod(m.asarray(i % 3, dtype=m.uint8), axis=0),
        "sum of u8": lambda m, x, i, n: m.sum(m.asarray(i % 7, dtype=m.uint8), axis=-1),
        "max of u8": lambda m, x, i, n: m.max(m.asarray(i % 7, dtype=m.uint8)),
    }
    check_cases(cases, F32, I32, nan, rtol=1e-5, atol=1e-5, eager=["argmax with nan"])


def test_products():
    a3 = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    b3 = RNG.normal(size=(3, 4, 2)).astype(np.float32)
    c = RNG.normal(size=(5, 4, 2)).astype(np.float32)
    d = RNG.normal(size=(4, 2, 5)).astype(np.float32)
    cases = {
        "matmul": lambda m, x, a, b, c, d: m.matmul(x, x.T),
        "matmul batch": lambda m, x, a, b, c, d: m.matmul(a, x.T),
        "matmul vec-mat": lambda m, x, a, b, c, d: m.matmul(x[0], x.T),
        "matmul mat-vec": lambda m, x, a, b, c, d: m.matmul(x, x[0]),
        "matmul vec-vec": lambda m, x, a, b, c, d: m.matmul(x[0], x[0]),
        "matmul broadcast batch": lambda m, x, a, b, c, d: m.matmul(a[:, None], b[:, :, :2]),
        "@": lambda m, x, a, b, c, d: x @ x.T,
        "dot": lambda m, x, a, b, c, d: m.dot(x, x.T),
        "dot n-d": lambda m, x, a, b, c, d: m.dot(a, c),
        "dot scalar": lambda m, x, a, b, c, d: m.dot(x, 2.0),
        "vdot": lambda m, x, a, b, c, d: m.vdot(x, x),
        "inner": lambda m, x, a, b, c, d: m.inner(a, x),
        "outer": lambda m, x, a, b, c, d: m.outer(x[0], x[1]),
        "tensordot 2": lambda m, x, a, b, c, d: m.tensordot(a, b[:, :, :1].reshape(3, 4, 1)),
        "tensordot 1": lambda m, x, a, b, c, d: m.tensordot(a, x.T, axes=1),
        "tensordot axes": lambda m, x, a, b, c, d: m.tensordot(a, d, axes=([0, 2], [1, 0])),
        "matmul int": lambda m, x, a, b, c, d: m.matmul(
            (x * 4).astype(m.int32), (x.T * 3).astype(m.int32)),
        "matmul int @ float": lambda m, x, a, b, c, d: m.matmul((x * 4).astype(m.int32), x.T),
    }  # fmt: skip
    check_cases(cases, F32, a3, b3, c, d, rtol=1e-5, atol=1e-5, eager=["matmul batch", "dot n-d"])


def test_shape_functions():
    a3 = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    cases = {
        "reshape": lambda m, x, a: m.reshape(x, (4, 3)),
        "reshape -1": lambda m, x, a: m.reshape(x, (2, -1, 2)),
        "ravel": lambda m, x, a: m.ravel(x),
        "transpose": lambda m, x, a: m.transpose(a),
        "transpose axes": lambda m, x, a: m.transpose(a, (1, 2, 0)),
        "permute_dims": lambda m, x, a: m.permute_dims(a, (2, 0, 1)),
        "expand_dims": lambda m, x, a: m.expand_dims(x, 0),
        "expand_dims many": lambda m, x, a: m.expand_dims(x, (0, -1)),
        "squeeze": lambda m, x, a: m.squeeze(a[:1, :, :1]),
        "squeeze axes": lambda m, x, a: m.squeeze(a[:1, :, :1], axis=(0, 2)),
        "swapaxes": lambda m, x, a: m.swapaxes(a, 0, 2),
        "moveaxis": lambda m, x, a: m.moveaxis(a, 0, -1),
        "moveaxis many": lambda m, x, a: m.moveaxis(a, (0, 1), (2, 0)),
        "concatenate promotes": lambda m, x, a: m.concatenate([x, x.astype(m.int32)], axis=1),
        "concatenate flat": lambda m, x, a: m.concatenate([x, a], axis=None),
        "concatenate weak": lambda m, x, a: m.concatenate([m.asarray([1.0]), m.asarray([2.0])]),
        "stack": lambda m, x, a: m.stack([x, x], axis=-1),
        "stack weak scalars": lambda m, x, a: m.stack([1.0, 2.0]),
    }
    check_cases(cases, F32, a3, eager=["moveaxis many", "stack"])


def test_operators_and_methods():
    cases = {
        "ops": lambda m, x, y, i, j: [
            x + y,
            x - 1,
            2 * x,
            x / y,
            x // y,
            x % y,
            x**2,
            -x,
            abs(x),
            x < y,
            x >= 1,
            x == y,
            x != y,
            1 - x,
            2 / x,
            2**x,
            +x,
        ],
        "int ops": lambda m, x, y, i, j: [
            i & j,
            i | j,
            i ^ j,
            ~i,
            i << 1,
            i >> 1,
            i // j,
            i % j,
            -i,
            7 // (i + 6),
            divmod(i, j),
        ],
        "methods": lambda m, x, y, i, j: [
            x.sum(0),
            x.mean(),
            x.reshape(2, 6),
            x.T,
            x.mT,
            x.max(axis=1),
            x.argmin(),
            x.astype(m.int8),
            x.clip(0, 1),
            x.round(),
            x.swapaxes(0, 1),
            x.flatten(),
            x.ravel(),
            x.squeeze(),
            x.transpose(1, 0),
            x.var(),
            x.std(),
            x.prod(),
            x.any(),
            x.all(),
            x.dot(x.T),
            x.real,
            x.imag,
            x.conj(),
            x.min(keepdims=True),
        ],
        "properties": lambda m, x, y, i, j: m.zeros((x.ndim, x.size, len(x), x.shape[1])),
    }
    check_cases(cases, F32, F32[0] + 2, I32, np.abs(I32[0]) + 1, rtol=1e-5, atol=1e-5,
                eager=["int ops"])  # fmt: skip


def test_round_decimals():
    check_cases({"2 decimals": lambda m, x: m.round(x, 2), "-1": lambda m, x: m.round(x * 50, -1)},
                F32, eager=True)  # fmt: skip


def test_x64_off_canonicalises():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = jnp.asarray(np.arange(3, dtype=np.int64)) + 1
    assert out.dtype == np.int32 and (np.asarray(out) == [1, 2, 3]).all()


def test_error_names_op_and_line():
    with pytest.raises(purejit.PurejitTypeError, match=r"add: .*cannot broadcast.*test_numpy_core"):
        jnp.add(np.ones(3), np.ones(4))
    with pytest.raises(purejit.PurejitTypeError, match=r"matmul.*test_numpy_core"):
        jnp.matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.sum(np.ones(3), axis=2)


def test_logaddexp_derivatives_are_jax_rule():
    # t_x exp(x - out) + t_y exp(y - out), +inf read as 0: 1/2 where x == y (the formula's
    # max and |x - y| gave 0 there) and 2 for logaddexp(x, x) at +inf (NaN before)
    import jax
    import jax.numpy as jjnp

    x = np.array([0.0, 1.0, -3.0, 30.0, -np.inf, np.inf], np.float32)
    for name in ("logaddexp", "logaddexp2"):
        for y in (np.zeros_like(x), x):
            want = jax.jit(jax.vmap(jax.grad(getattr(jjnp, name), (0, 1))))(x, y)
            got = purejit.jit(purejit.vmap(purejit.grad(getattr(jnp, name), (0, 1))))(x, y)
            for w, g in zip(want, got):
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=name)
    assert float(purejit.grad(lambda v: jnp.logaddexp(v, 0.0))(0.0)) == 0.5
