"""Eager execution: the trace at the bottom of the stack runs each primitive on the device.

Each primitive is compiled once per (op, attributes, operand types) and cached, as JAX does.
"""

from __future__ import annotations

from purejit import errors
from purejit.backend import pjrt, stablehlo
from purejit.backend.lowering import callback
from purejit.ir import Builder, print_function
from purejit.ir.printer import format_attr
from purejit.runtime.array import Array, as_array
from purejit.tracing import Trace, Tracer, infer_results, set_base_trace


class EvalTrace(Trace):
    def __init__(self):
        self.cache: dict = {}
        self.compiles = 0

    def process(self, name, args, attrs, regions, weak):
        arrays = []
        for a in args:
            if isinstance(a, Tracer):
                raise errors.UnexpectedTracerError(
                    f"{name}: a traced value {a.aval} escaped from the jit trace that made it "
                    f"(it was stored outside the function){errors.at(errors.user_location())}. "
                    "Return it from the jitted function instead."
                )
            arrays.append(as_array(a))
        avals = tuple([a.aval for a in arrays])
        if name == "constant":
            return [Array(host=attrs["value"], weak_type=bool(weak))]
        key = (
            name,
            avals,
            weak,
            tuple([(k, format_attr(v)) for k, v in attrs.items()]) if attrs else (),
            tuple([_region_text(r) for r in regions]) if regions else (),
        )
        entry = self.cache.get(key)
        if entry is None:
            try:
                out_avals = infer_results(name, list(avals), attrs, regions, weak, None)
            except errors.PurejitTypeError as e:
                raise errors.PurejitTypeError(f"{e}{errors.at(errors.user_location())}") from None
            entry = (self._compile(name, avals, attrs, regions), out_avals)
            self.cache[key] = entry
        exe, out_avals = entry
        outs = exe.execute_unchecked([_buffer(a) for a in arrays])
        return [Array.from_buffer(o, av) for o, av in zip(outs, out_avals)]

    def _compile(self, name, avals, attrs, regions):
        b = Builder(f"eager_{name}")
        params = [b.param(a.type) for a in avals]
        outs = b.op(name, params, attrs, regions)
        fn = b.finish(outs)
        self.compiles += 1
        return pjrt.compile(
            stablehlo.emit(fn),
            fn.param_types,
            fn.result_types,
            host_callbacks=callback.host_callbacks(fn),
        )


_SMALL = 64
_small_buffers: dict = {}
_region_texts: dict = {}


def _buffer(a: Array):
    """The device buffer of an eager operand; small host constants (the scalars of `x * 2`)
    are transferred once and shared, since eager ops never donate their inputs."""
    if a._buf is not None or a.size > _SMALL:
        return a.buffer
    h = a.host
    key = (h.dtype.str, h.shape, h.tobytes())
    buf = _small_buffers.get(key)
    if buf is None:
        if len(_small_buffers) > 4096:
            _small_buffers.clear()
        buf = _small_buffers[key] = a.buffer
    return buf


def _region_text(fn) -> str:
    hit = _region_texts.get(id(fn))
    if hit is None or hit[0] is not fn:
        if len(_region_texts) > 1024:
            _region_texts.clear()
        hit = _region_texts[id(fn)] = (fn, print_function(fn))
    return hit[1]


eval_trace = EvalTrace()
set_base_trace(eval_trace)
