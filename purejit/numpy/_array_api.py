"""The Python Array API standard (2024.12) in purejit.numpy: inspection (`finfo`, `iinfo`,
`isdtype`, `can_cast`, `__array_namespace_info__`), the standard's names for functions NumPy
spells differently (`acos`, `concat`, `bitwise_invert`, ...) and the functions NumPy lacks
(`unstack`, `vecdot`, `cumulative_sum`, `count_nonzero`, `from_dlpack`, ...), each as
jax.numpy defines it."""

from __future__ import annotations

import operator

import ml_dtypes
import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.ir import dtypes as irdt
from purejit.backend import pjrt
from purejit.numpy import _core as c
from purejit.numpy import _arithmetic as arith
from purejit.numpy._linalg import matmul
from purejit.numpy._manip import _slice_axis
from purejit.numpy._reductions import _sum_dtype
from purejit.numpy._reductions import sum as _sum
from purejit.numpy._shape import _axis, concatenate, moveaxis, reshape, swapaxes
from purejit.numpy._sorting import cumprod, cumsum
from purejit.runtime.array import Array
from purejit.tracing import ConcreteArray, Tracer

__array_api_version__ = "2024.12"


# ---- data types ------------------------------------------------------------------------------


def _as_dtype(x) -> np.dtype:
    if isinstance(x, (ConcreteArray, Tracer)):
        return x.dtype
    return np.dtype(x)


def finfo(dtype):
    """Machine limits of a floating dtype (or of an array's dtype), bfloat16 included."""
    return ml_dtypes.finfo(_as_dtype(dtype))


def iinfo(int_type):
    """Machine limits of an integer dtype (or of an array's dtype)."""
    return ml_dtypes.iinfo(_as_dtype(int_type))


# ml_dtypes' types (bfloat16, float8_*, int4, ...) count by what they stand for, as in JAX
_KINDS = {
    "bool": lambda d: d == np.bool_,
    "signed integer": irdt.is_signed,
    "unsigned integer": irdt.is_unsigned,
    "integral": irdt.is_integer,
    "real floating": irdt.is_float,
    "complex floating": irdt.is_complex,
    "numeric": lambda d: irdt.is_integer(d) or irdt.is_inexact(d),
}


def isdtype(dtype, kind) -> bool:
    """Whether `dtype` is of `kind`: a dtype, one of the standard's kind names ('bool',
    'signed integer', 'unsigned integer', 'integral', 'real floating', 'complex floating',
    'numeric') or a tuple of these."""
    dt = np.dtype(dtype)
    for k in kind if isinstance(kind, tuple) else (kind,):
        if isinstance(k, str) and k in _KINDS:
            if _KINDS[k](dt):
                return True
            continue
        try:
            kd = np.dtype(k)
        except TypeError as e:
            if isinstance(k, str):
                raise ValueError(
                    f"isdtype: unknown kind {k!r}; expected one of {list(_KINDS)} or a dtype"
                ) from e
            raise TypeError(f"isdtype: kind must be a dtype, a string or a tuple, got {k!r}") from e
        if dt == kd:
            return True
    return False


def can_cast(from_, to, casting: str = "safe") -> bool:
    """Whether a cast from `from_` (a dtype or an array) to `to` keeps every value (NumPy's
    rules, as jax.numpy)."""
    return bool(np.can_cast(_as_dtype(from_), np.dtype(to), casting=casting))


class ArrayNamespaceInfo:
    """What `__array_namespace_info__()` returns: devices, dtypes and capabilities."""

    _capabilities = {
        "boolean indexing": False,  # the result's shape depends on the data: not under jit
        "data-dependent shapes": False,
        "max dimensions": 64,
    }

    def capabilities(self) -> dict:
        return dict(self._capabilities)

    def default_device(self):
        return None  # arrays go to the default device unless placed (as in JAX)

    def devices(self) -> list:
        return [None, *pjrt.devices()]

    def default_dtypes(self, *, device=None) -> dict:
        return {
            "real floating": pdt.default_float(),
            "complex floating": pdt.default_complex(),
            "integral": pdt.default_int(),
            "indexing": pdt.default_int(),
        }

    def dtypes(self, *, device=None, kind=None) -> dict:
        names = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32"]
        names.append("complex64")
        if pdt.default_int() == np.int64:
            names += ["int64", "uint64", "float64", "complex128"]
        all_ = {n: np.dtype(n) for n in names}
        if kind is None:
            return all_
        kinds = kind if isinstance(kind, tuple) else (kind,)
        return {n: d for n, d in all_.items() if isdtype(d, kinds)}


def __array_namespace_info__() -> ArrayNamespaceInfo:
    return ArrayNamespaceInfo()


# ---- the standard's names for NumPy's functions -----------------------------------------------

acos, acosh, asin, asinh = arith.arccos, arith.arccosh, arith.arcsin, arith.arcsinh
atan, atanh, atan2 = c.arctan, c.arctanh, c.arctan2
bitwise_invert, bitwise_left_shift, bitwise_right_shift = c.invert, c.left_shift, c.right_shift


def concat(arrays, /, *, axis: int | None = 0):
    """The standard's name for `concatenate`."""
    return concatenate(arrays, axis=axis)


def matrix_transpose(x, /):
    """`x` with its last two axes swapped (x.mT)."""
    x = c._lift(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must be at least 2-D, got shape {list(x.shape)}")
    return swapaxes(x, -1, -2)


def unstack(x, /, *, axis: int = 0):
    """The slices of `x` along `axis`, as a tuple."""
    x = c._lift(x)
    if x.ndim == 0:
        raise ValueError("unstack: x must be at least 1-D")
    ax = _axis(axis, x.ndim, "unstack")
    x = moveaxis(x, ax, 0)
    return tuple(x[i] for i in range(x.shape[0]))


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """sum(conj(x1) * x2) over `axis`, broadcasting the other axes (the vector dot product)."""
    a, b = c._lift(x1), c._lift(x2)
    ax1, ax2 = _axis(axis, a.ndim, "vecdot"), _axis(axis, b.ndim, "vecdot")
    if a.shape[ax1] != b.shape[ax2]:  # the contracted axes must match; they do not broadcast
        raise ValueError(
            f"vecdot: axes must match; got shapes {list(a.shape)} and {list(b.shape)} with "
            f"axis={axis}{errors.at(errors.user_location())}"
        )
    a, b = c.promote_args("vecdot", moveaxis(a, ax1, -1), moveaxis(b, ax2, -1))
    if a.dtype.kind == "c":
        a = arith.conj(a)
    a, b = a[..., None, :], b[..., :, None]
    out = matmul(a, b, precision=precision, preferred_element_type=preferred_element_type)
    return out[..., 0, 0]


def count_nonzero(a, axis=None, keepdims: bool = False):
    """The number of nonzero elements along `axis` (default int dtype)."""
    x = c._lift(a)
    return _sum(c.not_equal(x, c.convert(0, x.dtype)), axis=axis, keepdims=keepdims,
                dtype=pdt.default_int())  # fmt: skip


def _cumulative_api(fn, name, x, axis, dtype, include_initial: bool):
    x = c._lift(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{name}: axis must be given for an array of rank {x.ndim}")
        x = reshape(x, (-1,))
        axis = 0
    ax = _axis(axis, x.ndim, name)
    if dtype is None and fn is cumsum:
        dtype = _sum_dtype(x.dtype)  # small integers accumulate as in sum (jax.numpy)
    out = fn(x, axis=ax, dtype=dtype)
    if include_initial:
        init = 0 if fn is cumsum else 1
        shape = list(out.shape)
        shape[ax] = 1
        first = c.broadcast_to(c.convert(init, out.dtype), shape)
        out = concatenate([first, out], axis=ax)
    return out


def cumulative_sum(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
    """Cumulative sum along `axis`, optionally starting with 0 (the standard's cumsum)."""
    return _cumulative_api(cumsum, "cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis: int | None = None, dtype=None, include_initial: bool = False):
    """Cumulative product along `axis`, optionally starting with 1."""
    return _cumulative_api(cumprod, "cumulative_prod", x, axis, dtype, include_initial)


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from any object with `__dlpack__` (a purejit array is returned as is)."""
    if type(x) is Array and device is None:
        return x
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} has no __dlpack__ method")
    out = Array(host=np.from_dlpack(x))
    return out.to_device(device) if device is not None else out


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """The n-th discrete difference along `axis` (NumPy's `diff`; booleans use !=)."""
    x = c._lift(a)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    if x.ndim == 0:
        raise ValueError("diff: requires an input of at least one dimension")
    ax = _axis(axis, x.ndim, "diff")
    parts = []
    for v, where_ in ((prepend, "prepend"), (x, None), (append, "append")):
        if v is None:
            continue
        v = c._lift(v)
        if where_ is not None and v.ndim == 0:
            shape = list(x.shape)
            shape[ax] = 1
            v = c.broadcast_to(v, shape)
        parts.append(v)
    if len(parts) > 1:
        x = concatenate(parts, axis=ax)
    for _ in range(n):
        m = x.shape[ax]
        hi = _slice_axis(x, min(1, m), m, ax)
        lo = _slice_axis(x, 0, max(m - 1, 0), ax)
        x = c.not_equal(hi, lo) if x.dtype == np.bool_ else c.subtract(hi, lo)
    return x
