"""What every lowering rule builds on: MLIR type and attribute text, and the rule registry.

A rule is registered with `@lowering("name")`. It gets the emission context
(`purejit.backend.stablehlo.EmitContext`), the op, and the MLIR names of its operands, and
returns the MLIR names of its results. `stablehlo.emit` looks rules up in `LOWERINGS`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from purejit.ir import Op, TensorType, dtypes

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
    "f8e4m3fn": "f8E4M3FN",
    "f8e5m2": "f8E5M2",
    "f8e4m3": "f8E4M3",
    "f8e3m4": "f8E3M4",
    "f8e4m3fnuz": "f8E4M3FNUZ",
    "f8e5m2fnuz": "f8E5M2FNUZ",
    "f8e4m3b11fnuz": "f8E4M3B11FNUZ",
    "f8e8m0fnu": "f8E8M0FNU",
    "f6e2m3fn": "f6E2M3FN",
    "f6e3m2fn": "f6E3M2FN",
    "f4e2m1fn": "f4E2M1FN",
    "s4": "i4",
    "u4": "ui4",
    "s2": "i2",
    "u2": "ui2",
}
# element types the IR holds that XLA (jaxlib 0.10) cannot compute with: JAX fails on them too
# (device_put, constants and arithmetic raise or abort inside XLA), so emission refuses them
_NO_XLA = {
    "f6e2m3fn": "float6_e2m3fn",
    "f6e3m2fn": "float6_e3m2fn",
    "s1": "int1",
    "u1": "uint1",
}


def mlir_type(t: TensorType) -> str:
    """The MLIR tensor type of `t`, e.g. `tensor<2x3xf32>`."""
    name = dtypes.dtype_name(t.dtype)
    if name in _NO_XLA:
        raise NotImplementedError(
            f"{_NO_XLA[name]} ({t}): XLA has no kernels for this type (JAX fails on it as "
            "well); compute on the host with ml_dtypes, or convert to a wider type there"
        )
    el = _MLIR_DTYPE[name]
    if not t.shape:
        return f"tensor<{el}>"
    return f"tensor<{'x'.join(map(str, t.shape))}x{el}>"


def i64_array(xs) -> str:
    """A dense i64 array attribute: `array<i64: 1, 2>`."""
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


def dim_fields(attrs: dict, names) -> str:
    """`name = [..]` fields of a #stablehlo dimension-numbers attribute; empty lists omitted."""
    out = []
    for k in names:
        v = list(attrs[k])
        if v:
            out.append(f"{k} = [{', '.join(map(str, v))}]")
    return ", ".join(out)


def flag(v) -> str:
    """An MLIR boolean attribute."""
    return "true" if v else "false"


# ---- the registry ---------------------------------------------------------------------------

LowerFn = Callable[..., list[str]]  # (ctx, op, operand names) -> result names
LOWERINGS: dict[str, LowerFn] = {}


def lowering(*names: str):
    """Register the decorated function as the lowering rule of the ops `names`."""

    def deco(fn: LowerFn) -> LowerFn:
        for n in names:
            LOWERINGS[n] = fn
        return fn

    return deco


def emit_op(ctx, op: Op, args: list[str], name: str, attrs: str = "", regions=()) -> list[str]:
    """Emit `op` as the one MLIR op `name` with the same operand and result types."""
    return ctx.op(
        name,
        args,
        [v.type for v in op.operands],
        [r.type for r in op.results],
        attrs,
        regions,
    )
