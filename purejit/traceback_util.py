"""What libraries call in `jax._src.traceback_util`: `register_exclusion(path)` marks a
library's files as not the user's, so purejit's errors and warnings name the user's line
rather than one inside the library; `include_frame(frame)` says whether a frame is the
user's."""

from __future__ import annotations

from typing import Callable

from purejit import errors


def register_exclusion(path: str) -> None:
    """Frames from `path` (a file or folder) are library frames: error locations skip them."""
    errors.exclude_path(path)


def include_frame(frame) -> bool:
    """Whether `frame` is the user's code (not purejit's, nor a registered exclusion): the
    frames JAX keeps in a filtered traceback."""
    return not errors._internal(frame.f_code.co_filename)


def api_boundary(fun: Callable) -> Callable:
    """`fun` itself: purejit never rewrites tracebacks (its errors name the user's line
    instead), so JAX's traceback-filtering boundary has nothing to do here."""
    return fun


__all__ = ["api_boundary", "include_frame", "register_exclusion"]
