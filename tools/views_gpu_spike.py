# scratch (not committed): do DLPack row views of a stacked buffer work on this GPU?
import ctypes, gc, sys, time
import numpy as np
import jax, jax.numpy as jnp
from jax._src.lib import xla_client as xc

dev = jax.devices()[0]
print("platform", dev.platform, dev.device_kind, "id", dev.id, "hw", getattr(dev, "local_hardware_id", None))

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]
class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]
class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]
class DLManagedTensor(ctypes.Structure):
    pass
DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]
import atexit, weakref, os
keep = {}
deleted = []
live = []
def _cleanup():
    n = 0
    for r in live:
        a = r()
        if a is not None and not a.is_deleted():
            a.delete(); n += 1
    print("atexit deleted", n, "views; keep left", len(keep), flush=True)
if os.environ.get("SPIKE_ATEXIT") == "1":
    atexit.register(_cleanup)
@DELETER
def _deleter(p):
    key = ctypes.addressof(p.contents)
    deleted.append(key)
    keep.pop(key, None)
PyCapsule_New = ctypes.pythonapi.PyCapsule_New
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
DT = {np.dtype(np.float32): (2, 32), np.dtype(jnp.bfloat16): (4, 16)}

def view(base, byte_off, shape, dtype):
    ptr = base.unsafe_buffer_pointer()
    shp = (ctypes.c_int64 * len(shape))(*shape)
    m = DLManagedTensor()
    code, bits = DT[np.dtype(dtype)]
    dt = 1 if dev.platform == "cpu" else 2
    hw = getattr(dev, "local_hardware_id", 0) or 0
    m.dl_tensor = DLTensor(ptr + byte_off, DLDevice(dt, hw), len(shape), DLDataType(code, bits, 1), shp, None, 0)
    m.deleter = _deleter
    keep[ctypes.addressof(m)] = (m, shp, base)
    cap = PyCapsule_New(ctypes.addressof(m), b"dltensor", None)
    out = xc._xla.dlpack_managed_tensor_to_buffer(cap, dev, None)
    live.append(weakref.ref(out))
    return out

base = jax.device_put(np.arange(48 * 1024, dtype=np.float32).reshape(48, 1024), dev)
ptr = base.unsafe_buffer_pointer()
v = view(base, 5 * 4096, (1024,), np.float32)
print("zero copy:", v.unsafe_buffer_pointer() == ptr + 5 * 4096, "values ok:", np.array_equal(np.asarray(v), np.arange(5*1024, 6*1024, dtype=np.float32)))
r = jax.jit(lambda a: a * 2)(v)
print("jit on view ok:", np.array_equal(np.asarray(r), 2 * np.arange(5*1024, 6*1024, dtype=np.float32)))
# all 48 views and a computation over them
vs = [view(base, i * 4096, (1024,), np.float32) for i in range(48)]
s = jax.jit(lambda *a: sum(a))(*vs)
print("sum of 48 views ok:", np.allclose(np.asarray(s), np.asarray(base).sum(0)))
# misaligned offsets
for off in (4, 16, 64, 128, 256):
    try:
        w = view(base, off, (1000,), np.float32)
        out = np.asarray(jax.jit(lambda a: a + 1)(w))
        print("offset", off, "ok", "zero copy" if w.unsafe_buffer_pointer() == ptr + off else "COPIED", out[:2])
    except Exception as e:
        print("offset", off, "refused:", type(e).__name__, str(e)[:200])
# bf16 rows
bb = jax.device_put(np.ones((48, 3, 1024), jnp.bfloat16), dev)
bv = view(bb, 7 * 3 * 1024 * 2, (3, 1024), jnp.bfloat16)
print("bf16 view ok:", bv.unsafe_buffer_pointer() == bb.unsafe_buffer_pointer() + 7*3*1024*2, np.asarray(bv).dtype)
# base dropped by the user: views keep it alive
del base; gc.collect()
print("after del base:", np.asarray(vs[3])[:2], "deleted", len(deleted))
del vs, v, r, s; gc.collect()
print("after del views: keep", len(keep) - 1, "(bv still alive)")
# donation of a stack with a live view
st = jax.device_put(np.zeros((48, 1024), np.float32), dev)
lv = view(st, 4096, (1024,), np.float32)
try:
    out = jax.jit(lambda a: a + 1, donate_argnums=0)(st)
    out.block_until_ready()
    print("donate stack with live view: allowed; stack deleted:", st.is_deleted(), "same memory:", out.unsafe_buffer_pointer() == lv.unsafe_buffer_pointer() - 4096)
except Exception as e:
    print("donate stack with live view refused:", type(e).__name__, str(e)[:300])
# timing: making 384 views
base = jax.device_put(np.zeros((48, 65536), np.float32), dev)
t = time.perf_counter()
for _ in range(8):
    vv = [view(base, i * 65536 * 4, (65536,), np.float32) for i in range(48)]
dt = (time.perf_counter() - t) / (8 * 48)
print(f"one view: {dt*1e6:.1f} us")
print("DONE")
