"""Differentiation of the host callbacks (`ir/ops/callback.py`), as JAX's.

host_callback   (`debug.print`, `debug.callback`) runs on the primal values and has no
                tangent effect: under `jvp` and `grad` it runs once, in the forward pass,
                as JAX's `debug_callback`. Its results are the order token or nothing; a
                float result (a callback with effects that returns data, JAX's `io_callback`)
                has no derivative, an error only if a derivative reads it.
pure_callback   is not differentiable, as in JAX: the error says to give the function a
                derivative with `custom_jvp` or `custom_vjp`.
"""

from __future__ import annotations

from purejit.transforms.autodiff._core import (
    Unsupported,
    Zero,
    defjvp,
    is_differentiable_dtype,
    not_differentiable,
    ops,
    tangent_aval,
)
from purejit.tracing import aval_of


@defjvp("host_callback")
def _host_callback_jvp(ctx, primals, tangents, attrs, regions):
    outs = ops("host_callback", *primals, **attrs)
    touts = []
    for o in outs:
        av = tangent_aval(aval_of(o))
        if is_differentiable_dtype(av.dtype):
            msg = (
                f"host_callback {attrs['callback']!r}: a callback with side effects has no "
                "derivative of its results (as JAX's io_callback); compute the value with "
                "pure_callback wrapped in custom_jvp, or stop_gradient its inputs"
            )
            touts.append(Unsupported(av, msg))
        else:
            touts.append(Zero(av))
    return outs, touts


not_differentiable(
    "JAX does not differentiate it: pure_callback has no derivative (JAX raises 'Pure "
    "callbacks do not support JVP'); give the function one with custom_jvp or custom_vjp",
    "pure_callback",
)
