"""The JVP rule of `fusion` (`ir/ops/fusion.py`): the derivative of its region, inlined.

Fusion ops are made by the fusion pass, after differentiation, so only a program that was
optimised and then differentiated again meets one; its region is an ordinary function."""

from __future__ import annotations

from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff._core import defjvp


@defjvp("fusion")
def _fusion_jvp(ctx, primals, tangents, attrs, regions):
    return interp.jvp_function(regions[0], primals, tangents, ctx)
