"""The elementwise lax functions, one line each binding an IR op (plus `sign` and
`reciprocal`): `purejit.lax` exports them, and lax's own modules (`special`) compose them
without importing the package."""

from purejit.lax._lift import lift as _lift
from purejit.lax.ops import binary, convert_element_type, integer_pow, unary
from purejit.lax.ops import pow  # noqa: A004

add = binary("add", "add")
sub = binary("subtract", "sub")
mul = binary("multiply", "mul")
div = binary("divide", "div")
rem = binary("remainder", "rem")
max = binary("maximum", "max")
min = binary("minimum", "min")
atan2 = binary("atan2", "atan2")
nextafter = binary("next_after", "nextafter")
bitwise_and = binary("and", "bitwise_and")
bitwise_or = binary("or", "bitwise_or")
bitwise_xor = binary("xor", "bitwise_xor")
shift_left = binary("shift_left", "shift_left")
shift_right_logical = binary("shift_right_logical", "shift_right_logical")
shift_right_arithmetic = binary("shift_right_arithmetic", "shift_right_arithmetic")
eq = binary("compare", "eq", comparison_direction="EQ")
ne = binary("compare", "ne", comparison_direction="NE")
lt = binary("compare", "lt", comparison_direction="LT")
le = binary("compare", "le", comparison_direction="LE")
gt = binary("compare", "gt", comparison_direction="GT")
ge = binary("compare", "ge", comparison_direction="GE")

neg = unary("negate", "neg")
abs = unary("abs", "abs")
_sign = unary("sign", "sign")


def sign(x, /):
    """Elementwise sign (IR op `sign`); as JAX, unsigned integers give 0 or 1 (StableHLO's
    sign takes signed and float types only)."""
    x = _lift(x)
    if x.dtype.kind == "u":
        return convert_element_type(ne(x, convert_element_type(0, x.dtype)), x.dtype)
    return _sign(x)


floor = unary("floor", "floor")
ceil = unary("ceil", "ceil")
is_finite = unary("is_finite", "is_finite")
bitwise_not = unary("not", "bitwise_not")
population_count = unary("popcnt", "population_count")
clz = unary("count_leading_zeros", "clz")
exp = unary("exponential", "exp")
expm1 = unary("exponential_minus_one", "expm1")
log = unary("log", "log")
log1p = unary("log_plus_one", "log1p")
logistic = unary("logistic", "logistic")
sqrt = unary("sqrt", "sqrt")
rsqrt = unary("rsqrt", "rsqrt")
cbrt = unary("cbrt", "cbrt")
sin = unary("sine", "sin")
cos = unary("cosine", "cos")
tan = unary("tan", "tan")
asin = unary("asin", "asin")
acos = unary("acos", "acos")
atan = unary("atan", "atan")
sinh = unary("sinh", "sinh")
cosh = unary("cosh", "cosh")
tanh = unary("tanh", "tanh")
asinh = unary("asinh", "asinh")
acosh = unary("acosh", "acosh")
atanh = unary("atanh", "atanh")
erf = unary("erf", "erf")
lgamma = unary("lgamma", "lgamma")
erf_inv = unary("erf_inv", "erf_inv")
real = unary("real", "real")
imag = unary("imag", "imag")


square = unary("square", "square")  # x * x; CHLO's form for complex x, as JAX's


def reciprocal(x):
    """`1 / x` in x's dtype."""
    return integer_pow(x, -1)


__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "rem",
    "pow",
    "max",
    "min",
    "atan2",
    "nextafter",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "shift_left",
    "shift_right_logical",
    "shift_right_arithmetic",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "neg",
    "abs",
    "sign",
    "floor",
    "ceil",
    "is_finite",
    "bitwise_not",
    "population_count",
    "clz",
    "exp",
    "expm1",
    "log",
    "log1p",
    "logistic",
    "sqrt",
    "rsqrt",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "erf",
    "lgamma",
    "erf_inv",
    "real",
    "imag",
    "square",
    "reciprocal",
]
