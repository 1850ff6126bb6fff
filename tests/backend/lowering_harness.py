"""Helpers for the op tests: build one-op functions, run them compiled, compare with NumPy.

The compiled path is the one the user's programs take: `stablehlo.emit` -> jaxlib's MLIR
verifier -> `pjrt.compile` -> `execute` on buffers made with `jax.device_put` (x64 enabled
while the buffers are made, so 64-bit inputs are not narrowed).
"""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
from purejit.ir import Builder, Function, TensorType, dtypes, verify

from purejit.backend import pjrt, stablehlo

BF16 = np.dtype(ml_dtypes.bfloat16)


def one_op(name: str, args, attrs=None, regions=()) -> Function:
    """A verified function `f(*args) = name(*args) {attrs} regions`."""
    b = Builder(f"one_{name}")
    params = [b.param(TensorType(np.shape(a), np.asarray(a).dtype)) for a in args]
    outs = b.op(name, params, dict(attrs or {}), list(regions))
    return verify(b.finish(outs))


def scalar_region(opname: str, dtype, n: int = 1) -> Function:
    """The region `(a, b) -> opname(a, b)` over scalars of `dtype` (for reduce)."""
    b = Builder("region")
    t = TensorType((), dtype)
    params = [b.param(t) for _ in range(2 * n)]
    return b.finish(b.op(opname, params[:2]))


def emit_checked(fn: Function) -> str:
    """The StableHLO text of `fn`, after jaxlib's MLIR verifier accepted it."""
    text = stablehlo.emit(fn)
    stablehlo.verify_module(text)
    return text


def run_compiled(fn: Function, *args) -> list[np.ndarray]:
    """Emit, verify, compile and execute `fn` on device buffers; results as NumPy arrays."""
    exe = pjrt.compile(emit_checked(fn), fn.param_types, fn.result_types)
    with jax.enable_x64(True):
        bufs = [jax.device_put(np.asarray(a)) for a in args]
    return [np.asarray(o) for o in exe.execute(bufs)]


def _wide(x: np.ndarray) -> np.ndarray:
    if dtypes.is_complex(x.dtype):
        return x.astype(np.complex128)
    return x.astype(np.float64)


def mismatches(actual, expected, *, rtol: float, atol: float = 0.0, signed_zeros=True) -> str:
    """'' if `actual` equals `expected` in dtype, shape and values, else what differs.

    Integers and bools compare exactly. Floats compare with `rtol`/`atol`; NaN matches NaN,
    infinities must match exactly, and (with `signed_zeros`) a zero's sign must match.
    Complex numbers compare by the magnitude of the difference (NaN matching NaN per part);
    the sign of a complex zero is not checked (XLA and NumPy differ there).
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return (
            f"got {actual.dtype}{list(actual.shape)}, want {expected.dtype}{list(expected.shape)}"
        )
    if not dtypes.is_inexact(actual.dtype):
        bad = actual != expected
    elif dtypes.is_complex(actual.dtype):
        a, e = _wide(actual), _wide(expected)
        nan_a = np.isnan(a.real) | np.isnan(a.imag)
        nan_e = np.isnan(e.real) | np.isnan(e.imag)
        with np.errstate(invalid="ignore"):
            close = (a == e) | (np.abs(a - e) <= atol + rtol * np.abs(e))
        bad = (nan_a != nan_e) | (~nan_e & ~close)
    else:
        x, y = _wide(actual), _wide(expected)
        both_nan = np.isnan(x) & np.isnan(y)
        close = np.isclose(x, y, rtol=rtol, atol=atol) & (np.isinf(x) == np.isinf(y))
        if signed_zeros:
            close &= ~((x == 0) & (y == 0)) | (np.signbit(x) == np.signbit(y))
        bad = ~(both_nan | close)
    if not bad.any():
        return ""
    idx = np.flatnonzero(bad)[:6]
    return (
        f"{bad.sum()} of {bad.size} differ; got {actual.reshape(-1)[idx]}, "
        f"want {expected.reshape(-1)[idx]}"
    )


def merge(fns: list[Function], name: str = "merged") -> Function:
    """One function running several independent functions side by side (to compile once)."""
    return Function(
        name,
        [p for f in fns for p in f.params],
        [op for f in fns for op in f.ops],
        [r for f in fns for r in f.results],
    )
