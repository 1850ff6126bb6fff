"""NumPy-level functions outside jit as cached jits of themselves, dispatched in C++.

JAX's `jnp.sin` or `jnp.multiply` is itself a jitted function: called outside a trace, it
goes straight to jaxlib's C++ dispatch, which finds the executable for the arguments'
signature and runs it with no Python between (`x * 1.01` included: the Python float is an
argument of the program). `eager_function(f)` gives a purejit.numpy function the same path:

- the function is the C++ dispatcher; outside any trace, on a miss, purejit traces `f` at
  the arguments' abstract values into one program, compiles it (through the eager compile
  of `EvalTrace.compile_program`), runs it, and hands C++ the executable for the next calls
  of that signature;
- under a trace (its thread's C++ key then makes every call miss), with jit disabled, with
  keyword arguments, or with an argument that is not an array or a scalar, the miss runs `f`
  as before (op by op when eager).

The programs live in one least-recently-used table bounded by `config.eager_cache_size`
(jaxlib's own cache of C++ entries is bounded too).
"""

from __future__ import annotations

import collections
import functools
import threading

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.backend import cpp_jit, pjrt, stablehlo
from purejit.backend.lowering import callback
from purejit.config import config
from purejit.runtime import float_checks
from purejit.runtime.array import Array, as_array
from purejit.runtime.eager import _buffer, _from_buffer, _registries, eval_trace
from purejit.tracing import current_trace, trace_depth, trace_to_function

_SCALARS = (bool, int, float, complex)
_lock = threading.RLock()
_programs: collections.OrderedDict = collections.OrderedDict()  # (fn, avals) -> entry


class Program:
    """One compiled eager program: its executable, output avals, and whether C++ may run it
    (one device, no host callbacks)."""

    __slots__ = ("exe", "out_avals", "fast", "device", "name")

    def __init__(self, exe, out_avals, fast, device=None, name: str = "program"):
        self.exe, self.out_avals, self.fast, self.device = exe, out_avals, fast, device
        self.name = name

    def run(self, arrays) -> list:
        """The outputs for purejit Arrays `arrays` (host ones are transferred, and buffers
        elsewhere copied to the program's device when it is not the default one)."""
        bufs = [a._buf if a._buf is not None else _buffer(a) for a in arrays]
        if self.device is not None:
            bufs = [pjrt.on_device(b, self.device) for b in bufs]
        outs = self.exe.execute_unchecked(bufs)
        outs = [_from_buffer(o, av) for o, av in zip(outs, self.out_avals)]
        if float_checks.STATE[0] or float_checks.STATE[1]:  # debug_nans / debug_infs
            float_checks.check(self.name, outs)
        return outs


def program(key, fun, avals: tuple, name: str, device=None) -> Program | None:
    """The eager program `fun` (a function of tracers returning a list) traced at `avals`,
    compiled for `device` (None: the default one) once per `key` (which names `fun` and
    everything it depends on besides the avals) and kept in the least-recently-used table;
    None when `fun` captures a value of an outer trace (it must then run op by op)."""
    # options that change the program (default device...), and the device it runs on
    key = (key, config.trace_context, device)
    with _lock:
        prog = _programs.get(key)
        if prog is not None:
            _programs.move_to_end(key)
            return prog
        traced = trace_to_function(fun, list(avals), name=name)
        if traced.captures:
            return None
        fn = traced.fn
        callbacks = callback.host_callbacks(fn)
        eval_trace.compiles += 1
        exe = eval_trace.compile_program(
            stablehlo.emit(fn),
            fn.param_types,
            fn.result_types,
            host_callbacks=callbacks,
            device=device,
        )
        fast = not callbacks and exe.device is not None
        prog = _programs[key] = Program(exe, tuple(traced.out_avals), fast, device, name)
        _trim()
        return prog


def _trim(_value=None) -> None:
    """Drop the least recently used programs beyond `config.eager_cache_size` (also when
    the bound is lowered)."""
    with _lock:
        bound = max(1, int(config.read("eager_cache_size")))
        while len(_programs) > bound:
            _programs.popitem(last=False)


config.watch("eager_cache_size", _trim)


class EagerFunction:
    """`f` (positional arrays and scalars in, one array out) with a C++ dispatcher for its
    eager calls; `cpp` is None where this jaxlib has no C++ dispatch."""

    def __init__(self, f, name: str):
        self.f = f
        self.name = name
        self.cpp = None
        if cpp_jit.available():
            self.cpp = cpp_jit.make(
                name,
                f,
                self._cache_miss,
                static_argnums=(),
                static_argnames=(),
                key=self,
                registry=_registries().inputs,
            )

    def _cache_miss(self, *args, **kwargs):
        if kwargs or current_trace() is not eval_trace or config.jit_disabled:
            return self.f(*args, **kwargs), None, False
        arrays = []
        for a in args:
            if a.__class__ is Array:
                arrays.append(a)
            elif isinstance(a, _SCALARS) or (
                isinstance(a, (np.ndarray, np.generic)) and pdt.canonicalize(a.dtype) == a.dtype
            ):
                try:
                    arrays.append(as_array(a))
                except OverflowError:  # a Python int beyond the weak int range: `f` names
                    return self.f(*args), None, False  # the op and the dtype that holds it
            else:  # a tracer, a list, an unknown type: `f` decides (and errors name it)
                return self.f(*args), None, False
        leaves = cpp_jit.flatten(_registries(), args)[0]  # what C++ saw, before transfers
        avals = tuple([a.aval for a in arrays])
        try:  # operands committed to another device run there, as in JAX
            device = pjrt.committed_device_of(
                [a._buf for a in arrays if a._buf is not None], self.name
            )
        except ValueError as e:
            raise ValueError(f"{e}{errors.at(errors.user_location())}") from None
        prog = program((self, avals), self._traced, avals, self.name, device)
        if prog is None or len(prog.out_avals) != 1:
            return self.f(*args), None, False
        (out,) = prog.run(arrays)
        data = None
        if float_checks.enabled():  # debug_nans / debug_infs: `run` checked it; C++ would not
            return out, None, False
        # only from a thread with no trace at all: a C++ entry kept under the key of a
        # thread with a trace on its stack would run concrete operands inside a later jit
        if prog.fast and trace_depth() == 1 and _leaves_fit(leaves, arrays, prog.exe):
            outs, treedef = cpp_jit.output_treedef(_registries(), out)
            a = prog.out_avals[0]
            data = cpp_jit.fastpath_data(
                prog.exe._exe, prog.exe.device, treedef, outs, [(a.shape, a.dtype, a.weak_type)],
                len(arrays),
            )  # fmt: skip
        return out, data, False

    def _traced(self, *tracers):
        return [self.f(*tracers)]


def _leaves_fit(leaves: list, arrays: list, exe) -> bool:
    """Whether C++'s view of the arguments (`leaves`) is one value per parameter that its
    fast path passes as the program expects: a device buffer of the parameter's dtype on
    the program's device, or a scalar / NumPy value C++ converts to the parameter's type."""
    if len(leaves) != len(arrays) or cpp_jit.jax_x64() != config.enable_x64:
        return False
    device = exe.device
    for given, arr, want in zip(leaves, arrays, exe.param_types):
        if given is None:
            return False
        if cpp_jit.is_device_buffer_on(given, device):
            if arr._buf is not given or arr.dtype != want.dtype:
                return False
        elif isinstance(given, (np.ndarray, np.generic, *_SCALARS)):
            if arr.shape != want.shape or arr.dtype != want.dtype:
                return False
        else:
            return False
    return True


def eager_function(f):
    """`f` with its eager calls dispatched as a cached jit of itself (see the module
    docstring): jaxlib's C++ dispatcher, named and documented as `f`; `f` itself where
    there is no C++ dispatch. Under a trace the dispatcher misses and runs `f`."""
    ef = EagerFunction(f, f.__name__)
    if ef.cpp is None:
        return f
    cpp = functools.update_wrapper(ef.cpp, f)
    cpp._eager = ef
    return cpp


def clear() -> None:
    """Drop every eager program (tests; C++ entries go with their dispatchers)."""
    with _lock:
        _programs.clear()


__all__ = ["EagerFunction", "Program", "clear", "eager_function", "program"]
