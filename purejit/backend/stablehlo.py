"""Lowers a purejit IR function to a StableHLO module (MLIR text, generic op form).

Every IR op has a lowering rule here, registered with `@lowering("name")`. A rule gets the
emission context, the op, and the MLIR names of its operands, and returns the MLIR names of
its results. Text generation is used instead of the builder API because it is ~10x cheaper;
`verify_module` parses the text with jaxlib's MLIR bindings to check it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from purejit.ir import Function, Op, TensorType, dtypes

_MLIR_DTYPE = {
    "pred": "i1",
    "s8": "i8",
    "s16": "i16",
    "s32": "i32",
    "s64": "i64",
    "u8": "ui8",
    "u16": "ui16",
    "u32": "ui32",
    "u64": "ui64",
    "bf16": "bf16",
    "f16": "f16",
    "f32": "f32",
    "f64": "f64",
    "c64": "complex<f32>",
    "c128": "complex<f64>",
}


def mlir_type(t: TensorType) -> str:
    el = _MLIR_DTYPE[dtypes.dtype_name(t.dtype)]
    if not t.shape:
        return f"tensor<{el}>"
    return f"tensor<{'x'.join(map(str, t.shape))}x{el}>"


def i64_array(xs) -> str:
    xs = list(xs)
    return f"array<i64: {', '.join(map(str, xs))}>" if xs else "array<i64>"


def dense(value: np.ndarray) -> str:
    """A `dense<...> : tensor<...>` attribute holding `value` exactly."""
    t = TensorType(value.shape, value.dtype)
    flat = value.reshape(-1)
    if value.dtype == np.bool_:
        if flat.size and (flat == flat[0]).all():
            body = "true" if flat[0] else "false"
        else:
            body = "[" + ", ".join("true" if b else "false" for b in flat) + "]"
            body = body if value.ndim <= 1 else _nested_bool(value)
        return f"dense<{body}> : {mlir_type(t)}"
    if flat.size and (flat == flat[0]).all() and not np.isnan(flat.astype(np.complex128)).any():
        flat = flat[:1]  # a splat: one element in hex
    data = np.ascontiguousarray(flat).tobytes().hex().upper()
    return f'dense<"0x{data}"> : {mlir_type(t)}'


def _nested_bool(value):
    if value.ndim == 0:
        return "true" if value else "false"
    return "[" + ", ".join(_nested_bool(v) for v in value) + "]"


class EmitContext:
    """Accumulates MLIR lines; hands out SSA names."""

    def __init__(self):
        self.lines: list[str] = []
        self.counter = 0
        self.indent = "    "
        self.module_ops: dict[str, str] = {}  # module-level ops by symbol (e.g. sdy.mesh)

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def op(
        self,
        name: str,
        operands: list[str],
        operand_types: list[TensorType],
        result_types: list[TensorType],
        attrs: str = "",
        regions: list[str] = (),
    ) -> list[str]:
        """Emit one generic-form op and return its result names."""
        res = self.fresh()
        n = len(result_types)
        head = f"{res}:{n} = " if n > 1 else (f"{res} = " if n == 1 else "")
        region_text = f" ({', '.join(regions)})" if regions else ""
        attr_text = f" {{{attrs}}}" if attrs else ""
        ins = ", ".join(mlir_type(t) for t in operand_types)
        outs = ", ".join(mlir_type(t) for t in result_types)
        outs = f"({outs})" if n != 1 else outs
        self.lines.append(
            f'{self.indent}{head}"{name}"({", ".join(operands)}){region_text}{attr_text}'
            f" : ({ins}) -> {outs}"
        )
        if n > 1:
            return [f"{res}#{i}" for i in range(n)]
        return [res] if n == 1 else []

    def region(self, fn: Function, arg_types: list[TensorType] | None = None) -> str:
        """Emit `fn` as an MLIR region `{ ^bb0(...): ... stablehlo.return }`."""
        saved_lines, saved_indent = self.lines, self.indent
        self.lines, self.indent = [], saved_indent + "  "
        names = {}
        args = []
        for p, t in zip(fn.params, arg_types or fn.param_types):
            n = self.fresh()
            names[p] = n
            args.append(f"{n}: {mlir_type(t)}")
        self._body(fn, names)
        outs = [names[v] for v in fn.results]
        types = ", ".join(mlir_type(v.type) for v in fn.results)
        self.lines.append(f'{self.indent}"stablehlo.return"({", ".join(outs)}) : ({types}) -> ()')
        body = "\n".join(self.lines)
        self.lines, self.indent = saved_lines, saved_indent
        return f"{{\n{saved_indent}^bb0({', '.join(args)}):\n{body}\n{saved_indent}}}"

    def _body(self, fn: Function, names: dict):
        for op in fn.ops:
            rule = LOWERINGS.get(op.name)
            if rule is None:
                raise NotImplementedError(f"no StableHLO lowering for op {op.name!r}")
            outs = rule(self, op, [names[v] for v in op.operands])
            for r, n in zip(op.results, outs):
                names[r] = n


LowerFn = Callable[[EmitContext, Op, list[str]], list[str]]
LOWERINGS: dict[str, LowerFn] = {}


def lowering(*names: str):
    def deco(fn: LowerFn) -> LowerFn:
        for n in names:
            LOWERINGS[n] = fn
        return fn

    return deco


def emit_op(ctx, op, args, name, attrs="", regions=()):
    return ctx.op(
        name,
        args,
        [v.type for v in op.operands],
        [r.type for r in op.results],
        attrs,
        regions,
    )


def emit(
    fn: Function,
    *,
    arg_attrs: list[str] | None = None,
    module_attrs: str = "",
    result_attrs: list[str] | None = None,
    num_partitions: int = 1,
    ctx: "EmitContext | None" = None,
) -> str:
    """The StableHLO module (text) for `fn`, exported as `@main`.

    Args:
        fn: a verified IR function.
        arg_attrs: optional MLIR attribute dictionaries, one per parameter
            (e.g. `{tf.aliasing_output = 0 : i32}` for donation).
        module_attrs: extra module attributes.
        result_attrs: optional MLIR attribute dictionaries, one per result (e.g. shardings).
        num_partitions: devices of an SPMD program (`mhlo.num_partitions`).
        ctx: an emission context to use (module-level ops already in it are kept).
    Returns:
        MLIR text that `compile_and_load` accepts.
    """
    ctx = ctx or EmitContext()
    names = {}
    params = []
    for i, p in enumerate(fn.params):
        names[p] = f"%arg{i}"
        extra = f" {arg_attrs[i]}" if arg_attrs and arg_attrs[i] else ""
        params.append(f"%arg{i}: {mlir_type(p.type)}{extra}")
    ctx._body(fn, names)
    outs = [names[v] for v in fn.results]
    rtypes = ", ".join(mlir_type(v.type) for v in fn.results)
    ctx.lines.append(f'    "func.return"({", ".join(outs)}) : ({rtypes}) -> ()')
    rdecl = rtypes
    if result_attrs:
        rdecl = ", ".join(
            mlir_type(v.type) + (f" {a}" if a else "") for v, a in zip(fn.results, result_attrs)
        )
    mattrs = f"mhlo.num_partitions = {num_partitions} : i32, mhlo.num_replicas = 1 : i32"
    if module_attrs:
        mattrs += ", " + module_attrs
    return "\n".join(
        [
            f"module @purejit_{_sym(fn.name)} attributes {{{mattrs}}} {{",
            *(f"  {m}" for m in ctx.module_ops.values()),
            f"  func.func public @main({', '.join(params)}) -> ({rdecl}) {{",
            *ctx.lines,
            "  }",
            "}",
        ]
    )


def _sym(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "fn"


def verify_module(text: str) -> None:
    """Parse and verify `text` with jaxlib's MLIR bindings; raises on an invalid module."""
    from purejit.backend import mlir_context

    with mlir_context.context() as ctx:
        from jaxlib.mlir import ir

        module = ir.Module.parse(text, ctx)
        if not module.operation.verify():
            raise ValueError("StableHLO module failed verification")


# ---- lowering rules ---------------------------------------------------------------------

_SAME_NAME = [
    "abs", "negate", "sign", "not", "popcnt", "count_leading_zeros", "floor", "ceil",
    "round_nearest_afz", "round_nearest_even", "is_finite", "real", "imag", "sqrt", "rsqrt",
    "cbrt", "exponential", "exponential_minus_one", "log", "log_plus_one", "logistic", "sine",
    "cosine", "tan", "tanh", "add", "subtract", "multiply", "divide", "remainder", "power",
    "atan2", "and", "or", "xor", "shift_left", "shift_right_logical",
    "shift_right_arithmetic", "select", "clamp", "convert", "reshape",
    "dynamic_update_slice",
]  # fmt: skip
for _n in _SAME_NAME:
    lowering(_n)(lambda ctx, op, args, _n=_n: emit_op(ctx, op, args, f"stablehlo.{_n}"))

_CHLO = ["asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "lgamma"]
for _n in _CHLO:
    lowering(_n)(lambda ctx, op, args, _n=_n: emit_op(ctx, op, args, f"chlo.{_n}"))


@lowering("constant")
def _constant(ctx, op, args):
    return emit_op(ctx, op, args, "stablehlo.constant", f"value = {dense(op.attrs['value'])}")


@lowering("iota")
def _iota(ctx, op, args):
    return emit_op(
        ctx, op, args, "stablehlo.iota", f"iota_dimension = {op.attrs['dimension']} : i64"
    )


@lowering("broadcast_in_dim")
def _bcast(ctx, op, args):
    dims = i64_array(op.attrs["broadcast_dimensions"])
    return emit_op(ctx, op, args, "stablehlo.broadcast_in_dim", f"broadcast_dimensions = {dims}")


@lowering("transpose")
def _transpose(ctx, op, args):
    perm = i64_array(op.attrs["permutation"])
    return emit_op(ctx, op, args, "stablehlo.transpose", f"permutation = {perm}")


@lowering("slice")
def _slice(ctx, op, args):
    a = op.attrs
    attrs = (
        f"start_indices = {i64_array(a['start_indices'])}, "
        f"limit_indices = {i64_array(a['limit_indices'])}, strides = {i64_array(a['strides'])}"
    )
    return emit_op(ctx, op, args, "stablehlo.slice", attrs)


@lowering("concatenate")
def _concat(ctx, op, args):
    return emit_op(
        ctx, op, args, "stablehlo.concatenate", f"dimension = {op.attrs['dimension']} : i64"
    )


@lowering("pad")
def _pad(ctx, op, args):
    a = op.attrs
    attrs = (
        f"edge_padding_low = {i64_array(a['edge_padding_low'])}, "
        f"edge_padding_high = {i64_array(a['edge_padding_high'])}, "
        f"interior_padding = {i64_array(a['interior_padding'])}"
    )
    return emit_op(ctx, op, args, "stablehlo.pad", attrs)


@lowering("reverse")
def _reverse(ctx, op, args):
    return emit_op(
        ctx, op, args, "stablehlo.reverse", f"dimensions = {i64_array(op.attrs['dimensions'])}"
    )


_CMP_TYPE = {"f": "FLOAT", "c": "FLOAT", "i": "SIGNED", "u": "UNSIGNED", "b": "UNSIGNED"}


@lowering("compare")
def _compare(ctx, op, args):
    dt = op.operands[0].type.dtype
    kind = "f" if dtypes.is_float(dt) else dt.kind
    attrs = (
        f"comparison_direction = #stablehlo<comparison_direction {op.attrs['comparison_direction']}>, "
        f"compare_type = #stablehlo<comparison_type {_CMP_TYPE[kind]}>"
    )
    return emit_op(ctx, op, args, "stablehlo.compare", attrs)


@lowering("dot_general")
def _dot_general(ctx, op, args):
    fields = []
    for k in (
        "lhs_batching_dimensions",
        "rhs_batching_dimensions",
        "lhs_contracting_dimensions",
        "rhs_contracting_dimensions",
    ):
        v = list(op.attrs[k])
        if v:
            fields.append(f"{k} = [{', '.join(map(str, v))}]")
    attrs = f"dot_dimension_numbers = #stablehlo.dot<{', '.join(fields)}>"
    return emit_op(ctx, op, args, "stablehlo.dot_general", attrs)


@lowering("reduce")
def _reduce(ctx, op, args):
    region = ctx.region(op.regions[0])
    attrs = f"dimensions = {i64_array(op.attrs['dimensions'])}"
    return emit_op(ctx, op, args, "stablehlo.reduce", attrs, [region])


@lowering("dynamic_slice")
def _dynamic_slice(ctx, op, args):
    attrs = f"slice_sizes = {i64_array(op.attrs['slice_sizes'])}"
    return emit_op(ctx, op, args, "stablehlo.dynamic_slice", attrs)


# ---- core IR ops: semantics fixes (issue 2, IR side) ---------------------------------------


@lowering("maximum", "minimum")
def _minmax(ctx, op, args):
    """Real types map to stablehlo.maximum/minimum. For complex, XLA's CPU backend compares
    only real parts, so emit JAX's lexicographic order on (real, imag) with compare+select."""
    t = op.operands[0].type
    if not dtypes.is_complex(t.dtype):
        return emit_op(ctx, op, args, f"stablehlo.{op.name}")
    real_t = TensorType(t.shape, np.float32 if t.dtype == np.complex64 else np.float64)
    pred_t = TensorType(t.shape, np.bool_)
    direction = "GT" if op.name == "maximum" else "LT"

    def cmp(x, y, d):
        attrs = (
            f"comparison_direction = #stablehlo<comparison_direction {d}>, "
            "compare_type = #stablehlo<comparison_type FLOAT>"
        )
        return ctx.op("stablehlo.compare", [x, y], [real_t, real_t], [pred_t], attrs)[0]

    (ra,) = ctx.op("stablehlo.real", [args[0]], [t], [real_t])
    (rb,) = ctx.op("stablehlo.real", [args[1]], [t], [real_t])
    (ia,) = ctx.op("stablehlo.imag", [args[0]], [t], [real_t])
    (ib,) = ctx.op("stablehlo.imag", [args[1]], [t], [real_t])
    same_real = cmp(ra, rb, "EQ")
    (take_a,) = ctx.op(
        "stablehlo.select",
        [same_real, cmp(ia, ib, direction), cmp(ra, rb, direction)],
        [pred_t] * 3,
        [pred_t],
    )
    return ctx.op("stablehlo.select", [take_a, *args], [pred_t, t, t], [t])


# ---- gather / scatter ---------------------------------------------------------------------


def _dim_fields(attrs: dict, names) -> str:
    """`name = [..]` fields of a #stablehlo dimension-numbers attribute; empty lists omitted."""
    out = []
    for k in names:
        v = list(attrs[k])
        if v:
            out.append(f"{k} = [{', '.join(map(str, v))}]")
    return ", ".join(out)


def _flag(v) -> str:
    return "true" if v else "false"


@lowering("gather")
def _gather(ctx, op, args):
    a = op.attrs
    fields = _dim_fields(a, ("offset_dims", "collapsed_slice_dims", "start_index_map"))
    sep = ", " if fields else ""
    attrs = (
        f"dimension_numbers = #stablehlo.gather<{fields}{sep}"
        f"index_vector_dim = {a['index_vector_dim']}>, "
        f"indices_are_sorted = {_flag(a.get('indices_are_sorted', False))}, "
        f"slice_sizes = {i64_array(a['slice_sizes'])}"
    )
    return emit_op(ctx, op, args, "stablehlo.gather", attrs)


@lowering("scatter")
def _scatter(ctx, op, args):
    a = op.attrs
    fields = _dim_fields(
        a, ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims")
    )
    sep = ", " if fields else ""
    attrs = (
        f"scatter_dimension_numbers = #stablehlo.scatter<{fields}{sep}"
        f"index_vector_dim = {a['index_vector_dim']}>, "
        f"indices_are_sorted = {_flag(a.get('indices_are_sorted', False))}, "
        f"unique_indices = {_flag(a.get('unique_indices', False))}"
    )
    region = ctx.region(op.regions[0])
    return emit_op(ctx, op, args, "stablehlo.scatter", attrs, [region])


# ---- control flow ---------------------------------------------------------------------------
# IR regions are closed functions whose captured values are explicit operands; StableHLO's
# `case` branches take no block arguments and `while` regions take only the carry, so the
# remaining region parameters are bound to the outer SSA names (XLA turns those implicit
# captures into operands of the HLO conditional / while when it imports the module).


def _capturing_region(ctx: EmitContext, fn: Function, num_block_args: int, outer: list[str]):
    """Emit `fn` as a region: its first `num_block_args` parameters become block arguments,
    the rest are read from the enclosing scope under the names in `outer`."""
    saved_lines, saved_indent = ctx.lines, ctx.indent
    ctx.lines, ctx.indent = [], saved_indent + "  "
    names, args = {}, []
    for p in fn.params[:num_block_args]:
        names[p] = ctx.fresh()
        args.append(f"{names[p]}: {mlir_type(p.type)}")
    names.update(zip(fn.params[num_block_args:], outer))
    ctx._body(fn, names)
    outs = ", ".join(names[v] for v in fn.results)
    types = ", ".join(mlir_type(v.type) for v in fn.results)
    ctx.lines.append(f'{ctx.indent}"stablehlo.return"({outs}) : ({types}) -> ()')
    body = "\n".join(ctx.lines)
    ctx.lines, ctx.indent = saved_lines, saved_indent
    label = f"{saved_indent}^bb0({', '.join(args)}):\n" if args else ""
    return f"{{\n{label}{body}\n{saved_indent}}}"


@lowering("case")
def _case(ctx, op, args):
    branches = [_capturing_region(ctx, r, 0, args[1:]) for r in op.regions]
    types = [r.type for r in op.results]
    return ctx.op("stablehlo.case", args[:1], [op.operands[0].type], types, "", branches)


@lowering("while")
def _while(ctx, op, args):
    n = len(op.results)
    cond, body = (_capturing_region(ctx, r, n, args[n:]) for r in op.regions)
    types = [r.type for r in op.results]
    return ctx.op("stablehlo.while", args[:n], types, types, "", [cond, body])


@lowering("sort")
def _sort(ctx, op, args):
    stable = "true" if op.attrs.get("is_stable", False) else "false"
    attrs = f"dimension = {op.attrs['dimension']} : i64, is_stable = {stable}"
    return emit_op(ctx, op, args, "stablehlo.sort", attrs, [ctx.region(op.regions[0])])


@lowering("top_k")
def _top_k(ctx, op, args):
    return emit_op(ctx, op, args, "chlo.top_k", f"k = {op.attrs['k']} : i64")


@lowering("reduce_window")
def _reduce_window(ctx, op, args):
    a = op.attrs
    pads = ", ".join(f"[{lo}, {hi}]" for lo, hi in a["padding"])
    attrs = ", ".join(
        [f"{k} = {i64_array(a[k])}" for k in
         ("window_dimensions", "window_strides", "base_dilations", "window_dilations")]
        + [f"padding = dense<[{pads}]> : tensor<{len(a['padding'])}x2xi64>"]
    )  # fmt: skip
    return emit_op(ctx, op, args, "stablehlo.reduce_window", attrs, [ctx.region(op.regions[0])])


# ---- fusion (issue 8: whole-program optimisation) ------------------------------------------
# The route (inline for XLA, `mhlo.fusion`, or a non-inlined call) is `ctx.fusion_route`;
# see purejit/backend/fusion.py.


@lowering("fusion")
def _fusion(ctx, op, args):
    from purejit.backend import fusion

    return fusion.lower_fusion(ctx, op, args)


# ---- collectives and SPMD: in their own module, registered on import --------------------------
from purejit.backend import stablehlo_spmd  # noqa: E402,F401
from purejit.backend import lowering_scan  # noqa: E402,F401
