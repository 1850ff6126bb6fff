"""The safety half of the fusion probe, run in a child process.

jaxlib 0.10.2's CPU compiler accepts `mhlo.fusion` regions but does not give the ops inside
them layouts, and some of its emitters then abort the whole process (`Check failed:
has_layout()`): measured for a transpose anywhere in a group, and for reshapes (of a
reduction's result, or of a group input to [n, 1]). purejit therefore never puts transposes
or reshapes in a group on this route (`fusion_routes.EXCLUDED_OPS`; a row-major reshape is a
free bitcast outside one) and allows only elementwise ops after a reduction. Some
elementwise ops are also missing inside a fusion, where XLA's expander passes do not reach
(`logistic`: "Unsupported elementwise operation"). This module checks, in a child process so
that an abort costs the probe and not the user's program, that every kind of group compiles
to one kernel with the right numbers, and which elementwise ops fail alone in a group (those
are left out of groups):

    python -m purejit.backend.fusion_check PLATFORM
        -> prints "OK" and then `{"unsupported": [...]}`, exits 0
"""

from __future__ import annotations

import json
import re
import sys

import numpy as np

from purejit.backend import pjrt, stablehlo
from purejit.backend.fusion_routes import xla_fusion_pass
from purejit.backend.hlo_kernels import kernels
from purejit.ir import Builder, TensorType, all_ops, get_op, interpret
from purejit.ir.registry import IRTypeError


def _cases():
    """(name, input types, builder of the group's body) for every kind of group allowed."""
    f32, s32 = np.dtype(np.float32), np.dtype(np.int32)
    m, v, col = TensorType((8, 16), f32), TensorType((16,), f32), TensorType((8, 1), f32)

    def const(b, value, dtype=f32, shape=(8, 16)):
        (c,) = b.op("constant", [], {"value": np.array(value, dtype)})
        return b.op("broadcast_in_dim", [c], {"shape": shape, "broadcast_dimensions": ()})[0]

    def reduce(b, x, dims, kind="add"):
        sb = Builder("r")
        p, q = sb.param(TensorType((), f32)), sb.param(TensorType((), f32))
        body = sb.finish(sb.op(kind, [p, q]))
        (z,) = b.op("constant", [], {"value": np.array(0, f32)})
        return b.op("reduce", [x, z], {"dimensions": dims}, [body])[0]

    def op(b, name, *xs, **attrs):
        return b.op(name, list(xs), attrs)[0]

    def bcast(b, a, dims):
        return op(b, "broadcast_in_dim", a, shape=(8, 16), broadcast_dimensions=dims)

    def sliced(b, x):
        return op(b, "slice", x, start_indices=(0, 0), limit_indices=(8, 8), strides=(1, 1))

    def cases():
        yield (
            "elementwise",
            [m],
            lambda b, x: op(b, "tanh", op(b, "add", op(b, "sine", x), const(b, 1.0))),
        )
        yield "row_bcast", [v, m], lambda b, a, x: op(b, "multiply", x, bcast(b, a, (1,)))
        yield "col_bcast", [col, m], lambda b, a, x: op(b, "subtract", x, bcast(b, a, (0, 1)))
        yield (
            "slice_reverse",
            [m],
            lambda b, x: op(b, "sine", op(b, "reverse", sliced(b, x), dimensions=(1,))),
        )
        yield (
            "iota",
            [m],
            lambda b, x: op(b, "add", x, op(b, "iota", shape=(8, 16), dtype=f32, dimension=1)),
        )
        yield (
            "select",
            [m],
            lambda b, x: op(
                b,
                "select",
                op(b, "compare", x, const(b, 0.5), comparison_direction="GT"),
                x,
                op(b, "negate", x),
            ),
        )
        yield (
            "convert",
            [TensorType((8, 16), s32)],
            lambda b, x: op(b, "convert", op(b, "multiply", x, const(b, 3, s32)), dtype=f32),
        )
        yield "row_reduce", [m], lambda b, x: op(b, "tanh", reduce(b, op(b, "sine", x), (1,)))
        yield "col_reduce", [m], lambda b, x: op(b, "exponential", reduce(b, x, (0,)))
        yield "full_reduce", [m], lambda b, x: reduce(b, op(b, "multiply", x, x), (0, 1), "maximum")
        yield (
            "bcast_reduce",
            [v, m],
            lambda b, a, x: reduce(b, op(b, "add", x, bcast(b, a, (1,))), (1,)),
        )

    return list(cases())


def check_module():
    """(IR function with one fusion group per case, example inputs)."""
    b = Builder("purejit_fusion_check")
    rng = np.random.default_rng(0)
    inputs, outs = [], []
    for _, types, body in _cases():
        params = []
        for t in types:
            params.append(b.param(t))
            inputs.append((rng.random(t.shape) * 4).astype(t.dtype))
        rb = Builder("region")
        result = body(rb, *[rb.param(t) for t in types])
        (out,) = b.op("fusion", params, {"kind": "loop"}, [rb.finish([result])])
        outs.append(out)
    return b.finish(outs), inputs


def _elementwise_region(name: str):
    """A one-op region applying op `name` to parameters of a dtype it accepts (f32, s32 or
    pred, tried in that order); None when it takes none of them."""
    opdef = get_op(name)
    for dt in (np.float32, np.int32, np.bool_):
        t = TensorType((4, 8), dt)
        for n in (1, 2, 3):
            attrs = {"comparison_direction": "LT"} if name == "compare" else {}
            if name == "convert":
                attrs = {"dtype": np.dtype(np.float16)}
            types = [t] * n
            if name == "select":
                types = [TensorType((4, 8), np.bool_)] + types[1:]
            try:
                opdef.infer(types, attrs, [])
            except (IRTypeError, KeyError, TypeError, ValueError, IndexError):
                continue
            rb = Builder("region")
            return rb.finish(rb.op(name, [rb.param(x) for x in types], attrs))
    return None


def _failing(names: list[str], regions: dict, platform: str) -> list[str]:
    """The ops among `names` that fail in a group: one compile for all of them; when it
    fails, the group its error names (by its `purejit.fusion.N` location) is dropped, or,
    without a name, the set is halved."""
    from jax.errors import JaxRuntimeError  # jax loads on first compile, not on import

    if not names:
        return []
    b = Builder("purejit_fusion_op_check")
    rng = np.random.default_rng(1)
    ins, outs = [], []
    for name in names:
        region = regions[name]
        ps = [b.param(p.type) for p in region.params]
        ins += [(rng.random(p.type.shape) * 3 + 0.2).astype(p.type.dtype) for p in region.params]
        outs += b.op("fusion", ps, {"kind": "loop"}, [region])
    fn = b.finish(outs)
    device = pjrt.devices(platform)[0]
    ctx = stablehlo.EmitContext()
    ctx.fusion_route = "mhlo.fusion"
    try:
        exe = pjrt.compile(
            stablehlo.emit(fn, ctx=ctx),
            fn.param_types,
            fn.result_types,
            device=device,
            disable_xla_passes=(xla_fusion_pass(platform),),
        )
    except JaxRuntimeError as e:
        if len(names) == 1:
            return list(names)
        named = re.search(r"purejit\.fusion\.(\d+)", str(e))
        if named and int(named.group(1)) < len(names):
            k = int(named.group(1))
            return [names[k]] + _failing(names[:k] + names[k + 1 :], regions, platform)
        half = len(names) // 2
        return _failing(names[:half], regions, platform) + _failing(names[half:], regions, platform)
    got = exe.execute([pjrt.to_device(x, device) for x in ins])
    want = interpret(fn, *ins)
    bad = []
    for name, g, w in zip(names, got, want):
        g64, w64 = np.asarray(g).astype(np.float64), np.asarray(w).astype(np.float64)
        if not np.allclose(g64, w64, rtol=1e-3, atol=1e-3, equal_nan=True):
            bad.append(name)
    return bad


def unsupported_elementwise(platform: str) -> list[str]:
    """Elementwise ops that fail to compile, or compute wrong numbers, alone in a group."""
    regions = {}
    for name, opdef in sorted(all_ops().items()):
        if "elementwise" in opdef.traits:
            region = _elementwise_region(name)
            if region is not None:
                regions[name] = region
    return _failing(sorted(regions), regions, platform)


def main(platform: str) -> int:
    fn, inputs = check_module()
    ctx = stablehlo.EmitContext()
    ctx.fusion_route = "mhlo.fusion"
    text = stablehlo.emit(fn, ctx=ctx)
    device = pjrt.devices(platform)[0]
    exe = pjrt.compile(
        text,
        fn.param_types,
        fn.result_types,
        device=device,
        disable_xla_passes=(xla_fusion_pass(platform),),
    )
    n = len(kernels(exe.hlo_text()))
    if n != len(fn.results):
        print(f"{len(fn.results)} groups became {n} kernels")
        return 1
    got = exe.execute([pjrt.to_device(x, device) for x in inputs])
    want = interpret(fn, *inputs)
    for (name, _, _), g, w in zip(_cases(), got, want):
        if not np.allclose(np.asarray(g), w, rtol=1e-4, atol=1e-4):
            print(f"wrong numbers for a {name} group")
            return 1
    print("OK")
    print(json.dumps({"unsupported": unsupported_elementwise(platform)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "cpu"))
