"""purejit's error types and the user-source locator used in every message."""

from __future__ import annotations

import os
import sys

# purejit's own folders: the package, and ir/ and passes/ beside it in a source checkout
# (an installed wheel keeps them inside the package)
_HERE = os.path.dirname(os.path.abspath(__file__))
_PKG_DIRS = (_HERE,) + tuple(os.path.join(os.path.dirname(_HERE), d) for d in ("ir", "passes"))
_SKIP = ("contextlib.py", "functools.py", "<frozen")


_internal_cache: dict[str, bool] = {}


def _internal(filename: str) -> bool:
    hit = _internal_cache.get(filename)
    if hit is None:
        f = os.path.abspath(filename)
        hit = f.startswith(_PKG_DIRS) or any(s in filename for s in _SKIP)
        _internal_cache[filename] = hit
    return hit


def _outside(f):
    """The first frame from `f` outwards that is not purejit's, and how many were skipped."""
    skipped = 0
    while f is not None and _internal(f.f_code.co_filename):
        f, skipped = f.f_back, skipped + 1
    return f, skipped


def user_frame():
    """The innermost stack frame outside purejit (the user's code), or None."""
    return _outside(sys._getframe(1))[0]


def user_stacklevel() -> int:
    """The `stacklevel` that makes `warnings.warn`, called by the caller of this function,
    point at the user's code."""
    return 1 + _outside(sys._getframe(1))[1]


_locations: dict = {}  # (code object, line) -> "file.py:LINE"


def user_location() -> str | None:
    """`file.py:LINE` of the user's code that is running now."""
    f = user_frame()
    if f is None:
        return None
    key = (f.f_code, f.f_lineno)
    loc = _locations.get(key)
    if loc is None:
        loc = f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
        if len(_locations) < 65536:
            _locations[key] = loc
    return loc


def at(loc: str | None) -> str:
    return f" (at {loc})" if loc else ""


class PurejitTypeError(TypeError):
    """An op got operands of the wrong shape or dtype. Names the op, the types, the line."""


class ConcretizationTypeError(TypeError):
    """A traced value was used where Python needs a concrete one (if, int(), float())."""


class TracerArrayConversionError(TypeError):
    """A traced value was passed to NumPy (np.asarray) inside jit."""


class UnexpectedTracerError(RuntimeError):
    """A tracer leaked out of the transformation that created it."""
