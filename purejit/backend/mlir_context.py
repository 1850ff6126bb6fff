"""An MLIR context with the dialects jaxlib ships (func, stablehlo, chlo, sdy) registered."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def context():
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, stablehlo

    ctx = ir.Context()
    reg = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(reg)
    ctx.append_dialect_registry(reg)
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    with ctx, ir.Location.unknown(ctx):
        yield ctx
