"""StableHLO lowering of the fft family (`ir/ops/fft.py`): one `stablehlo.fft`, which XLA
runs with DUCC on CPU and cuFFT on GPU."""

from __future__ import annotations

from purejit.backend.lowering._util import emit_op, i64_array, lowering


@lowering("fft")
def _fft(ctx, op, args):
    attrs = (
        f"fft_type = #stablehlo<fft_type {op.attrs['fft_type']}>, "
        f"fft_length = {i64_array(op.attrs['fft_length'])}"
    )
    return emit_op(ctx, op, args, "stablehlo.fft", attrs)
