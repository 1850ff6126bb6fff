"""An MLIR context with the dialects jaxlib ships (func, stablehlo, chlo, sdy) registered."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def context():
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, sdy, stablehlo

    ctx = ir.Context()
    reg = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(reg)
    ctx.append_dialect_registry(reg)
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    sdy.register_dialect(ctx)  # Shardy: manual_computation lowers to sdy.manual_computation
    with ctx, ir.Location.unknown(ctx):
        yield ctx
