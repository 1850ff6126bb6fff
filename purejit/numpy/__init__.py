"""purejit.numpy: NumPy's API on purejit arrays, traced into purejit IR under jit."""

import numpy as _np

from purejit.numpy._core import *  # noqa: F401,F403
from purejit.numpy._core import _lift  # noqa: F401
from purejit.numpy._core import copy_ as copy  # noqa: F401
from purejit.numpy._core import nextafter  # noqa: F401
from purejit.numpy._array_api import (  # noqa: F401
    __array_api_version__,
    __array_namespace_info__,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_right_shift,
    can_cast,
    concat,
    count_nonzero,
    cumulative_prod,
    cumulative_sum,
    diff,
    finfo,
    from_dlpack,
    iinfo,
    isdtype,
    matrix_transpose,
    unstack,
    vecdot,
)  # fmt: skip
from purejit.numpy._creation import (  # noqa: F401
    arange,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    identity,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tri,
    tril,
    triu,
    zeros,
    zeros_like,
)  # fmt: skip
from purejit.numpy._einsum import einsum  # noqa: F401
from purejit.numpy._index_update import _IndexUpdateHelper  # noqa: F401
from purejit.numpy._indexing import _indexing_getitem, take, take_along_axis  # noqa: F401
from purejit.numpy._linalg import dot, inner, matmul, outer, tensordot, vdot  # noqa: F401
from purejit.numpy._manip import (  # noqa: F401
    array_split,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    column_stack,
    diag,
    diagonal,
    dstack,
    flip,
    fliplr,
    flipud,
    hsplit,
    hstack,
    pad,
    repeat,
    roll,
    rot90,
    row_stack,
    split,
    tile,
    trace,
    vsplit,
    vstack,
)  # fmt: skip
from purejit.numpy._reductions import (  # noqa: F401
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)  # fmt: skip
from purejit.numpy._shape import (  # noqa: F401
    concatenate,
    expand_dims,
    moveaxis,
    permute_dims,
    ravel,
    reshape,
    squeeze,
    stack,
    swapaxes,
    transpose,
)  # fmt: skip
from purejit.numpy._sorting import argsort, cumprod, cumsum, sort  # noqa: F401

from purejit.numpy._setops import (  # noqa: E402,F401
    argwhere,
    bincount,
    digitize,
    flatnonzero,
    histogram,
    histogram_bin_edges,
    isin,
    lexsort,
    nonzero,
    partition,
    searchsorted,
    unique,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
    where,
)  # fmt: skip
from purejit.numpy._stats import (  # noqa: E402,F401
    allclose,
    array_equal,
    array_equiv,
    average,
    corrcoef,
    cov,
    isclose,
    median,
    nan_to_num,
    nanargmax,
    nanargmin,
    nancumprod,
    nancumsum,
    nanmax,
    nanmean,
    nanmedian,
    nanmin,
    nanpercentile,
    nanprod,
    nanquantile,
    nanstd,
    nansum,
    nanvar,
    percentile,
    ptp,
    quantile,
)  # fmt: skip
from purejit.numpy._functions import (  # noqa: E402,F401
    apply_along_axis,
    ediff1d,
    gradient,
    heaviside,
    interp,
    kron,
    logaddexp2,
    piecewise,
    polyval,
    select,
)  # fmt: skip
from purejit.numpy._poly import polyfit, roots, vander, vectorize  # noqa: E402,F401
from purejit.numpy._scalar_types import (  # noqa: E402,F401
    bfloat16,
    bool_,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)  # fmt: skip

bool = bool_  # noqa: A001
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, None
dtype = _np.dtype
import sys as _sys  # noqa: E402

from purejit.numpy import _operators  # noqa: E402
from purejit.runtime import Array as ndarray  # noqa: E402
from purejit.tracing import Tracer as _Tracer  # noqa: E402

for _cls in (_Tracer, ndarray):
    _operators.install(_cls, _sys.modules[__name__])
from purejit.numpy._convolve import convolve, correlate  # noqa: E402, F401
from purejit.numpy import fft, linalg  # noqa: E402, F401
from purejit.numpy._ufuncs_extra import (  # noqa: E402, F401
    angle,
    bitwise_count,
    divmod,
    fabs,
    float_power,
    fmax,
    fmin,
    frexp,
    gcd,
    i0,
    iscomplex,
    iscomplexobj,
    isneginf,
    isposinf,
    isreal,
    isrealobj,
    lcm,
    ldexp,
    modf,
    sort_complex,
    spacing,
)  # fmt: skip
from purejit.numpy._manip_extra import (  # noqa: E402, F401
    append,
    apply_over_axes,
    argpartition,
    block,
    choose,
    compress,
    delete,
    diag_indices,
    diag_indices_from,
    diagflat,
    dsplit,
    extract,
    fill_diagonal,
    indices,
    insert,
    ix_,
    mask_indices,
    place,
    put,
    put_along_axis,
    ravel_multi_index,
    resize,
    rollaxis,
    tril_indices,
    tril_indices_from,
    triu_indices,
    triu_indices_from,
    trim_zeros,
    unravel_index,
)  # fmt: skip
