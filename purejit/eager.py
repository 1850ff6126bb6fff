"""Eager execution: the trace at the bottom of the stack runs each primitive on the device.

Each primitive is compiled once per (op, attributes, operand types) and cached, as JAX does.
"""

from __future__ import annotations

from purejit import errors
from purejit.array import Array, as_array
from purejit.core import Trace, Tracer, infer_results
from purejit.ir import Builder, print_function
from purejit.ir.printer import format_attr


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
        loc = None
        avals = [a.aval for a in arrays]
        try:
            out_avals = infer_results(name, avals, attrs, regions, weak, None)
        except errors.PurejitTypeError as e:
            loc = errors.user_location()
            raise errors.PurejitTypeError(f"{e}{errors.at(loc)}") from None
        if name == "constant":
            return [Array(host=attrs["value"], weak_type=out_avals[0].weak_type)]
        key = (
            name,
            tuple(a.type for a in avals),
            tuple((k, format_attr(v)) for k, v in attrs.items()),
            tuple(print_function(r) for r in regions),
        )
        exe = self.cache.get(key)
        if exe is None:
            exe = self._compile(name, avals, attrs, regions)
            self.cache[key] = exe
        outs = exe.execute([a.buffer for a in arrays])
        return [Array(buf=o, weak_type=av.weak_type) for o, av in zip(outs, out_avals)]

    def _compile(self, name, avals, attrs, regions):
        from purejit.backend import pjrt, stablehlo

        b = Builder(f"eager_{name}")
        params = [b.param(a.type) for a in avals]
        outs = b.op(name, params, attrs, regions)
        fn = b.finish(outs)
        self.compiles += 1
        return pjrt.compile(stablehlo.emit(fn), fn.param_types, fn.result_types)


eval_trace = EvalTrace()
