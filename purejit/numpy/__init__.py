"""purejit.numpy: NumPy's API on purejit arrays, traced into purejit IR under jit."""

import numpy as _np

from purejit.ir.dtypes import bfloat16  # noqa: F401
from purejit.numpy._core import *  # noqa: F401,F403
from purejit.numpy._core import _lift  # noqa: F401
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

bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
complex64, complex128 = _np.complex64, _np.complex128
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
