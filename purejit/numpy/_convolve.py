"""`convolve` and `correlate` of 1-D arrays, on `lax.conv_general_dilated`."""

from __future__ import annotations

from purejit import dtypes as pdt
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.lax.conv import conv_general_dilated
from purejit.lax.ops import rev
from purejit.numpy._arithmetic import conj


def _conv1d(a, v, mode: str, op: str, precision, preferred_element_type):
    x, y = _lift(a), _lift(v)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"{op}() only supports 1-dimensional inputs, got {x.aval} and {y.aval}")
    dt, weak = pdt.result_type_weak((x.dtype, x.weak_type), (y.dtype, y.weak_type))
    if preferred_element_type is None and not pdt.is_inexact(dt):
        dt = pdt.default_float()
    x, y = convert(x, dt, weak=weak), convert(y, dt, weak=weak)
    if x.shape[0] == 0 or y.shape[0] == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {x.shape} and {y.shape}")
    backwards = False
    if op == "correlate":
        y = conj(y)
        if x.shape[0] < y.shape[0]:
            x, y, backwards = y, x, True
    else:
        if x.shape[0] < y.shape[0]:
            x, y = y, x
        y = rev(y, (0,))
    n = y.shape[0]
    pads = {"valid": (0, 0), "same": (n // 2, n - n // 2 - 1), "full": (n - 1, n - 1)}
    if mode not in pads:
        raise ValueError(f"{op}: mode={mode!r} must be 'full', 'same' or 'valid'")
    out = conv_general_dilated(
        x.reshape(1, 1, -1),
        y.reshape(1, 1, -1),
        (1,),
        [pads[mode]],
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    out = out.reshape(-1)
    return rev(out, (0,)) if backwards else out


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """The discrete linear convolution of two 1-D arrays (NumPy's `convolve`)."""
    return _conv1d(a, v, mode, "convolve", precision, preferred_element_type)


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of two 1-D arrays (NumPy's `correlate`)."""
    return _conv1d(a, v, mode, "correlate", precision, preferred_element_type)
