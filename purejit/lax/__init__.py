"""purejit.lax: JAX's lax API on purejit arrays: control flow and the low-level ops.

Unlike purejit.numpy, lax functions do not promote dtypes: binary ops need operands of one
dtype (Python scalars take their default dtype), as in jax.lax.

Control flow (real StableHLO `case` / `while`, never unrolled unless asked):
    cond, switch, while_loop, fori_loop, scan, map

Indexing:
    dynamic_slice, dynamic_update_slice, dynamic_slice_in_dim, dynamic_index_in_dim,
    dynamic_update_slice_in_dim, dynamic_update_index_in_dim

Arrays, reductions, sorting:
    select, clamp, bitcast_convert_type, iota, broadcasted_iota, full, convert_element_type,
    broadcast_in_dim,
    broadcast, reshape, transpose, rev, slice, concatenate, pad, squeeze, expand_dims,
    reduce, dot_general, dot, cumsum, cumprod, cummax, cummin, sort, sort_key_val, top_k,
    argmax, argmin

Elementwise, one line each binding an IR op:
    add, sub, mul, div, rem, pow, max, min, atan2, nextafter;
    bitwise_and, bitwise_or, bitwise_xor, bitwise_not, shift_left, shift_right_logical,
    shift_right_arithmetic, population_count, clz;
    eq, ne, lt, le, gt, ge;
    neg, abs, sign, floor, ceil, round, is_finite, exp, expm1, log, log1p, logistic, sqrt,
    rsqrt, cbrt, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh, erf,
    erf_inv, lgamma, real, imag, square, reciprocal, integer_pow
"""

from purejit.lax.control import cond, switch, while_loop
from purejit.lax._ad import optimization_barrier, stop_gradient
from purejit.lax.parallel import (  # noqa: F401  (collectives, for shard_map bodies)
    all_gather,
    all_to_all,
    axis_index,
    axis_size,
    pmax,
    pmean,
    pmin,
    ppermute,
    psum,
    psum_scatter,
)
from purejit.lax.scan import fori_loop, map, scan
from purejit.lax.ops import (
    binary,
    bitcast_convert_type,
    broadcast,
    broadcast_in_dim,
    broadcasted_iota,
    clamp,
    concatenate,
    convert_element_type,
    cummax,
    cummin,
    cumprod,
    cumsum,
    dot,
    dot_general,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    expand_dims,
    full,
    integer_pow,
    iota,
    pad,
    reduce,
    reshape,
    rev,
    round,
    select,
    slice,
    squeeze,
    transpose,
)
from purejit.lax.sorting import argmax, argmin, sort, sort_key_val, top_k

from purejit.lax.elementwise import (
    add,
    sub,
    mul,
    div,
    rem,
    pow,
    max,
    min,
    atan2,
    nextafter,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    shift_left,
    shift_right_logical,
    shift_right_arithmetic,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    neg,
    abs,
    sign,
    floor,
    ceil,
    is_finite,
    bitwise_not,
    population_count,
    clz,
    exp,
    expm1,
    log,
    log1p,
    logistic,
    sqrt,
    rsqrt,
    cbrt,
    sin,
    cos,
    tan,
    asin,
    acos,
    atan,
    sinh,
    cosh,
    tanh,
    asinh,
    acosh,
    atanh,
    erf,
    lgamma,
    erf_inv,
    real,
    imag,
    square,
    reciprocal,
)


__all__ = [
    "optimization_barrier",
    "stop_gradient",
    "abs",
    "acos",
    "acosh",
    "add",
    "argmax",
    "argmin",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitcast_convert_type",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "broadcast",
    "broadcast_in_dim",
    "broadcasted_iota",
    "cbrt",
    "ceil",
    "clamp",
    "clz",
    "concatenate",
    "cond",
    "convert_element_type",
    "cos",
    "cosh",
    "cummax",
    "cummin",
    "cumprod",
    "cumsum",
    "div",
    "dot",
    "dot_general",
    "dynamic_index_in_dim",
    "dynamic_slice",
    "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim",
    "dynamic_update_slice",
    "dynamic_update_slice_in_dim",
    "eq",
    "erf",
    "erf_inv",
    "exp",
    "expand_dims",
    "expm1",
    "floor",
    "fori_loop",
    "full",
    "ge",
    "gt",
    "imag",
    "integer_pow",
    "iota",
    "is_finite",
    "le",
    "lgamma",
    "log",
    "log1p",
    "logistic",
    "lt",
    "map",
    "max",
    "min",
    "mul",
    "ne",
    "neg",
    "nextafter",
    "pad",
    "population_count",
    "pow",
    "real",
    "reciprocal",
    "reduce",
    "rem",
    "reshape",
    "rev",
    "round",
    "rsqrt",
    "scan",
    "select",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "sign",
    "sin",
    "sinh",
    "slice",
    "sort",
    "sort_key_val",
    "sqrt",
    "square",
    "squeeze",
    "sub",
    "switch",
    "tan",
    "tanh",
    "top_k",
    "transpose",
    "while_loop",
    # collectives (purejit/lax/parallel.py)
    "all_gather",
    "all_to_all",
    "axis_index",
    "axis_size",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "psum",
    "psum_scatter",
]

# convolutions and windowed reductions (purejit/lax/conv.py, purejit/lax/windowed.py)
from purejit.lax._precision import DotAlgorithm, DotAlgorithmPreset, Precision  # noqa: E402
from purejit.lax.conv import (  # noqa: E402
    ConvDimensionNumbers,
    conv,
    conv_dimension_numbers,
    conv_general_dilated,
    conv_transpose,
    conv_with_general_padding,
    padtype_to_pads,
)
from purejit.lax.windowed import reduce_window  # noqa: E402

__all__ += [
    "ConvDimensionNumbers",
    "DotAlgorithm",
    "DotAlgorithmPreset",
    "Precision",
    "conv",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "conv_transpose",
    "conv_with_general_padding",
    "padtype_to_pads",
    "reduce_window",
]
from purejit.lax import linalg  # noqa: E402, F401
from purejit.lax.fourier import FftType, fft  # noqa: E402, F401

__all__ += ["FftType", "fft", "linalg"]
# complex numbers (IR op `complex`)
import numpy as _np  # noqa: E402

from purejit.lax._lift import lift as _lift_value  # noqa: E402

complex = binary("complex", "complex")  # noqa: A001


def conj(x):
    """The complex conjugate; a real input becomes complex (as jax.lax.conj)."""
    x = _lift_value(x)
    if x.dtype.kind != "c":
        x = convert_element_type(x, _np.complex128 if x.dtype.itemsize == 8 else _np.complex64)
    return complex(real(x), neg(imag(x)))


__all__ += ["complex", "conj"]

# prefix scans (purejit/lax/prefix_scans.py)
from purejit.lax.prefix_scans import associative_scan, cumlogsumexp  # noqa: E402

# select_n, gather/scatter (purejit/lax/slicing.py)
from purejit.lax.slicing import (  # noqa: E402
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather,
    scatter,
    scatter_add,
    scatter_apply,
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_sub,
    select_n,
)

__all__ += [
    "GatherDimensionNumbers",
    "GatherScatterMode",
    "ScatterDimensionNumbers",
    "associative_scan",
    "cumlogsumexp",
    "gather",
    "scatter",
    "scatter_add",
    "scatter_apply",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_sub",
    "select_n",
]

# shard_map's varying-axes typing (purejit/lax/parallel.py)
from purejit.lax.parallel import pcast, pvary  # noqa: E402

__all__ += ["pcast", "pvary"]

# rounding to a narrower float format (purejit/lax/rounding.py)
from purejit.lax.rounding import reduce_precision  # noqa: E402

__all__ += ["reduce_precision"]

from purejit.lax.solves import custom_linear_solve, custom_root  # noqa: E402

__all__ += ["custom_linear_solve", "custom_root"]

# the implicit-reparameterisation derivative of gamma samples (purejit/lax/special.py)
from purejit.lax.special import random_gamma_grad  # noqa: E402

__all__ += ["random_gamma_grad"]

# the op `stop_gradient` as a primitive object (what jaxpr equations of it carry)
from purejit.tracing.primitive import get_primitive as _get_primitive  # noqa: E402

stop_gradient_p = _get_primitive("stop_gradient")
__all__ += ["stop_gradient_p"]


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The shape NumPy broadcasting gives these static shapes; ValueError if they clash."""
    try:
        return tuple(int(d) for d in _np.broadcast_shapes(*(tuple(s) for s in shapes)))
    except ValueError:
        raise ValueError(
            f"Incompatible shapes for broadcasting: shapes={[tuple(s) for s in shapes]}"
        ) from None


__all__ += ["broadcast_shapes"]

# reductions, shape helpers, arithmetic and contractions composed from the ops above
# (purejit/lax/reductions.py, reshaping.py, arithmetic.py, contractions.py)
from purejit.lax.reductions import (  # noqa: E402
    approx_max_k,
    approx_min_k,
    reduce_and,
    reduce_max,
    reduce_min,
    reduce_or,
    reduce_prod,
    reduce_sum,
    reduce_xor,
)
from purejit.lax.reshaping import (  # noqa: E402
    broadcast_like,
    broadcast_to_rank,
    collapse,
    dtype,
    empty,
    full_like,
    index_in_dim,
    index_take,
    shape_as_value,
    slice_in_dim,
    split,
    stack,
    stage,
    tile,
    unstack,
)
from purejit.lax.arithmetic import AccuracyMode, RoundingMethod, Tolerance, exp2, mulhi  # noqa: E402
from purejit.lax.arithmetic import log2, one_minus_square  # noqa: E402
from purejit.lax.contractions import (  # noqa: E402
    DotDimensionNumbers,
    RaggedDotDimensionNumbers,
    batch_matmul,
    ragged_dot,
    ragged_dot_general,
    scaled_dot,
)

__all__ += ["approx_max_k", "approx_min_k", "reduce_and", "reduce_max", "reduce_min"]
__all__ += ["reduce_or", "reduce_prod", "reduce_sum", "reduce_xor"]
__all__ += ["broadcast_like", "broadcast_to_rank", "collapse", "dtype", "empty", "full_like"]
__all__ += ["index_in_dim", "index_take", "shape_as_value", "slice_in_dim", "split", "stack"]
__all__ += ["stage", "tile", "unstack", "AccuracyMode", "RoundingMethod", "Tolerance", "exp2"]
__all__ += ["mulhi", "DotDimensionNumbers", "RaggedDotDimensionNumbers", "batch_matmul"]
__all__ += ["ragged_dot", "ragged_dot_general", "scaled_dot", "log2", "one_minus_square"]

# special functions: IR ops XLA expands from CHLO, and compositions of them
# (purejit/lax/special_functions.py, incomplete.py)
from purejit.lax.special_functions import (  # noqa: E402
    bessel_i0e,
    bessel_i1e,
    digamma,
    erfc,
    polygamma,
    zeta,
)
from purejit.lax.incomplete import betainc, igamma, igamma_grad_a, igammac  # noqa: E402

__all__ += ["bessel_i0e", "bessel_i1e", "digamma", "erfc", "polygamma", "zeta", "betainc"]
__all__ += ["igamma", "igamma_grad_a", "igammac"]

# staging (purejit/lax/staging.py)
from purejit.lax.staging import composite, dce_sink, platform_dependent  # noqa: E402

__all__ += ["composite", "dce_sink", "platform_dependent"]

# collectives composed from parallel.py's (purejit/lax/collectives.py)
from purejit.lax.collectives import (  # noqa: E402
    after_all,
    create_token,
    pbroadcast,
    precv,
    psend,
    pshuffle,
    pswapaxes,
    ragged_all_to_all,
)

__all__ += ["after_all", "create_token", "pbroadcast", "precv", "psend", "pshuffle"]
__all__ += ["pswapaxes", "ragged_all_to_all"]

from purejit.lax.sharding_constraints import with_sharding_constraint  # noqa: E402

__all__ += ["with_sharding_constraint"]

# static shape helpers and typing aliases (purejit/lax/conv_shapes.py)
from purejit.lax.conv_shapes import (  # noqa: E402
    ConvGeneralDilatedDimensionNumbers,
    PrecisionLike,
    conv_general_permutations,
    conv_general_shape_tuple,
    conv_shape_tuple,
    conv_transpose_shape_tuple,
    reduce_window_shape_tuple,
)

__all__ += ["ConvGeneralDilatedDimensionNumbers", "PrecisionLike", "conv_shape_tuple"]
__all__ += ["conv_general_permutations", "conv_general_shape_tuple"]
__all__ += ["conv_transpose_shape_tuple", "reduce_window_shape_tuple"]

from purejit.lax.conv_patches import (  # noqa: E402
    conv_general_dilated_local,
    conv_general_dilated_patches,
)

__all__ += ["conv_general_dilated_local", "conv_general_dilated_patches"]

from purejit.lax.bit_generator import RandomAlgorithm, rng_bit_generator  # noqa: E402

__all__ += ["RandomAlgorithm", "rng_bit_generator"]
