"""Zero-copy views of pieces of one device buffer (a stack), through jaxlib's DLPack import.

PJRT can wrap memory it does not own as a buffer (`CreateViewOfDeviceBuffer`); jaxlib reaches
it through its DLPack import. `views` hands jaxlib a `DLManagedTensor` whose data pointer is
a piece of a stacked buffer (a row, or a parameter's columns of a packed row: contiguous
either way), so the view's `unsafe_buffer_pointer()` is the stack's plus the piece's byte
offset, with no copy. The tensor's deleter, which jaxlib calls when the view's buffer dies,
drops the stack from a keep-alive table: the stack lives until its last view does.

Alignment: XLA reads a program's parameters as aligned buffers. jaxlib's CPU client copies
data that is not 64-byte aligned when it imports it (checked on jaxlib 0.10.2: offsets of 4
to 32 bytes came back at another address, 64 at the stack's own), and XLA's GPU back end
checks each entry parameter's address against 16 bytes (measured on an H200: a view at
offset 4 failed with "Address of buffer 1 must be a multiple of 10" (hex), views at 16, 64,
128 and 256 ran, zero copy). A piece whose address is not a multiple of `alignment()` is not
viewed: it is a real copy of that piece instead (read on the host and put back on the
device), and so is a piece of a dtype DLPack cannot name. `views` says which it made
(`is_view_of` checks an address).

A view carries no definition event: PJRT orders a reader of the view after nothing, so
`views` waits until the stack is written (`block_until_ready`) before making them.

At exit: jaxlib destroys the buffers still alive while the interpreter is finalising, and the
DLPack deleter it then calls is a Python function (ctypes): it crashed the process on a GPU
(rc 139). The first view made registers an `atexit` handler (`release_all`, after jax's own
handlers were registered, so it runs before them) that deletes every live view's buffer,
which runs the deleter while Python is whole; the deleter does nothing after that.

Donating the stack while views of it live hands their memory to the program's output (jaxlib
allows it: a view then reads what the program wrote). A caller that donates a stack first
checks that no view of it lives outside what it donates (`live_views_of`).
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import threading
import time
import weakref

import numpy as np

from purejit.backend import pjrt


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

# DLPack's type codes (dlpack.h: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLComplex 5,
# kDLBool 6)
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
# DLPack's device types: kDLCPU 1, kDLCUDA 2, kDLROCM 10
_DEVICE_TYPES = {"cpu": 1, "cuda": 2, "gpu": 2, "rocm": 10}

# address of a live view's DLManagedTensor -> [the struct, its shape array, the stack, a weak
# reference to the view's buffer]
_KEEP: dict[int, list] = {}
# id(stack) -> how many views of it live
_COUNT: dict[int, int] = {}
_LOCK = threading.RLock()
# how many views were made in this process (`made`)
_MADE = [0]
# [whether `release_all` is registered, whether it ran]
_EXIT = [False, False]


@_DELETER
def _deleter(managed):
    if _EXIT[1]:  # after `release_all`: the interpreter may be going away, touch nothing
        return
    key = ctypes.addressof(managed.contents)
    with _LOCK:
        entry = _KEEP.pop(key, None)
        if entry is not None:
            sid = id(entry[2])
            left = _COUNT.get(sid, 1) - 1
            if left:
                _COUNT[sid] = left
            else:
                _COUNT.pop(sid, None)


@functools.lru_cache(maxsize=None)
def _capsule_new():
    fn = ctypes.pythonapi.PyCapsule_New
    fn.restype = ctypes.py_object
    fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return fn


@functools.lru_cache(maxsize=None)
def _import():
    """jaxlib's DLPack import of a managed tensor as a buffer, or None when this jaxlib
    has none."""
    try:
        from jaxlib import xla_client

        return xla_client._xla.dlpack_managed_tensor_to_buffer
    except (ImportError, AttributeError):
        return None


def alignment(device=None) -> int:
    """The byte alignment a piece needs to be viewed on `device` (default: the default
    device): 64 on CPU (what jaxlib's CPU client imports without copying), 16 on a GPU
    (what XLA's GPU back end checks of a program's parameters; nothing found asks more)."""
    dev = device or pjrt.default_device()
    return 64 if dev.platform == "cpu" else 16


def _dl_dtype(dtype: np.dtype) -> _DLDataType | None:
    dtype = np.dtype(dtype)
    if dtype.name == "bfloat16":
        return _DLDataType(4, 16, 1)
    code = _CODES.get(dtype.kind)
    if code is None or dtype.byteorder not in ("=", "|", "<"):
        return None
    return _DLDataType(code, dtype.itemsize * 8, 1)


def available(device=None) -> bool:
    """Whether views can be made on `device` (this jaxlib imports DLPack tensors there)."""
    dev = device or pjrt.default_device()
    return _import() is not None and dev.platform in _DEVICE_TYPES


def _view(stack, address: int, shape: tuple, dl_dtype: _DLDataType, device):
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    m = _DLManagedTensor()
    dev = _DLDevice(_DEVICE_TYPES[device.platform], getattr(device, "local_hardware_id", 0) or 0)
    m.dl_tensor = _DLTensor(address, dev, len(shape), dl_dtype, dims, None, 0)
    m.manager_ctx = None
    m.deleter = _deleter
    key = ctypes.addressof(m)
    with _LOCK:
        if not _EXIT[0]:
            _EXIT[0] = True
            atexit.register(release_all)
        _KEEP[key] = [m, dims, stack, None]
        _MADE[0] += 1
        _COUNT[id(stack)] = _COUNT.get(id(stack), 0) + 1
    capsule = _capsule_new()(key, b"dltensor", None)
    try:
        buf = _import()(capsule, device, None)
    except Exception:
        _deleter(ctypes.pointer(m))  # jaxlib did not take it: nothing will call the deleter
        raise
    with _LOCK:
        _KEEP[key][3] = weakref.ref(buf)
    return buf


def release_all() -> None:
    """Delete the buffer of every live view (their deleters run now), then make the deleter
    do nothing: the `atexit` handler (see the module docstring)."""
    with _LOCK:
        refs = [e[3] for e in _KEEP.values() if e[3] is not None]
    for ref in refs:
        buf = ref()
        if buf is not None and not buf.is_deleted():
            try:
                buf.delete()
            except Exception:  # noqa: S110  (at exit: nothing to report it to)
                pass
    # a client may run a deleter after `delete` returns (once the buffer's last use is
    # done): give those a moment to run while Python is whole
    deadline = time.monotonic() + 2.0
    while refs and live_views() and time.monotonic() < deadline:
        time.sleep(0.001)
    _EXIT[1] = True


def views(stack, pieces) -> tuple[list, list[bool]]:
    """Buffers for pieces of `stack` (a one-device jax.Array), each a zero-copy view where
    it can be, else a copy.

    Args:
        stack: the device buffer the pieces lie in (row-major, dense).
        pieces: `(element offset, shape)` per piece; each piece is the contiguous elements
            `offset .. offset + size` of the stack taken as a flat array.
    Returns:
        (the buffers, and for each whether it is a view). A piece is copied when it is not
        `alignment()`-aligned, when DLPack has no code for the dtype, or when this jaxlib
        cannot import DLPack tensors on the stack's device; jaxlib's own copy of an import
        (an address not the piece's) counts as a copy.
    """
    (device,) = stack.devices()
    # a view has no event of its own: PJRT would not wait for the program still writing
    # the stack before a reader of the view runs, so the stack must be written first
    stack.block_until_ready()
    dtype = np.dtype(stack.dtype)
    dl_dtype = _dl_dtype(dtype)
    ok = dl_dtype is not None and available(device)
    base = stack.unsafe_buffer_pointer() if ok else 0
    align = alignment(device)
    out, viewed, host = [], [], None
    for offset, shape in pieces:
        address = base + offset * dtype.itemsize
        if ok and address % align == 0:
            buf = _view(stack, address, tuple(shape), dl_dtype, device)
            if buf.unsafe_buffer_pointer() == address:
                out.append(buf)
                viewed.append(True)
                continue
        # a real copy of the piece, read on the host
        if host is None:
            host = np.asarray(stack).reshape(-1)
        size = int(np.prod(shape, dtype=np.int64))
        piece = np.array(host[offset : offset + size]).reshape(shape)
        out.append(pjrt.to_device(piece, device))
        viewed.append(False)
    return out, viewed


def is_view_of(buf, stack, offset: int) -> bool:
    """Whether `buf` is the memory of `stack` at element `offset` (same device, address)."""
    try:
        if buf.is_deleted() or stack.is_deleted():
            return False
        itemsize = np.dtype(stack.dtype).itemsize
        return buf.unsafe_buffer_pointer() == stack.unsafe_buffer_pointer() + offset * itemsize
    except Exception:  # a buffer on several devices, or one jaxlib cannot address
        return False


def live_views_of(stack) -> int:
    """How many views of `stack` are alive."""
    with _LOCK:
        return _COUNT.get(id(stack), 0)


def made() -> int:
    """How many views were made in this process (benches and tests count them)."""
    return _MADE[0]


def live_views() -> int:
    """How many views of any stack are alive (the keep-alive table's size)."""
    with _LOCK:
        return len(_KEEP)
