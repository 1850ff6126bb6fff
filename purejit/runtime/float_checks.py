"""NaN and Inf checks of computed values: `config.debug_nans` / `config.debug_infs` (JAX's
`jax_debug_nans` / `jax_debug_infs`).

When on, every eager op and every call of a jitted function copies its floating outputs to
the host and raises `FloatingPointError` if one holds a NaN (or an Inf). A jitted call that
made one is run again op by op (`disable_jit`), so the error names the first op that made
it, as JAX's de-optimised rerun does. Both options key jit's caches, so a checked call never
takes a fast dispatch path that would skip the check.
"""

from __future__ import annotations

import numpy as np

from purejit import errors
from purejit.config import config

# [debug_nans, debug_infs], kept current by config watches (read on every eager op)
STATE = [bool(config.read("debug_nans")), bool(config.read("debug_infs"))]


def _set(i: int):
    def update(value):
        STATE[i] = bool(value)

    return update


config.watch("debug_nans", _set(0))
config.watch("debug_infs", _set(1))


def enabled() -> bool:
    """Whether NaN or Inf checks are on."""
    return STATE[0] or STATE[1]


def _floating(dtype: np.dtype) -> bool:
    # ml_dtypes' bfloat16 / float8 types are kind "V"
    return dtype.kind in "fc" or dtype.name.startswith(("bfloat16", "float8", "float6", "float4"))


def problem(outs) -> tuple[int, str] | None:
    """The first output holding a NaN (when debug_nans) or an Inf (when debug_infs), as
    `(index, "nan" | "inf")`, or None."""
    for i, o in enumerate(outs):
        dtype = getattr(o, "dtype", None)
        if dtype is None or not _floating(np.dtype(dtype)):
            continue
        host = np.asarray(o)
        if host.dtype.kind == "V":
            host = host.astype(np.float32)
        if STATE[0] and np.isnan(host).any():
            return i, "nan"
        if STATE[1] and np.isinf(host).any():
            return i, "inf"
    return None


def message(what: str, kind: str) -> str:
    """JAX's wording: `invalid value (nan) encountered in add`, with the user's line."""
    head = "invalid value (nan)" if kind == "nan" else "divide by zero (inf)"
    return f"{head} encountered in {what}{errors.at(errors.user_location())}"


def check(what: str, outs) -> None:
    """Raise FloatingPointError if an output of `what` (an op or function name) holds a NaN
    (debug_nans) or an Inf (debug_infs)."""
    found = problem(outs)
    if found is not None:
        raise FloatingPointError(message(what, found[1]))
