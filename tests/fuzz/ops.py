"""The fuzzer's op table: every op application it can generate, written once against a
NumPy-like library (`purejit.lax`/`purejit.numpy` or `jax.lax`/`jax.numpy`, the same names).

Each `Spec` says which IR ops it exercises (`ir`), which dtype kinds its operands take, how
to draw its static parameters from the operand types, and how exact it is:

- `exact`: given bit-identical inputs, every implementation gives bit-identical outputs
  (data movement, max/min, comparisons, integer arithmetic, rounding to integers, ...);
- `needs_exact`: the op is discontinuous in its float operands (floor, compare, sort,
  argmax, float->int conversion, ...), so the generator feeds it only exact values: a last
  ulp of difference upstream must not flip its result.

Domain-restricted functions are applied to a transformed operand (`log(|x| + 0.5)`,
`tan(tanh(x))`) so that values stay in the range where both sides are well conditioned and
loops cannot overflow: the point is to compare compilers, not libm's edge cases.

IR ops the generator does not produce are listed in `NOT_GENERATED` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

FLOATS = ("float32", "float16", "bfloat16")
SINTS = ("int32", "int8")
UINTS = ("uint8", "uint32")
INTS = SINTS + UINTS
DTYPES = FLOATS + INTS + ("bool",)


def kind(dtype: str) -> str:
    if dtype in FLOATS:
        return "f"
    if dtype in SINTS:
        return "i"
    if dtype in UINTS:
        return "u"
    return "b"


@dataclass(frozen=True)
class Spec:
    name: str
    ir: tuple[str, ...]
    arity: int
    kinds: str  # operand kinds accepted: f, i, u, b
    apply: Callable  # (lib, params, *args) -> value
    exact: bool = False
    needs_exact: bool = False
    same_type: bool = True  # binary: operands of one shape and dtype (lax); else broadcast
    params: Callable | None = None  # (rng: draw-like callable, types) -> dict
    preserves: bool = False  # output has the operand's shape and dtype (usable in bodies)
    tags: tuple[str, ...] = field(default_factory=tuple)


def _c(lib, x, v):
    """A constant of x's dtype (strongly typed, as lax needs)."""
    return lib.lax.convert_element_type(v, x.dtype) if hasattr(x, "dtype") else v


def _bounded(lib, x, scale=1.0):
    """tanh(x) * scale: in (-scale, scale) whatever x is (floats)."""
    t = lib.lax.tanh(x)
    return t if scale == 1.0 else lib.lax.mul(t, _c(lib, x, scale))


def _pos(lib, x, low):
    """|x| + low (> 0)."""
    return lib.lax.add(lib.lax.abs(x), _c(lib, x, low))


SPECS: dict[str, Spec] = {}


def _add(spec: Spec):
    SPECS[spec.name] = spec


# --- unary, floats ---------------------------------------------------------------------------

_UNARY_F = {
    # name: (ir ops, f(lib, x))
    "neg": (("negate",), lambda L, x: L.lax.neg(x), True),
    "abs": (("abs",), lambda L, x: L.lax.abs(x), True),
    "exp": (("exponential", "tanh", "multiply"), lambda L, x: L.lax.exp(_bounded(L, x, 3.0)), 0),
    "expm1": (("exponential_minus_one",), lambda L, x: L.lax.expm1(_bounded(L, x, 3.0)), 0),
    "log": (("log", "abs", "add"), lambda L, x: L.lax.log(_pos(L, x, 0.5)), 0),
    "log1p": (("log_plus_one",), lambda L, x: L.lax.log1p(L.lax.abs(x)), 0),
    "sqrt": (("sqrt",), lambda L, x: L.lax.sqrt(L.lax.abs(x)), 0),
    "rsqrt": (("rsqrt",), lambda L, x: L.lax.rsqrt(_pos(L, x, 0.5)), 0),
    "cbrt": (("cbrt",), lambda L, x: L.lax.cbrt(x), 0),
    "tanh": (("tanh",), lambda L, x: L.lax.tanh(x), 0),
    "logistic": (("logistic",), lambda L, x: L.lax.logistic(x), 0),
    "sin": (("sine",), lambda L, x: L.lax.sin(_bounded(L, x, 3.0)), 0),
    "cos": (("cosine",), lambda L, x: L.lax.cos(_bounded(L, x, 3.0)), 0),
    "tan": (("tan",), lambda L, x: L.lax.tan(_bounded(L, x)), 0),
    "asin": (("asin",), lambda L, x: L.lax.asin(_bounded(L, x, 0.9)), 0),
    "acos": (("acos",), lambda L, x: L.lax.acos(_bounded(L, x, 0.9)), 0),
    "atan": (("atan",), lambda L, x: L.lax.atan(x), 0),
    "sinh": (("sinh",), lambda L, x: L.lax.sinh(_bounded(L, x, 3.0)), 0),
    "cosh": (("cosh",), lambda L, x: L.lax.cosh(_bounded(L, x, 3.0)), 0),
    "asinh": (("asinh",), lambda L, x: L.lax.asinh(x), 0),
    "acosh": (("acosh",), lambda L, x: L.lax.acosh(_pos(L, x, 1.5)), 0),
    "atanh": (("atanh",), lambda L, x: L.lax.atanh(_bounded(L, x, 0.9)), 0),
    "erf": (("erf",), lambda L, x: L.lax.erf(x), 0),
    "lgamma": (("lgamma",), lambda L, x: L.lax.lgamma(_pos(L, x, 0.5)), 0),
    "erfc": (("erfc",), lambda L, x: L.lax.erfc(x), 0),
    "digamma": (("digamma",), lambda L, x: L.lax.digamma(_pos(L, x, 0.5)), 0),
    "bessel_i1e": (("bessel_i1e",), lambda L, x: L.lax.bessel_i1e(x), 0),
    "square": (("square",), lambda L, x: L.lax.square(_bounded(L, x, 4.0)), 0),
    "reciprocal": (("integer_pow",), lambda L, x: L.lax.reciprocal(_pos(L, x, 0.5)), 0),
    "integer_pow3": (
        ("integer_pow",),
        lambda L, x: L.lax.integer_pow(_bounded(L, x, 2.0), 3),
        0,
    ),
}
for _n, (_ir, _f, _exact) in _UNARY_F.items():
    _add(
        Spec(
            _n,
            _ir,
            1,
            "f",
            lambda L, p, x, _f=_f: _f(L, x),
            exact=bool(_exact),
            preserves=True,
        )
    )


def _integer_pow(L, p, x):
    # a negative power of a base kept away from zero (no overflow to inf on either side)
    y = p["y"]
    base = _bounded(L, x, 2.0) if y >= 0 else _pos(L, _bounded(L, x, 1.0), 0.5)
    return L.lax.integer_pow(base, y)


_add(
    Spec(
        "integer_pow",
        ("integer_pow",),
        1,
        "f",
        _integer_pow,
        params=lambda draw, types: {"y": draw("integer_pow_y", list(range(-3, 6)))},
        preserves=True,
    )
)

# discontinuous float -> float: only on exact values
for _n, _ir, _f in [
    ("floor", ("floor",), lambda L, x: L.lax.floor(x)),
    ("ceil", ("ceil",), lambda L, x: L.lax.ceil(x)),
    ("round_afz", ("round_nearest_afz",), lambda L, x: L.lax.round(x, 0)),
    ("round_even", ("round_nearest_even",), lambda L, x: L.lax.round(x, 1)),
    ("sign_f", ("sign",), lambda L, x: L.lax.sign(x)),
]:
    _add(Spec(_n, _ir, 1, "f", lambda L, p, x, _f=_f: _f(L, x), exact=True, needs_exact=True))
_add(Spec("is_finite", ("is_finite",), 1, "f", lambda L, p, x: L.lax.is_finite(x), exact=True))
# polygamma's order is static (0..3): an order computed as floor(f(x)) jumps by one where an
# ulp of f(x) crosses an integer, and JAX and purejit may round f(x) to either side
_add(
    Spec(
        "polygamma",
        ("polygamma",),
        1,
        "f",
        lambda L, p, x: L.lax.polygamma(L.lax.full_like(x, p["n"]), _pos(L, x, 0.5)),
        params=lambda draw, types: {"n": draw("polygamma_n", [0, 1, 2, 3])},
    )
)

# --- unary, integers -------------------------------------------------------------------------

for _n, _ir, _k, _f in [
    ("neg_i", ("negate",), "i", lambda L, x: L.lax.neg(x)),
    ("abs_i", ("abs",), "i", lambda L, x: L.lax.abs(x)),
    ("sign_i", ("sign",), "iu", lambda L, x: L.lax.sign(x)),
    ("not", ("not",), "iub", lambda L, x: L.lax.bitwise_not(x)),
    ("clz", ("count_leading_zeros",), "iu", lambda L, x: L.lax.clz(x)),
    ("popcnt", ("popcnt",), "iu", lambda L, x: L.lax.population_count(x)),
    ("square_i", ("integer_pow",), "iu", lambda L, x: L.lax.integer_pow(x, 2)),
    ("square_lax_i", ("square",), "iu", lambda L, x: L.lax.square(x)),
]:
    _add(Spec(_n, _ir, 1, _k, lambda L, p, x, _f=_f: _f(L, x), exact=True, preserves=True))

# --- binary (lax: one shape and dtype) -------------------------------------------------------

for _n, _ir, _k, _f, _exact in [
    ("add", ("add",), "fiu", lambda L, x, y: L.lax.add(x, y), "iu"),
    ("sub", ("subtract",), "fiu", lambda L, x, y: L.lax.sub(x, y), "iu"),
    ("mul", ("multiply",), "fiu", lambda L, x, y: L.lax.mul(x, y), "iu"),
    ("max", ("maximum",), "fiub", lambda L, x, y: L.lax.max(x, y), "fiub"),
    ("min", ("minimum",), "fiub", lambda L, x, y: L.lax.min(x, y), "fiub"),
    ("div_f", ("divide",), "f", lambda L, x, y: L.lax.div(x, _pos(L, y, 0.5)), ""),
    ("atan2", ("atan2",), "f", lambda L, x, y: L.lax.atan2(x, y), ""),
    ("zeta", ("zeta",), "f", lambda L, x, y: L.lax.zeta(_pos(L, x, 1.5), _pos(L, y, 0.5)), ""),
    (
        "pow_f",
        ("power",),
        "f",
        lambda L, x, y: L.lax.pow(_pos(L, x, 0.5), _bounded(L, y, 2.0)),
        "",
    ),
    ("and", ("and",), "iub", lambda L, x, y: L.lax.bitwise_and(x, y), "iub"),
    ("or", ("or",), "iub", lambda L, x, y: L.lax.bitwise_or(x, y), "iub"),
    ("xor", ("xor",), "iub", lambda L, x, y: L.lax.bitwise_xor(x, y), "iub"),
    # divisors made odd (never 0): XLA's simplifier in jax 0.10.2 dies of SIGFPE on an integer
    # remainder it proves to be 0 % 0 (`lax.rem(x - x, x - x)` for uint8 kills the process
    # under jax.jit; purejit folds it first); x / 0 and x % 0 are tested in tests/numpy
    (
        "div_i",
        ("divide",),
        "iu",
        lambda L, x, y: L.lax.div(x, L.lax.bitwise_or(y, _c(L, y, 1))),
        "iu",
    ),
    (
        "rem_i",
        ("remainder",),
        "iu",
        lambda L, x, y: L.lax.rem(x, L.lax.bitwise_or(y, _c(L, y, 1))),
        "iu",
    ),
    ("shl", ("shift_left",), "iu", lambda L, x, y: L.lax.shift_left(x, y), "iu"),
    (
        "shra",
        ("shift_right_arithmetic",),
        "iu",
        lambda L, x, y: L.lax.shift_right_arithmetic(x, y),
        "iu",
    ),
    ("shrl", ("shift_right_logical",), "iu", lambda L, x, y: L.lax.shift_right_logical(x, y), "iu"),
    # lax.pow takes no integer base (JAX raises), so integer powers go through jnp.power
    # (square-and-multiply in JAX, purejit's `power` op), exponents 0..3
    (
        "pow_i",
        ("power",),
        "iu",
        lambda L, x, y: L.np.power(x, L.lax.bitwise_and(y, _c(L, y, 3))),
        "iu",
    ),
]:
    _add(
        Spec(
            _n,
            _ir,
            2,
            _k,
            lambda L, p, x, y, _f=_f: _f(L, x, y),
            exact=_exact,  # the kinds for which it is exact
            preserves=True,
        )
    )
_add(
    Spec(
        "threefry_bits",
        ("threefry2x32",),
        1,
        "u",
        # x ^ random bits of x's shape and dtype under a key made from x's first element
        # (so the hash is not a constant the compiler folds away)
        lambda L, p, x: L.lax.bitwise_xor(
            x,
            L.random.bits(
                L.random.fold_in(
                    L.random.key(7),
                    L.lax.convert_element_type(L.np.max(x, initial=0), "uint32"),
                ),
                x.shape,
                x.dtype,
            ),
        ),
        exact=True,
        preserves=True,
    )
)
_add(
    Spec(
        "rem_f",
        ("remainder",),
        2,
        "f",
        lambda L, p, x, y: L.lax.rem(x, _pos(L, y, 0.5)),
        exact=False,
        needs_exact=True,
        preserves=True,
    )
)

for _n, _d in [("lt", "LT"), ("le", "LE"), ("eq", "EQ"), ("ne", "NE"), ("gt", "GT"), ("ge", "GE")]:
    _add(
        Spec(
            "cmp_" + _n,
            ("compare",),
            2,
            "fiub",
            lambda L, p, x, y, _n=_n: getattr(L.lax, _n)(x, y),
            exact=True,
            needs_exact=True,
        )
    )

# --- NumPy-style binary: broadcasting, dtype promotion, weak Python scalars -------------------


def _np_binary(fname):
    def apply(L, p, x, y):
        a = x if p["lhs"] != "scalar" else p["scalar"]
        b = y if p["rhs"] != "scalar" else p["scalar"]
        if p["lhs"] == "bcast":
            a = L.np.expand_dims(x, 0)
        return getattr(L.np, fname)(a, b)

    return apply


def _np_binary_params(draw, types):
    (sx, dx), (sy, dy) = types
    where = draw("np_binary_form", ["both", "scalar_rhs", "scalar_lhs", "bcast"])
    scalar = draw("np_binary_scalar", [2, -1, 0.5, 3.0, True])
    if kind(dx) == "b" or kind(dy) == "b":
        scalar = True if isinstance(scalar, bool) else 1
    return {
        "lhs": "scalar" if where == "scalar_lhs" else ("bcast" if where == "bcast" else "x"),
        "rhs": "scalar" if where == "scalar_rhs" else "y",
        "scalar": scalar,
    }


for _n in ("add", "subtract", "multiply", "maximum", "minimum"):
    _add(
        Spec(
            "np_" + _n,
            (_n,),
            2,
            "fiu",
            _np_binary(_n),
            exact="fiub" if _n in ("maximum", "minimum") else "iu",
            same_type=False,
            params=_np_binary_params,
            tags=("broadcast",),
        )
    )

_add(
    Spec(
        "np_floor_divide",
        ("remainder", "divide", "round_nearest_afz"),
        2,
        "fiu",
        _np_binary("floor_divide"),
        exact=True,  # (a - a % b) / b is exact in IEEE arithmetic
        needs_exact=True,
        same_type=False,
        params=_np_binary_params,
        tags=("broadcast",),
    )
)

# --- select, clamp, convert ------------------------------------------------------------------

_add(
    Spec(
        "select",
        ("select", "compare"),
        2,
        "fiub",
        lambda L, p, x, y: L.lax.select(L.lax.gt(x, y) if p["by"] else L.lax.ne(x, x), x, y),
        exact=True,
        needs_exact=True,
        params=lambda draw, types: {"by": draw("select_by", [True, False])},
        preserves=True,
    )
)
_add(
    Spec(
        "clamp",
        ("clamp",),
        1,
        "fiu",
        lambda L, p, x: L.lax.clamp(_c(L, x, p["lo"]), x, _c(L, x, p["hi"])),
        exact=True,
        params=lambda draw, types: dict(zip(("lo", "hi"), draw("clamp", [(0, 1), (1, 3), (0, 7)]))),
        preserves=True,
    )
)


def _convert(L, p, x):
    if kind(str(np.dtype(x.dtype))) == "f" and kind(p["to"]) in "iu":
        # float -> int is undefined out of range: clamp to what every target holds
        x = L.lax.clamp(_c(L, x, -100.0 if kind(p["to"]) == "i" else 0.0), x, _c(L, x, 100.0))
    return L.lax.convert_element_type(x, p["to"])


_add(
    Spec(
        "convert",
        ("convert",),
        1,
        "fiub",
        _convert,
        exact=True,  # float -> int needs exact inputs; float -> narrower float rounds exactly
        needs_exact=True,
        params=lambda draw, types: {"to": draw("convert_to", list(DTYPES))},
    )
)

# --- reductions ------------------------------------------------------------------------------


def _axis_param(draw, types):
    (shape, _), *_ = types
    return {"axis": draw("axis", list(range(len(shape)))) if shape else None}


for _n, _ir, _k, _f, _exact, _needs in [
    ("sum", ("reduce", "add"), "fiu", lambda L, x, a: L.np.sum(x, axis=a), "iu", False),
    ("prod", ("reduce", "multiply"), "iu", lambda L, x, a: L.np.prod(x, axis=a), "iu", False),
    ("max_r", ("reduce", "maximum"), "fiu", lambda L, x, a: L.np.max(x, axis=a), True, False),
    ("min_r", ("reduce", "minimum"), "fiu", lambda L, x, a: L.np.min(x, axis=a), True, False),
    ("any", ("reduce", "or"), "b", lambda L, x, a: L.np.any(x, axis=a), True, False),
    (
        "argmax",
        ("reduce", "compare", "select"),
        "fiu",
        lambda L, x, a: L.np.argmax(x, axis=a),
        True,
        True,
    ),
    (
        "argmin",
        ("reduce", "compare", "select"),
        "fiu",
        lambda L, x, a: L.np.argmin(x, axis=a),
        True,
        True,
    ),
    ("cumsum", ("reduce_window",), "fiu", lambda L, x, a: L.np.cumsum(x, axis=a), "iu", False),
    (
        "cummax",
        ("reduce_window",),
        "fiu",
        lambda L, x, a: L.lax.cummax(x, axis=a or 0),
        True,
        False,
    ),
]:
    _add(
        Spec(
            _n,
            _ir,
            1,
            _k,
            lambda L, p, x, _f=_f: _f(L, x, p["axis"]),
            exact=_exact,
            needs_exact=_needs,
            params=_axis_param,
            tags=("reduction",),
        )
    )

# --- data movement ---------------------------------------------------------------------------


def _perm(draw, types):
    (shape, _), *_ = types
    perms = [tuple(np.roll(np.arange(len(shape)), k)) for k in range(len(shape))] or [()]
    perms.append(tuple(range(len(shape)))[::-1])
    return {"perm": tuple(int(i) for i in draw("perm", perms))}


def _slice(draw, types):
    (shape, _), *_ = types
    starts, limits, strides = [], [], []
    for n in shape:
        s = draw("slice_start", [0, 1]) if n > 1 else 0
        starts.append(s)
        limits.append(draw("slice_limit", [n, max(s + 1, n - 1)]))
        strides.append(draw("slice_stride", [1, 2]))
    return {"start": tuple(starts), "limit": tuple(limits), "strides": tuple(strides)}


def _pad(draw, types):
    (shape, _), *_ = types
    cfg = tuple(draw("pad", [(0, 0, 0), (1, 2, 0), (0, 1, 1), (-1, 1, 0)]) for _ in shape)
    cfg = tuple(c if not (c[0] < 0 and n < 2) else (0, 0, 0) for c, n in zip(cfg, shape))
    return {"cfg": cfg}


def _reshape(draw, types):
    (shape, _), *_ = types
    size = int(np.prod(shape))
    options = [(size,), (1, size), (size, 1)]
    if size % 2 == 0 and size > 2:
        options.append((2, size // 2))
    return {"shape": draw("reshape", options)}


for _n, _ir, _f, _params in [
    ("transpose", ("transpose",), lambda L, p, x: L.lax.transpose(x, p["perm"]), _perm),
    ("reverse", ("reverse",), lambda L, p, x: L.lax.rev(x, p["dims"]), None),
    (
        "slice",
        ("slice",),
        lambda L, p, x: L.lax.slice(x, p["start"], p["limit"], p["strides"]),
        _slice,
    ),
    ("pad", ("pad",), lambda L, p, x: L.lax.pad(x, _c(L, x, 0), p["cfg"]), _pad),
    ("reshape", ("reshape",), lambda L, p, x: L.lax.reshape(x, p["shape"]), _reshape),
    (
        "broadcast",
        ("broadcast_in_dim",),
        lambda L, p, x: L.lax.broadcast_in_dim(x, (2, *x.shape), tuple(range(1, x.ndim + 1))),
        None,
    ),
    (
        "concatenate",
        ("concatenate",),
        lambda L, p, x: L.lax.concatenate([x, L.lax.rev(x, (p["axis"],))], p["axis"]),
        _axis_param,
    ),
    (
        "iota_add",
        ("iota",),
        lambda L, p, x: L.lax.add(x, L.lax.broadcasted_iota(x.dtype, x.shape, p["axis"])),
        _axis_param,
    ),
]:
    _add(
        Spec(
            _n,
            _ir,
            1,
            "fiub" if _n not in ("iota_add",) else "iu",
            _f,
            exact=True,
            params=_params or (lambda draw, types: {"dims": (0,) if types[0][0] else ()}),
            tags=("shape",),
        )
    )

# --- indexing: dynamic slices, gather, scatter -----------------------------------------------


def _index_of(L, i, n):
    """An int32 index in [-2, n + 2) from any exact integer value (first element)."""
    first = L.lax.reshape(L.lax.slice(L.lax.reshape(i, (i.size,)), (0,), (1,)), ())
    first = L.lax.convert_element_type(first, "int32")
    return L.lax.sub(
        L.lax.rem(first, L.lax.convert_element_type(n + 4, "int32")),
        L.lax.convert_element_type(2, "int32"),
    )


def _dyn_slice(L, p, x, i):
    idx = [_index_of(L, i, n) for n in x.shape]
    sizes = tuple(max(1, n - 1) for n in x.shape)
    return L.lax.dynamic_slice(x, idx, sizes)


def _dyn_update(L, p, x, i):
    idx = [_index_of(L, i, n) for n in x.shape]
    upd = L.lax.slice(x, (0,) * x.ndim, tuple(max(1, n - 1) for n in x.shape))
    return L.lax.dynamic_update_slice(x, L.lax.rev(upd, tuple(range(x.ndim))), idx)


def _take(L, p, x, i):
    flat = L.lax.reshape(i, (i.size,))
    idx = L.lax.convert_element_type(flat, "int32")
    return L.np.take(x, idx, axis=p["axis"], mode=p["mode"])


def _scatter_add(L, p, x, i):
    # at most 256 indices, each updating a row of x: 10**5 indices into a [8, 12288] x made
    # a [98304, 12288] update array (2.4 GB) that the interpreter could not hold
    flat = L.lax.reshape(i, (i.size,))
    flat = L.lax.slice(flat, (0,), (min(i.size, 256),))
    idx = L.lax.rem(
        L.lax.convert_element_type(flat, "int32"),
        L.lax.convert_element_type(x.shape[0] + 1, "int32"),
    )
    upd = L.np.ones((flat.shape[0], *x.shape[1:]), x.dtype)
    return x.at[idx].add(upd) if p["op"] == "add" else x.at[idx].max(upd)


for _n, _ir, _f, _params, _exact in [
    ("dynamic_slice", ("dynamic_slice",), _dyn_slice, None, True),
    ("dynamic_update_slice", ("dynamic_update_slice",), _dyn_update, None, True),
    (
        "take",
        ("gather",),
        _take,
        lambda draw, types: {
            **_axis_param(draw, types),
            "mode": draw("take_mode", ["fill", "clip", "wrap"]),
        },
        True,
    ),
    (
        "scatter",
        ("scatter",),
        _scatter_add,
        lambda draw, types: {"op": draw("scatter_op", ["add", "max"])},
        "iu",
    ),
]:
    _add(
        Spec(
            _n,
            _ir,
            2,
            "fiu",
            _f,
            exact=_exact,
            same_type=False,
            params=_params,
            tags=("index", "needs_rank1"),
        )
    )

# --- contraction and sorting -----------------------------------------------------------------


def _matmul(L, p, x):
    a = L.lax.reshape(x, (x.shape[0], x.size // x.shape[0]))
    return (
        L.np.matmul(a, L.lax.transpose(a, (1, 0)))
        if p["form"] == "aat"
        else L.np.einsum("ij,ik->jk", a, a)
    )


_add(
    Spec(
        "dot",
        ("dot_general",),
        1,
        "fi",
        _matmul,
        params=lambda draw, types: {"form": draw("dot_form", ["aat", "ata"])},
        exact="i",
        tags=("needs_rank1",),
    )
)
_add(
    Spec(
        "sort",
        ("sort",),
        1,
        "fiu",
        lambda L, p, x: L.lax.sort(x, dimension=p["axis"]),
        exact=True,
        needs_exact=True,
        params=_axis_param,
        tags=("needs_rank1",),
    )
)
_add(
    Spec(
        "top_k",
        ("top_k",),
        1,
        "fiu",
        lambda L, p, x: L.lax.top_k(x, 1 if x.shape[-1] < 2 else 2)[p["part"]],
        exact=True,
        needs_exact=True,
        params=lambda draw, types: {"part": draw("top_k_part", [0, 1])},
        tags=("needs_rank1",),
    )
)

# --- control flow: bodies are chains of shape- and dtype-preserving unary ops ---------------


def body_chain(L, chain, x):
    for name in chain:
        spec = SPECS[name]
        x = spec.apply(L, {}, x) if spec.arity == 1 else spec.apply(L, {}, x, x)
    return x


def _first(L, x):
    return L.lax.reshape(L.lax.slice(L.lax.reshape(x, (x.size,)), (0,), (1,)), ())


def _cond(L, p, x, s):
    pred = L.lax.gt(_first(L, s), L.lax.convert_element_type(0, s.dtype))
    return L.lax.cond(
        pred, lambda v: body_chain(L, p["a"], v), lambda v: body_chain(L, p["b"], v), x
    )


def _switch(L, p, x, s):
    i = L.lax.convert_element_type(_first(L, s), "int32")
    return L.lax.switch(i, [lambda v, c=c: body_chain(L, c, v) for c in p["chains"]], x)


def _scan(L, p, x):
    n = p["n"]
    xs = L.lax.broadcast_in_dim(x, (n, *x.shape), tuple(range(1, x.ndim + 1)))

    def step(c, row):
        c2 = L.lax.max(body_chain(L, p["a"], c), row) if p["mix"] else body_chain(L, p["a"], c)
        return c2, body_chain(L, p["b"], c2)

    carry, ys = L.lax.scan(step, x, xs, reverse=p["reverse"])
    return L.lax.add(L.lax.broadcast_in_dim(carry, (n, *x.shape), tuple(range(1, x.ndim + 1))), ys)


def _while(L, p, x):
    def body(c):
        i, v = c
        return L.lax.add(i, L.lax.convert_element_type(1, "int32")), body_chain(L, p["a"], v)

    def cond(c):
        return L.lax.lt(c[0], L.lax.convert_element_type(p["n"], "int32"))

    return L.lax.while_loop(cond, body, (L.lax.convert_element_type(0, "int32"), x))[1]


def _fori(L, p, x):
    def body(i, v):
        w = body_chain(L, p["a"], v)
        return L.lax.add(w, L.lax.convert_element_type(i, w.dtype)) if p["add_i"] else w

    return L.lax.fori_loop(0, p["n"], body, x)


def _chain(draw, types, key):
    (_, dtype), *_ = types
    k = kind(dtype)
    options = sorted(
        n for n, s in SPECS.items() if s.preserves and k in s.kinds and not s.needs_exact
    )
    length = draw(key + "_len", [1, 2])
    return tuple(draw(key, options) for _ in range(length))


_add(
    Spec(
        "cond",
        ("case",),
        2,
        "fiu",
        _cond,
        same_type=False,
        params=lambda draw, t: {"a": _chain(draw, t, "cond_a"), "b": _chain(draw, t, "cond_b")},
        tags=("control", "second_exact"),
    )
)
_add(
    Spec(
        "switch",
        ("case",),
        2,
        "fiu",
        _switch,
        same_type=False,
        params=lambda draw, t: {"chains": tuple(_chain(draw, t, f"switch_{k}") for k in range(3))},
        tags=("control", "second_exact"),
    )
)
_add(
    Spec(
        "scan",
        ("scan",),
        1,
        "fiu",
        _scan,
        params=lambda draw, t: {
            "a": _chain(draw, t, "scan_a"),
            "b": _chain(draw, t, "scan_b"),
            "n": draw("scan_n", [1, 3]),
            "mix": draw("scan_mix", [True, False]),
            "reverse": draw("scan_reverse", [False, True]),
        },
        tags=("control",),
    )
)
_add(
    Spec(
        "while_loop",
        ("while",),
        1,
        "fiu",
        _while,
        params=lambda draw, t: {"a": _chain(draw, t, "while_a"), "n": draw("while_n", [0, 2, 3])},
        tags=("control",),
    )
)
_add(
    Spec(
        "fori_loop",
        ("scan",),
        1,
        "fiu",
        _fori,
        params=lambda draw, t: {
            "a": _chain(draw, t, "fori_a"),
            "n": draw("fori_n", [0, 1, 3]),
            "add_i": draw("fori_add_i", [True, False]),
        },
        tags=("control",),
    )
)

# IR ops that programs written with lax/numpy on one device never contain, or that no
# generator produces yet, and why
NOT_GENERATED = {
    "constant": "appears in every program (literals), not generated on its own",
    "fusion": "made by the fusion pass, which every program runs through",
    "all_gather": "collective: needs shard_map over several devices (tests/multidevice)",
    "sharding_constraint": "a layout over a mesh of several devices "
    "(tests/multidevice/cases_sharding_context.py)",
    "pvary": "varying-axes typing inside a check_vma shard_map over several devices "
    "(tests/multidevice/test_md_autodiff*)",
    "all_reduce": "collective: needs shard_map over several devices (tests/multidevice)",
    "all_to_all": "collective: needs shard_map over several devices (tests/multidevice)",
    "collective_permute": "collective: needs shard_map over several devices",
    "reduce_scatter": "collective: needs shard_map over several devices (tests/multidevice)",
    "manual_computation": "shard_map's region: needs a mesh",
    "partition_id": "axis_index: needs shard_map",
    "real": "complex dtypes are not generated",
    "imag": "complex dtypes are not generated",
    "dot_product_attention_lin": "made by differentiating dot_product_attention (forward "
    "mode); tests/nn/test_attention.py checks it against JAX",
    "dot_product_attention_bwd": "made by differentiating dot_product_attention (reverse "
    "mode); tests/nn/test_attention.py checks it against JAX",
    "schur": "LAPACK's gees, CPU only (as in JAX, which has no GPU lowering either), not "
    "differentiable; tests/scipy/test_linalg_schur.py checks it against jax.scipy",
    "hessenberg": "LAPACK's gehrd + orgqr, CPU only (as in JAX), not differentiable; "
    "tests/scipy/test_linalg_schur.py checks it against jax.scipy",
    "geqrf": "LAPACK's compact QR (not differentiable, as in JAX); tests/lax/"
    "test_linalg_householder.py checks it and jnp.linalg.qr(mode='raw') against JAX",
    "householder_product": "LAPACK's orgqr on geqrf's reflectors; tests/lax/"
    "test_linalg_householder.py checks it against JAX",
    "ormqr": "LAPACK's ormqr on geqrf's reflectors; tests/lax/test_linalg_householder.py "
    "checks it against JAX",
    "gehrd": "LAPACK's gehrd (CPU only and not differentiable, as in JAX); tests/lax/"
    "test_linalg_householder.py checks it against JAX",
    "sytrd": "LAPACK's sytrd / hetrd (not differentiable, as in JAX); tests/lax/"
    "test_linalg_householder.py checks it against JAX",
    "tridiagonal_solve": "LAPACK's gtsv; tests/lax/test_linalg_tridiagonal.py checks it and "
    "its gradients against JAX",
    "log2": "jax 0.11's lax.log2: the fuzzer's reference is the local jax 0.10.2, which lacks "
    "it; tests/lax/test_log2_one_minus_square.py checks it, tools/check_jax011_names.py "
    "against jax 0.11.2",
    "one_minus_square": "jax 0.11's lax.one_minus_square: the fuzzer's reference is the local "
    "jax 0.10.2, which lacks it; tests/lax/test_log2_one_minus_square.py checks it, "
    "tools/check_jax011_names.py against jax 0.11.2",
    "user_primitive_effect": "a user-defined primitive declared with effects: JAX needs an "
    "effect type registered for it; tests/extend/test_user_primitives.py checks it is kept",
}


def covered_ir_ops() -> set[str]:
    out = set()
    for s in SPECS.values():
        out.update(s.ir)
    return out


# --- special functions, convolution, FFT, linear algebra --------------------------------------

_add(
    Spec(
        "erf_inv",
        ("erf_inv",),
        1,
        "f",
        lambda L, p, x: L.lax.erf_inv(_bounded(L, x, 0.9)),
        preserves=True,
    )
)
_add(
    Spec(
        "nextafter",
        ("next_after",),
        2,
        "f",
        lambda L, p, x, y: L.lax.nextafter(x, y),
        exact=True,
        preserves=True,
    )
)

_add(
    Spec(
        "reduce_precision",
        ("reduce_precision",),
        1,
        "f",
        lambda L, p, x: L.lax.reduce_precision(x, *p["format"]),
        exact=True,
        needs_exact=True,  # rounding: an ulp of difference upstream can flip a tie
        params=lambda draw, types: {"format": draw("rp_format", [(5, 10), (8, 7), (4, 3), (2, 0)])},
        preserves=True,
    )
)


def _conv(L, p, x):
    v = L.lax.reshape(x, (1, 1, x.size))
    k = L.lax.slice(L.lax.rev(v, (2,)), (0, 0, 0), (1, 1, min(3, x.size)))
    return L.lax.conv_general_dilated(v, k, (p["stride"],), p["padding"])


_add(
    Spec(
        "conv",
        ("convolution",),
        1,
        "f",
        _conv,
        params=lambda draw, t: {
            "stride": draw("conv_stride", [1, 2]),
            "padding": draw("conv_padding", ["SAME", "VALID"]),
        },
        tags=("needs_rank1",),
    )
)


def _attention(L, p, x):
    """x (rank 1, n values) as q [1, T, n / T, 1] (T the largest divisor of n up to 256, so
    the T x T logits of a 10**5-element input stay small), attending to itself reversed."""
    t = max([d for d in range(1, min(x.size, 256) + 1) if x.size % d == 0] or [1])
    # jax.jit of JAX's attention refuses float16 on the CPU ("The precision 'F16_F16_F32' is
    # not supported by dot_general on CPU", jax 0.10.2): there both sides attend in float32
    half_on_cpu = str(np.dtype(x.dtype)) == "float16" and _cpu()
    v = L.lax.convert_element_type(x, "float32") if half_on_cpu else x
    q = L.lax.reshape(v, (1, t, x.size // t, 1))
    k = L.lax.rev(q, (1,))
    out = L.nn.dot_product_attention(q, k, q, scale=0.5, is_causal=p["causal"])
    out = L.lax.reshape(out, (x.size,))
    return L.lax.convert_element_type(out, "float16") if half_on_cpu else out


def _cpu() -> bool:
    import purejit

    return purejit.default_backend() == "cpu"


_add(
    Spec(
        "dot_product_attention",
        ("dot_product_attention",),
        1,
        "f",
        _attention,
        params=lambda draw, t: {"causal": draw("attention_causal", [False, True])},
        tags=("needs_rank1",),
    )
)


def _nested_jit(L, p, x):
    """x through a jitted function (a `call` op when traced under the program's own jit)."""
    return L.jit(lambda y: y * L.lax.tanh(y))(x)


_add(Spec("call", ("call",), 1, "f", _nested_jit, preserves=True))


def _f32(L, x):
    return L.lax.convert_element_type(x, "float32")


_LINALG_N = 8  # matrices of at most 8 x 8 (a 10**5-element input would ask for 40 GB)


def _head(L, x):
    """x's first min(x.size, 8) values as a float32 vector."""
    v = L.lax.reshape(_f32(L, x), (x.size,))
    return L.lax.slice(v, (0,), (min(x.size, _LINALG_N),))


def _spd(L, x):
    """An n x n symmetric positive definite float32 matrix from x's first n values (n <= 8)."""
    v = _head(L, x)
    n = v.shape[0]
    outer = L.lax.mul(
        L.lax.broadcast_in_dim(v, (n, n), (0,)),
        L.lax.broadcast_in_dim(v, (n, n), (1,)),
    )
    eye = L.lax.convert_element_type(
        L.lax.eq(
            L.lax.broadcasted_iota("int32", (n, n), 0),
            L.lax.broadcasted_iota("int32", (n, n), 1),
        ),
        "float32",
    )
    return L.lax.add(outer, L.lax.mul(eye, L.lax.convert_element_type(float(n), "float32")))


def _linalg(L, p, x):
    a = _spd(L, x)
    v = _head(L, x)
    la = L.np.linalg
    what = p["what"]
    if what == "cholesky":
        return la.cholesky(a)
    if what == "solve":
        return la.solve(a, v)
    if what == "qr":
        q, r = la.qr(a)
        return L.np.matmul(q, r)
    if what == "eigvalsh":
        return la.eigvalsh(a)
    if what == "svd":
        return la.svd(a, compute_uv=False)
    if what == "det":
        return la.det(a)
    if what == "lu_permutation":
        _, pivots, _ = L.linalg.lu(a)
        return L.linalg.lu_pivots_to_permutation(pivots, v.shape[0])
    # eig: general solver on a symmetric matrix: real eigenvalues, in LAPACK's order
    return L.np.sort(L.np.abs(la.eigvals(a)))


_add(
    Spec(
        "linalg",
        ("cholesky", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr", "eigh", "svd")
        + ("eig",),
        1,
        "f",
        _linalg,
        params=lambda draw, t: {
            "what": draw(
                "linalg",
                ["cholesky", "solve", "qr", "eigvalsh", "svd", "det", "eig", "lu_permutation"],
            )
        },
        tags=("needs_rank1",),
    )
)


def _fft(L, p, x):
    v = _f32(L, x)
    n = x.shape[-1]
    return L.np.fft.irfft(L.np.fft.rfft(v, axis=-1), n=n, axis=-1)


_add(Spec("fft", ("fft",), 1, "f", _fft, tags=("needs_rank1",)))


# --- transformations: vmap and grad of bodies, remat, custom rules -----------------------------


def _vmap(L, p, x):
    def body(row):
        y = body_chain(L, p["chain"], row)
        if p["reduce"] and y.ndim:
            y = L.np.sum(y, axis=0) if kind(str(np.dtype(y.dtype))) != "b" else y
        return y

    axis = p["axis"] % x.ndim
    return L.vmap(body, in_axes=axis, out_axes=p["out_axis"] % max(1, x.ndim - p["reduce"]))(x)


_add(
    Spec(
        "vmap",
        (),
        1,
        "fiu",
        _vmap,
        params=lambda draw, t: {
            "chain": _chain(draw, t, "vmap_chain"),
            "axis": draw("vmap_axis", [0, 1, -1]),
            "out_axis": draw("vmap_out_axis", [0, -1]),
            "reduce": draw("vmap_reduce", [False, True]),
        },
        tags=("needs_rank1", "transform"),
    )
)


def _grad(L, p, x):
    def loss(v):
        y = body_chain(L, p["chain"], v)
        if p["stop"]:
            y = L.lax.mul(y, L.lax.stop_gradient(L.lax.tanh(v)))
        if p["remat"]:
            y = L.checkpoint(lambda w: L.lax.sin(L.checkpoint_name(L.lax.mul(w, w), "h")))(y)
        return L.np.sum(L.lax.convert_element_type(y, "float32"))

    return L.grad(loss)(x)


_add(
    Spec(
        "grad",
        ("stop_gradient", "checkpoint", "checkpoint_name"),
        1,
        "f",
        _grad,
        params=lambda draw, t: {
            "chain": _chain(draw, t, "grad_chain"),
            "stop": draw("grad_stop", [False, True]),
            "remat": draw("grad_remat", [False, True]),
        },
        tags=("transform",),
    )
)


def _custom_jvp(L, p, x):
    f = L.custom_jvp(lambda v: L.lax.sin(v))
    # a rule that is not sin's derivative, so that using it (or not) shows in the numbers
    f.defjvp(lambda primals, tangents: (f(primals[0]), L.lax.mul(tangents[0], _c(L, x, 2.0))))
    return (
        L.grad(lambda v: L.np.sum(L.lax.convert_element_type(f(v), "float32")))(x)
        if p["grad"]
        else f(x)
    )


def _custom_vjp(L, p, x):
    f = L.custom_vjp(lambda v: L.lax.tanh(v))
    f.defvjp(lambda v: (L.lax.tanh(v), v), lambda v, g: (L.lax.mul(g, L.lax.cos(v)),))
    return (
        L.grad(lambda v: L.np.sum(L.lax.convert_element_type(f(v), "float32")))(x)
        if p["grad"]
        else f(x)
    )


for _n, _ir, _f in [
    ("custom_jvp", ("custom_jvp_call",), _custom_jvp),
    ("custom_vjp", ("custom_vjp_call", "custom_lin"), _custom_vjp),
]:
    _add(
        Spec(
            _n,
            _ir,
            1,
            "f",
            _f,
            params=lambda draw, t, _n=_n: {"grad": draw(_n + "_grad", [True, False])},
            tags=("transform",),
        )
    )

_USER_PRIMS: dict = {}


def _user_prim(L):
    """A primitive defined through the library's extension API (`jax.extend.core.Primitive`
    and `jax.interpreters`, or `purejit.extend`): tanh with a JVP, a batching rule and a
    lowering written as a function of lax ops (Equinox's way)."""
    if id(L) in _USER_PRIMS:
        return _USER_PRIMS[id(L)]
    if L.lax.__name__.startswith("jax"):
        import jax.extend.core as core
        import jax.interpreters.ad as ad
        import jax.interpreters.batching as batching
        import jax.interpreters.mlir as mlir
    else:
        from purejit.extend import ad, batching, core, mlir
    p = core.Primitive("fuzz_tanh")
    p.def_impl(lambda x: L.lax.tanh(x))
    p.def_abstract_eval(lambda x: x)

    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = p.bind(x)
        one = L.lax.convert_element_type(1, y.dtype)
        return y, L.lax.mul(t, L.lax.sub(one, L.lax.mul(y, y)))

    ad.primitive_jvps[p] = jvp
    batching.primitive_batchers[p] = lambda xs, dims: (p.bind(xs[0]), dims[0])
    mlir.register_lowering(p, mlir.lower_fun(lambda x: L.lax.tanh(x), multiple_results=False))
    _USER_PRIMS[id(L)] = p
    return p


def _user_primitive(L, p, x):
    prim = _user_prim(L)
    if p["grad"]:
        return L.grad(lambda v: L.np.sum(L.lax.convert_element_type(prim.bind(v), "float32")))(x)
    return prim.bind(x)


_add(
    Spec(
        "user_primitive",
        ("user_primitive",),
        1,
        "f",
        _user_primitive,
        params=lambda draw, t: {"grad": draw("user_primitive_grad", [True, False])},
        tags=("transform",),
    )
)

_add(
    Spec(
        "optimization_barrier",
        ("optimization_barrier",),
        1,
        "fiub",
        lambda L, p, x: L.lax.optimization_barrier(x),
        exact=True,
        preserves=True,
    )
)

_SAME_WIDTH = {
    "float32": "int32",
    "int32": "float32",
    "uint32": "int32",
    "int8": "uint8",
    "uint8": "int8",
    "float16": "float16",
    "bfloat16": "bfloat16",
}
_add(
    Spec(
        "bitcast",
        ("bitcast_convert",),
        1,
        "fiu",
        lambda L, p, x: L.lax.bitcast_convert_type(x, _SAME_WIDTH[str(np.dtype(x.dtype))]),
        exact=True,
        needs_exact=True,  # an ulp of difference is a different integer
    )
)
_add(
    Spec(
        "complex_abs",
        ("complex", "abs"),
        2,
        "f",
        lambda L, p, x, y: L.np.abs(L.lax.complex(_f32(L, x), _f32(L, y))),
    )
)


def _pure_callback(L, p, x):
    out = L.ShapeDtypeStruct(x.shape, x.dtype)
    return L.pure_callback(lambda a: np.negative(np.asarray(a)), out, x)


def _debug_callback(L, p, x):
    L.debug_callback(lambda a: None, x)
    return L.lax.neg(x)


_add(Spec("pure_callback", ("pure_callback",), 1, "fi", _pure_callback, exact=True))
_add(Spec("debug_callback", ("host_callback",), 1, "fi", _debug_callback, exact=True))
