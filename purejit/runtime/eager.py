"""Eager execution: the trace at the bottom of the stack runs each primitive on the device.

As JAX's `apply_primitive` does, each primitive with fixed attributes is a cached jit of
itself (`Primitive`): compiled once per operand signature, and called through jaxlib's C++
jit dispatch where this jaxlib has it, so a call whose signature was seen before runs the
executable and builds its outputs with no Python in between. The primitives live in a
least-recently-used table bounded by `config.eager_cache_size`; an evicted one drops its
executables. Small host constants (the Python scalars of `x * 2`) are transferred once and
shared, and shape-only ops on them (the broadcast of that scalar) run on the host.
"""

from __future__ import annotations

import collections
import threading

import numpy as np

from purejit import errors
from purejit.backend import cpp_jit, pjrt, stablehlo
from purejit.backend.lowering import callback
from purejit.config import config
from purejit.ir import Builder, get_op, print_function
from purejit.ir.ops.elementwise import convert_array
from purejit.ir.printer import format_attr
from purejit.runtime import float_checks
from purejit.runtime.array import Array, DeletedArrayError, as_array, deleted_error_of
from purejit.tracing import ShapedArray, Trace, Tracer, infer_results, set_base_trace

_new = object.__new__


def _compile_plain(module, param_types, result_types, *, host_callbacks=(), device=None):
    """Compile without the persistent cache (the compiler installs a cache-aware one)."""
    return pjrt.compile(
        module, param_types, result_types, host_callbacks=host_callbacks, device=device
    )


class Primitive:
    """One op with fixed attributes, regions and operand weak types, run eagerly: its
    executables by operand avals, and its C++ dispatcher (None without one)."""

    __slots__ = ("name", "attrs", "regions", "weak", "in_weak", "sigs", "cpp", "__weakref__")

    def __init__(self, name, attrs, regions, weak, in_weak):
        self.name, self.attrs, self.regions, self.weak = name, attrs, regions, weak
        self.in_weak = in_weak
        # (operand avals, config.trace_context) -> (Executable, output avals, C++ may run it)
        self.sigs: dict = {}
        self.cpp = None
        if cpp_jit.available():
            self.cpp = cpp_jit.make(
                f"eager_{name}",
                self._python,
                self._cache_miss,
                static_argnums=(),
                static_argnames=(),
                key=self,
                registry=_registries().inputs,
            )

    def entry(self, bufs):
        """The executable, output avals and C++ eligibility for these operand buffers, and
        the device they run on (None: the default device)."""
        avals = tuple(
            [ShapedArray(tuple(b.shape), np.dtype(b.dtype), w) for b, w in zip(bufs, self.in_weak)]
        )
        try:  # operands committed to another device run there, as in JAX
            device = pjrt.committed_device_of(bufs, self.name)
        except ValueError as e:
            raise ValueError(f"{e}{errors.at(errors.user_location())}") from None
        # the options that change a program (x64, default device...) are part of the key
        key = (avals, config.trace_context, device)
        entry = self.sigs.get(key)
        if entry is None:
            with _compile_lock:
                entry = self.sigs.get(key)
                if entry is None:
                    entry = self.sigs[key] = (*self._compile(avals, device), device)
        return entry

    @staticmethod
    def _placed(bufs, device):
        return bufs if device is None else [pjrt.on_device(b, device) for b in bufs]

    def _compile(self, avals, device):
        name, attrs, regions = self.name, self.attrs, self.regions
        try:
            out_avals = infer_results(name, list(avals), attrs, regions, self.weak, None)
        except errors.PurejitTypeError as e:
            raise errors.PurejitTypeError(f"{e}{errors.at(errors.user_location())}") from None
        b = Builder(f"eager_{name}")
        params = [b.param(a.type) for a in avals]
        fn = b.finish(b.op(name, params, attrs, regions))
        callbacks = callback.host_callbacks(fn)
        eval_trace.compiles += 1
        exe = eval_trace.compile_program(
            stablehlo.emit(fn),
            fn.param_types,
            fn.result_types,
            host_callbacks=callbacks,
            device=device,
        )
        # C++ may run it when it is one plain program with outputs and no host callbacks
        fast = bool(out_avals) and not callbacks and exe.device is not None
        return exe, tuple(out_avals), fast

    def _python(self, *bufs):
        exe, out_avals, _, device = self.entry(bufs)
        outs = exe.execute_unchecked(self._placed(list(bufs), device))
        return [_from_buffer(o, av) for o, av in zip(outs, out_avals)]

    def _cache_miss(self, *bufs):
        """jaxlib's C++ dispatch calls this on a miss: run in Python, and hand C++ what
        runs the next calls of this signature where it can (all operands on the device
        the executable runs on)."""
        exe, out_avals, fast, where = self.entry(bufs)
        outs = exe.execute_unchecked(self._placed(list(bufs), where))
        out = [_from_buffer(o, av) for o, av in zip(outs, out_avals)]
        data = None
        device = exe.device
        if fast and all(cpp_jit.is_device_buffer_on(b, device) for b in bufs):
            leaves, treedef = cpp_jit.output_treedef(_registries(), out)
            data = cpp_jit.fastpath_data(
                exe._exe,
                device,
                treedef,
                leaves,
                [(a.shape, a.dtype, a.weak_type) for a in out_avals],
                len(bufs),
            )
        return out, data, False

    def clear(self):
        self.sigs.clear()
        if self.cpp is not None:
            self.cpp._clear_cache()


class _Cache(collections.OrderedDict):
    """Primitives by key, least recently used first; bounded by `config.eager_cache_size`
    (each evicted primitive drops its executables, in Python and in C++)."""

    def put(self, key, prim):
        with _compile_lock:
            self[key] = prim
            self.trim()

    def trim(self, _value=None):
        """Evict the least recently used primitives beyond the bound (also called when the
        bound is lowered: `config.update("eager_cache_size", n)`)."""
        with _compile_lock:
            bound = max(1, int(config.read("eager_cache_size")))
            while len(self) > bound:
                _, old = self.popitem(last=False)
                old.clear()


class EvalTrace(Trace):
    def __init__(self):
        self.cache = _Cache()
        self.compiles = 0
        # how an eager program compiles; the compiler installs one that reads (and, for
        # slow compiles, writes) the persistent compile cache
        self.compile_program = _compile_plain

    def process(self, name, args, attrs, regions, weak):
        if name == "constant":
            return [Array(host=attrs["value"], weak_type=bool(weak))]
        if name in _HOST_FOLD:
            folded = _fold_on_host(name, args, attrs, regions, weak)
            if folded is not None:
                return folded
        bufs = []
        flags = []
        for a in args:
            if a.__class__ is not Array:
                if isinstance(a, Tracer):
                    raise errors.UnexpectedTracerError(
                        f"{name}: a traced value {a.aval} escaped from the jit trace that made "
                        f"it (it was stored outside the function)"
                        f"{errors.at(errors.user_location())}. "
                        "Return it from the jitted function instead."
                    )
                a = as_array(a)
            buf = a._buf
            bufs.append(_buffer(a) if buf is None else buf)
            flags.append(a._weak)
        try:
            akey = tuple([(k, v.__class__, v) for k, v in attrs.items()]) if attrs else ()
            key = (name, weak, tuple(flags), akey, _regions_key(regions) if regions else ())
            prim = self.cache[key]
            self.cache.move_to_end(key)
        except KeyError:
            prim = Primitive(name, attrs, tuple(regions), weak, tuple(flags))
            self.cache.put(key, prim)
        except TypeError:  # an unhashable attribute value: key by its printed form
            akey = tuple([(k, format_attr(v)) for k, v in attrs.items()])
            key = (name, weak, tuple(flags), akey, _regions_key(regions) if regions else ())
            prim = self.cache.get(key)
            if prim is None:
                prim = Primitive(name, attrs, tuple(regions), weak, tuple(flags))
                self.cache.put(key, prim)
        try:
            outs = prim.cpp(*bufs) if prim.cpp is not None else prim._python(*bufs)
        except Exception:
            _raise_if_donated(name, args)
            raise
        if float_checks.STATE[0] or float_checks.STATE[1]:  # debug_nans / debug_infs
            float_checks.check(name, outs)
        return outs


def _raise_if_donated(name: str, args) -> None:
    """purejit's error where an operand's buffer was donated to a jitted call that ran in
    jaxlib's C++ dispatch (jaxlib's own error names neither the op nor the array)."""
    error = deleted_error_of(args)
    if error is not None:
        raise DeletedArrayError(f"{name}: {error}{errors.at(errors.user_location())}")


def _from_buffer(buf, aval: ShapedArray) -> Array:
    a = _new(Array)
    a._buf = buf
    a._host = a._deleted_by = a._row = None
    a.aval = aval
    a._weak = aval.weak_type
    return a


# ---- C++ outputs ----------------------------------------------------------------------------


def _to_parts(a: Array):
    return (a._buf,), a.aval


def _from_parts(aval, children):
    # Array.from_buffer inlined: C++ calls this once per output of every fast call
    a = _new(Array)
    a._buf = children[0]
    a._host = a._deleted_by = a._row = None
    a.aval = aval
    a._weak = aval.weak_type
    return a


_registry_box: list = []


def _registries():
    if not _registry_box:
        _registry_box.append(cpp_jit.registries(Array, "_buf", "_weak", _to_parts, _from_parts))
    return _registry_box[0]


_compile_lock = threading.RLock()

# ---- host constants -------------------------------------------------------------------------

_SMALL = 64
_small_buffers: dict = {}
_scalars: dict = {}  # (Python scalar, dtype, shape) -> (aval, host value, buffer)
_folded: dict = {}  # (op, attributes, host operand) -> (output aval, host value, buffer)
_region_texts: dict = {}
# data-movement ops whose NumPy reference is exact: run on small host constants without a
# device round trip (the broadcast of the scalar in `x * 2`)
_HOST_FOLD = frozenset({"broadcast_in_dim", "reshape"})


def _fold_on_host(name, args, attrs, regions, weak):
    """The results of a data-movement op on small host constants, computed on the host (its
    NumPy reference is exact) and transferred once per distinct value, or None when an
    operand is on the device (or not small) or an output is not small."""
    if len(args) != 1 or regions:
        return None
    (a,) = args
    if a.__class__ is not Array:
        if isinstance(a, Tracer):
            return None
        a = as_array(a)
    h = a._host
    if a._buf is not None or h is None or h.size > _SMALL:
        return None
    try:
        akey = tuple([(k, v.__class__, v) for k, v in attrs.items()])
        key = (name, weak, a.aval, h.tobytes(), akey)
        hit = _folded.get(key)
    except TypeError:  # an unhashable attribute value
        return None
    if hit is None:
        try:
            (aval,) = infer_results(name, [a.aval], attrs, regions, weak, None)
        except (errors.PurejitTypeError, ValueError):
            return None  # the device path raises it, with the user's line
        if aval.size > _SMALL:
            return None
        (out,) = get_op(name).reference([h], attrs, [], None)
        host = np.array(out, dtype=aval.dtype)  # a copy: 0-d stays 0-d
        host.setflags(write=False)
        if len(_folded) > 4096:
            _folded.clear()
        hit = _folded[key] = (aval, host, pjrt.to_device(host))
    aval, host, buf = hit
    if buf.is_deleted():  # donated by someone who was handed it: transfer again
        buf = pjrt.to_device(host)
        _folded[key] = (aval, host, buf)
    out = _from_buffer(buf, aval)
    out._host = host
    return [out]


def scalar_like(value, dtype: np.dtype, shape: tuple) -> Array:
    """The Python scalar `value` converted to `dtype` and broadcast to `shape` (at most
    `_SMALL` elements), as a strongly typed Array already on the device: eager arithmetic
    with a Python scalar (`x * 1.01`) transfers each distinct constant once.

    Only for eager use: under a trace the broadcast must stay an op of the program."""
    key = (value.__class__, value.hex() if value.__class__ is float else value, dtype, shape)
    hit = _scalars.get(key)
    if hit is None or hit[2].is_deleted():
        host = np.array(np.broadcast_to(convert_array(np.array(value), dtype), shape))
        host.setflags(write=False)
        if len(_scalars) > 4096:
            _scalars.clear()
        hit = _scalars[key] = (ShapedArray(shape, dtype, False), host, pjrt.to_device(host))
    out = _from_buffer(hit[2], hit[0])
    out._host = hit[1]
    return out


def _buffer(a: Array):
    """The device buffer of an eager operand; small host constants (the scalars of `x * 2`)
    are transferred once and shared, since eager ops never donate their inputs."""
    if a._buf is not None or a._host is None or a._host.size > _SMALL:
        return a.buffer
    h = a.host
    key = (h.dtype.str, h.dtype.name, h.shape, h.tobytes())
    buf = _small_buffers.get(key)
    if buf is None or buf.is_deleted():
        if len(_small_buffers) > 4096:
            _small_buffers.clear()
        buf = _small_buffers[key] = a.buffer
    return buf


def _regions_key(regions) -> tuple:
    return tuple([_region_text(r) for r in regions])


def _region_text(fn) -> str:
    hit = _region_texts.get(id(fn))
    if hit is None or hit[0] is not fn:
        if len(_region_texts) > 1024:
            _region_texts.clear()
        hit = _region_texts[id(fn)] = (fn, print_function(fn))
    return hit[1]


eval_trace = EvalTrace()
config.watch("eager_cache_size", eval_trace.cache.trim)  # a lowered bound applies at once
set_base_trace(eval_trace)
