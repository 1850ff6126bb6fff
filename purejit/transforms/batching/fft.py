"""Batching rule of `fft` (ir/ops/fft.py): it transforms the trailing dimensions and maps
over the others, so the batch only has to stay out of the transformed ones."""

from __future__ import annotations

from purejit.tracing import bind1
from purejit.transforms.batching.core import defrule, moveaxis, ndim


@defrule("fft")
def fft_rule(axis, args, dims, *, fft_type, fft_length):
    (x,), (d,) = args, dims
    if d >= ndim(x) - len(fft_length):
        x, d = moveaxis(x, d, 0), 0
    return [bind1("fft", x, fft_type=fft_type, fft_length=fft_length)], [d]
