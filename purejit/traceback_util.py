"""What libraries call in `jax._src.traceback_util`: `register_exclusion(path)` marks a
library's files as not the user's, so purejit's errors and warnings name the user's line
rather than one inside the library."""

from __future__ import annotations

from typing import Callable

from purejit import errors


def register_exclusion(path: str) -> None:
    """Frames from `path` (a file or folder) are library frames: error locations skip them."""
    errors.exclude_path(path)


def api_boundary(fun: Callable) -> Callable:
    """`fun` itself: purejit never rewrites tracebacks (its errors name the user's line
    instead), so JAX's traceback-filtering boundary has nothing to do here."""
    return fun


__all__ = ["api_boundary", "register_exclusion"]
