"""`purejit.Array`: a concrete array, on the device (a PJRT buffer), still on the host, or a
row of a stack.

Values made from NumPy or Python scalars stay on the host until a device computation needs
them, so closing over a NumPy constant inside jit costs no transfer. Python operators
dispatch through purejit's own eager path (`purejit.numpy` installs them).

A row of a stack (`Array.row`: a stacked program's per-layer output, or a leaf its dispatch
laid into a stack; `compiler/stacked_dispatch.py`) is the stack's buffer, an element offset
and a shape: no buffer of its own (`_buf` None, `_host` None, `_row` set), nothing waited
for. Stacked dispatch passes the stack itself when it is given its rows in order; anything
else that needs the data (`.buffer`, `.host`, another program, jaxlib's C++ dispatch, which
reads `_buf` and misses to Python on None as for host data) materialises the row first:
waits for the stack and makes a zero-copy view of the row (`backend/row_views`; a copy where
no view can be made), which the Array keeps. A row of a stack that was donated is deleted.

As for `jax.Array`, `isinstance(x, Array)` also holds for tracers and typed PRNG keys, so
user code's checks work inside jit, grad and vmap. purejit's own code asks "is this a
concrete array?" with `type(x) is Array` (Array has no subclasses), or with tracing's
`ConcreteArray` beside `Tracer` in a tuple.
"""

from __future__ import annotations

import numpy as np

from purejit import dtypes as pdt
from purejit.backend import callback_errors, pjrt, row_views
from purejit.ir import dtypes as irdt
from purejit.runtime.mesh import SingleDeviceSharding, named_sharding_of
from purejit.tracing import ConcreteArray, ShapedArray, Tracer, host_value


class DeletedArrayError(RuntimeError):
    pass


# why an Array whose buffer PJRT deleted is dead: the call that donated it ran in jaxlib's C++
# dispatch, which names neither the function nor the argument
DONATED_IN_CPP = (
    "it was donated to a jitted function, which may write an output into its buffer; a "
    "donated array cannot be used after the call: use that function's outputs instead"
)


# why a row of a stack is dead when the stack was donated by a call that did not take the row
STACK_DONATED = (
    "it is a row of a stack of arrays that was donated to a jitted function; a donated array "
    "cannot be used after the call: use that function's outputs instead"
)


_new = object.__new__

# the other array values isinstance counts: tracers, and typed keys once purejit.random (a
# layer above) registers them through array_value_type
_VALUE_TYPES: tuple[type, ...] = (Tracer,)


def array_value_type(cls: type) -> type:
    """Count `cls`'s instances as `purejit.Array`s in isinstance and issubclass."""
    global _VALUE_TYPES
    if cls not in _VALUE_TYPES:
        _VALUE_TYPES = (*_VALUE_TYPES, cls)
    return cls


class _ArrayMeta(type):
    # CPython answers isinstance for an object whose type is exactly Array before calling
    # this, so concrete arrays never reach it
    def __instancecheck__(cls, obj) -> bool:
        return type.__instancecheck__(cls, obj) or (cls is Array and isinstance(obj, _VALUE_TYPES))

    def __subclasscheck__(cls, sub) -> bool:
        return type.__subclasscheck__(cls, sub) or (
            cls is Array and isinstance(sub, type) and issubclass(sub, _VALUE_TYPES)
        )


class Array(ConcreteArray, metaclass=_ArrayMeta):
    """A purejit array: shape, dtype, device, weak type; NumPy can read it.

    `isinstance(x, Array)` holds for concrete arrays, tracers and typed keys (as for
    `jax.Array`); `type(x) is Array` only for concrete arrays."""

    __array_priority__ = 1000
    # _weak repeats aval.weak_type where jaxlib's C++ dispatch reads it (compiler/cpp_dispatch)
    # _row: (the stack, element offset, shape, the view made of it or None) for a row of a
    # stack (see the module docstring), else None
    __slots__ = ("_buf", "_host", "aval", "_weak", "_deleted_by", "_row", "__weakref__")

    def __init__(self, buf=None, host: np.ndarray | None = None, weak_type: bool = False):
        self._buf = buf
        self._host = host
        src = host if host is not None else buf
        self.aval = ShapedArray(tuple(src.shape), np.dtype(src.dtype), weak_type)
        self._weak = bool(weak_type)
        self._deleted_by = self._row = None

    @staticmethod
    def from_buffer(buf, aval: ShapedArray) -> "Array":
        """Wrap a device buffer whose type is known (no buffer property reads)."""
        obj = _new(Array)
        obj._buf = buf
        obj._host = obj._deleted_by = obj._row = None
        obj.aval = aval
        obj._weak = aval.weak_type
        return obj

    @staticmethod
    def row(stack, offset: int, aval: ShapedArray) -> "Array":
        """A row of `stack` (a one-device buffer): its elements `offset ..` taken as a flat
        array, of `aval`'s shape; no view made, nothing waited for (module docstring)."""
        obj = _new(Array)
        obj._buf = obj._host = obj._deleted_by = None
        obj._row = (stack, offset, aval.shape, None)
        obj.aval = aval
        obj._weak = aval.weak_type
        return obj

    def _materialise(self):
        """A lazy row's buffer: a view of its piece of the stack (kept, and the Array stays
        that row), or a copy of it where no view can be made (no longer a row)."""
        stack, offset, shape, _ = self._row
        if stack.is_deleted():
            raise self.deleted_error()
        (buf,), (viewed,) = row_views.views(stack, [(offset, shape)])
        self._buf = buf
        self._row = (stack, offset, shape, buf) if viewed else None
        return buf

    # --- data ---------------------------------------------------------------------------
    @property
    def buffer(self):
        """The device buffer (a jax.Array), transferring host data on first use."""
        buf = self._buf  # `_check_alive` inlined (hot)
        if buf is None:
            if self._deleted_by is not None:
                raise self.deleted_error()
            if self._row is not None:  # a lazy row (its `_host` may be a copy NumPy read)
                return self._materialise()
            buf = self._buf = pjrt.to_device(self._host)
        elif (
            self._deleted_by is not None
            or buf.is_deleted()
            or (self._row is not None and self._row[0].is_deleted())  # a row's stack donated
        ):
            raise self.deleted_error()
        return buf

    @property
    def host(self) -> np.ndarray:
        buf = self._buf  # `_check_alive` inlined (hot)
        if self._deleted_by is not None or (buf is not None and buf.is_deleted()):
            raise self.deleted_error()
        if self._row is not None and self._row[0].is_deleted():  # a row's stack donated
            raise self.deleted_error()
        if self._host is None:
            if self._row is not None:  # a row: a copy, not NumPy's alias of the stack's memory
                self._host = self._row_on_host()
                return self._host
            try:
                self._host = np.asarray(self._buf)
            except Exception as e:  # a failed host callback's own exception, if one failed
                callback_errors.reraise(e)
                raise
        return self._host

    def _row_on_host(self) -> np.ndarray:
        """A copy of a row's data. A lazy row is read through a view made for the copy and
        deleted after it, so the row stays lazy and leaves no view of its stack alive (a live
        view keeps the next call from donating the stack in place: `stacked_dispatch`)."""
        if self._buf is not None:
            return np.array(self._buf)
        stack, offset, shape, _ = self._row
        (buf,), _ = row_views.views(stack, [(offset, shape)])
        try:
            return np.array(buf)
        finally:
            buf.delete()

    def _check_alive(self):
        # jaxlib's C++ dispatch runs donating programs without telling this wrapper: PJRT
        # deleted the buffer itself
        if self.is_deleted():
            raise self.deleted_error()

    def _stack_deleted(self) -> bool:
        # a row (a view made of it too) of a stack that another call donated
        return self._row is not None and self._row[0].is_deleted()

    def deleted_error(self) -> DeletedArrayError | None:
        """The error that using this array raises, or None while it is alive."""
        if self._deleted_by is not None:
            return DeletedArrayError(f"Array has been deleted ({self._deleted_by})")
        if self._buf is not None and self._buf.is_deleted():
            return DeletedArrayError(f"Array has been deleted ({DONATED_IN_CPP})")
        if self._stack_deleted():
            return DeletedArrayError(f"Array has been deleted ({STACK_DONATED})")
        return None

    def delete(self, reason: str = "deleted", *, consumed: bool = False):
        """Free the buffer now; `consumed`: XLA already took it over (a donated argument),
        so only the reference is dropped."""
        if self._buf is not None and not consumed:
            self._buf.delete()  # a row's view: its memory stays the stack's
        self._buf = self._host = self._row = None
        self._deleted_by = reason

    def is_deleted(self) -> bool:
        return (
            self._deleted_by is not None
            or (self._buf is not None and self._buf.is_deleted())
            or self._stack_deleted()
        )

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)
    nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

    @property
    def device(self):
        return next(iter(self.devices()))

    def devices(self):
        if self._buf is None and self._row is not None:
            self._check_alive()
            return self._row[0].devices()  # the stack's: no view needed
        return self.buffer.devices()

    def to_device(self, device, /, *, stream=None):
        """This array on `device` (a copy unless it is already there)."""
        if stream is not None:
            raise NotImplementedError("to_device(stream=...) is not supported")
        if device is None:
            return self
        self._check_alive()
        if (self._buf is not None or self._row is not None) and device in self.devices():
            return self
        return Array.from_buffer(pjrt.to_device(self.buffer, device), self.aval)

    def __setitem__(self, index, value):
        raise TypeError(
            "purejit arrays are immutable and do not support in-place item assignment; "
            "instead of x[idx] = y, use x = x.at[idx].set(y)"
        )

    @property
    def sharding(self):
        """The `purejit.sharding.NamedSharding` of an array split over devices, else (as in
        JAX, every array has one) the `SingleDeviceSharding` of its device."""
        named = None if self._buf is None else named_sharding_of(self._buf)
        return named if named is not None else SingleDeviceSharding(self.device)

    @property
    def addressable_shards(self):
        """This process's shards: objects with `.device`, `.index` (slices) and `.data`."""
        return self.buffer.addressable_shards

    def copy_to_host_async(self) -> None:
        """Start copying the data to host memory now, so a later read does not wait for it."""
        if self._host is None and (self._buf is not None or self._row is not None):
            self._check_alive()
            self.buffer.copy_to_host_async()

    def block_until_ready(self):
        if self._buf is None and self._row is not None:
            stack = self._row[0]
            if not stack.is_deleted():
                stack.block_until_ready()
            return self
        if self._buf is not None:
            try:
                self._buf.block_until_ready()
            except Exception as e:  # a failed host callback's own exception, if one failed
                if self._buf.is_deleted():  # donated: nothing to wait for, as below
                    return self
                callback_errors.reraise(e)
                raise
        return self

    def __getstate__(self):
        """Pickled as the buffer or host data: a row is materialised, never its stack."""
        if self._row is not None and self._buf is None and self._deleted_by is None:
            self.buffer
        slots = {n: getattr(self, n) for n in ("_buf", "_host", "aval", "_weak", "_deleted_by")}
        slots["_row"] = None
        return (None, slots)

    def __array__(self, dtype=None, copy=None):
        h = self.host
        if copy is False and dtype is not None and np.dtype(dtype) != h.dtype:
            raise ValueError(f"np.asarray(copy=False) cannot convert {h.dtype} to {dtype}")
        if dtype is not None:
            h = h.astype(dtype)  # a new, writable array
        elif copy:
            h = h.copy()  # np.array(x) is a writable copy; np.asarray(x) a read-only view
        elif h.flags.writeable:  # the array's own host data: a view that cannot change it
            h = h.view()
            h.flags.writeable = False
        return h

    def __format__(self, format_spec: str) -> str:
        """`f"{loss:.4f}"`: a 0-d array formats as its scalar, others as NumPy arrays."""
        h = self.host
        return format(h[()] if h.ndim == 0 else h, format_spec)

    def __jax_array__(self):
        """The PJRT buffer itself: `jax.numpy.asarray(x)` and `jax.jit` take a purejit
        Array without a copy (both libraries share the one PJRT client of the process)."""
        return self.buffer

    def __dlpack__(self, /, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the device buffer (the Array API's exchange protocol)."""
        return self.buffer.__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self):
        return self.buffer.__dlpack_device__()

    def item(self):
        return self.host.item()

    def tolist(self):
        return self.host.tolist()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __bool__(self):
        return bool(self.host)

    def __int__(self):
        return int(self.host)

    def __float__(self):
        return float(self.host)

    def __complex__(self):
        return complex(self.host)

    def __index__(self):
        if not irdt.is_integer(self.dtype):
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return int(self.host)

    def __hash__(self):
        raise TypeError("unhashable type: purejit.Array")

    def __repr__(self):
        if self.is_deleted():
            return "Array(<deleted>)"
        body = np.array2string(self.host, separator=", ", prefix="Array(")
        weak = ", weak_type=True" if self.weak_type else ""
        return f"Array({body}, dtype={self.dtype.name}{weak})"

    __str__ = lambda self: str(self.host)  # noqa: E731


def deleted_error_of(values) -> DeletedArrayError | None:
    """The error of the first deleted purejit Array among `values` (others are skipped), or
    None: what a failed execute raises instead of PJRT's "Buffer has been deleted or
    donated" when a buffer was donated in jaxlib's C++ dispatch."""
    for a in values:
        if type(a) is Array:
            error = a.deleted_error()
            if error is not None:
                return error
    return None


def as_array(x) -> Array:
    """Wrap any concrete array-like as an Array (no transfer yet)."""
    if type(x) is Array:
        return x
    if pjrt.is_buffer(x):
        dt = pdt.canonicalize(x.dtype)
        if dt == np.dtype(x.dtype):
            return Array(buf=x, weak_type=bool(getattr(x, "weak_type", False)))
    v, weak = host_value(x)
    if v is x and x.flags.writeable:  # the caller's array: a copy of its own, as JAX's
        v = x.copy()
    return Array(host=v, weak_type=weak)
