"""purejit's error types and the user-source locator used in every message."""

from __future__ import annotations

import functools
import inspect
import os
import sys
import types

from purejit.config import config

# purejit's own folders: the package, and ir/ and passes/ beside it in a source checkout
# (an installed wheel keeps them inside the package)
_HERE = os.path.dirname(os.path.abspath(__file__))
_PKG_DIRS = (_HERE,) + tuple(os.path.join(os.path.dirname(_HERE), d) for d in ("ir", "passes"))
_SKIP = ("contextlib.py", "functools.py", "<frozen")
# files and folders a library marks as its own (`traceback_util.register_exclusion`): their
# frames are not the user's either
_EXCLUDED: list[str] = []


_internal_cache: dict[str, bool] = {}


def _internal(filename: str) -> bool:
    hit = _internal_cache.get(filename)
    if hit is None:
        f = os.path.abspath(filename)
        hit = f.startswith(_PKG_DIRS) or any(s in filename for s in _SKIP)
        hit = hit or any(f.startswith(p) for p in _EXCLUDED)
        _internal_cache[filename] = hit
    return hit


def exclude_path(path: str) -> None:
    """Treat frames from `path` (a file, or a folder and everything below it) as library
    code: error locations and warnings point past them, at the user's line."""
    _EXCLUDED.append(os.path.abspath(path))
    _internal_cache.clear()


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


# (loc, frame): while `frame` is the user's innermost frame, ops take `loc` (a transformation
# re-binding the ops of a traced program gives them the lines the user wrote them on)
_located: list = [None]


def set_location(loc: str | None, frame) -> tuple | None:
    """Make `user_location()` answer `loc` while the user's innermost frame is `frame`
    (None clears it); returns the previous setting, to pass to `restore_location`."""
    prev = _located[0]
    _located[0] = None if loc is None else (loc, frame)
    return prev


def restore_location(prev: tuple | None) -> None:
    _located[0] = prev


def user_location() -> str | None:
    """`file.py:LINE` of the user's code that is running now."""
    f = user_frame()
    if f is None:
        return None
    o = _located[0]
    if o is not None and o[1] is f:
        return o[0]
    key = (f.f_code, f.f_lineno)
    loc = _locations.get(key)
    if loc is None:
        loc = f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
        if len(_locations) < 65536:
            _locations[key] = loc
    return loc


def at(loc: str | None) -> str:
    return f" (at {loc})" if loc else ""


class JAXTypeError(TypeError):
    """The base of the type errors JAX names (jax.errors.JAXTypeError): a traced value used
    where a concrete one is needed, or a tracer leaked or converted."""


class JAXIndexError(IndexError):
    """The base of the index errors JAX names (jax.errors.JAXIndexError)."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """A boolean mask index whose values are traced: the result's shape would depend on
    them, which jit cannot compile (use `purejit.numpy.where(mask, x, fill)`)."""


class PurejitTypeError(TypeError):
    """An op got operands of the wrong shape or dtype. Names the op, the types, the line."""


class ConcretizationTypeError(JAXTypeError):
    """A traced value was used where Python needs a concrete one (if, int(), float())."""


class TracerBoolConversionError(ConcretizationTypeError):
    """`bool()` of a traced value (an `if` or `while` on it) inside jit."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """`int()` or `__index__` of a traced value inside jit."""


class TracerArrayConversionError(JAXTypeError):
    """A traced value was passed to NumPy (np.asarray) inside jit."""


class UnexpectedTracerError(JAXTypeError, RuntimeError):
    """A tracer leaked out of the transformation that created it (a TypeError, as JAX's, and
    a RuntimeError, as purejit's always was)."""


def check_argnums(fname: str, sig, option: str, nums, names) -> None:
    """Raise at `jit(...)` time when `option` (static_argnums/argnames, donate_argnums/
    argnames) names parameters that the function's signature `sig` (an `inspect.Signature`,
    None when unknown) does not have, as JAX does.

    Args:
        fname: the function's name; option: e.g. "static_argnums"; nums: positions (may be
            negative); names: parameter names.
    Raises:
        ValueError naming the option, the bad entries, the signature and the user's line.
    """
    if sig is None:
        return
    params = list(sig.parameters.values())
    kinds = [p.kind for p in params]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    has_var = inspect.Parameter.VAR_POSITIONAL in kinds
    has_kw = inspect.Parameter.VAR_KEYWORD in kinds
    n = len(positional)
    bad_nums = [i for i in nums if not has_var and not -n <= i < n]
    keywordable = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    bad_names = [s for s in names if not has_kw and s not in keywordable]
    if not bad_nums and not bad_names:
        return
    bad = bad_nums or bad_names
    what = (
        f"takes {n} positional argument{'s' if n != 1 else ''}"
        if bad_nums
        else f"has no parameter{'s' if len(bad) > 1 else ''} {', '.join(map(repr, bad))}"
        + (" that can be passed by keyword" if set(bad) & {p.name for p in params} else "")
    )
    raise ValueError(
        f"jit({fname}): {option}={tuple(bad) if len(bad) > 1 else bad[0]!r} does not name a "
        f"parameter of {fname}{sig}, which {what}. Fix {option} to name its parameters "
        f"(positions for *_argnums, names for *_argnames){at(user_location())}"
    )


# --- traceback filtering ----------------------------------------------------------------------

_FILTER_NOTE = (
    "purejit removed its internal frames from this traceback; "
    "purejit.config.update('traceback_filtering', 'off') shows them."
)


def filter_traceback(e: BaseException, mode: str = "on") -> None:
    """Drop purejit's own frames from `e`'s traceback (keeping the user's), as JAX's
    traceback filtering does, and say so in a note. Called where an exception leaves
    purejit (then re-raised with a bare `raise`, which adds no frame).

    Args:
        e: the exception on its way out.
        mode: "on" filters; "off" leaves the traceback whole (`purejit.config`'s
            `traceback_filtering`, environment variable `PUREJIT_TRACEBACK_FILTERING`).
    """
    if mode == "off" or getattr(e, "_purejit_filtered", False):
        return
    kept, removed, tb = [], 0, e.__traceback__
    while tb is not None:
        if _internal(tb.tb_frame.f_code.co_filename):
            removed += 1
        else:
            kept.append(tb)
        tb = tb.tb_next
    if not removed or not kept:  # nothing of the user's to show: keep everything
        return
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    e.with_traceback(new)
    try:
        e._purejit_filtered = True
    except AttributeError:  # an exception type with __slots__
        pass
    if hasattr(e, "add_note"):
        e.add_note(_FILTER_NOTE)


def api_boundary(fn):
    """`fn` (the function a transformation such as `grad` or `vmap` returns) whose
    exceptions leave with purejit's frames filtered from their traceback, as an error
    raised while `jit` traces does: the traceback then ends at the user's line under every
    transformation (`traceback_filtering` in purejit.config switches it off)."""

    @functools.wraps(fn)
    def boundary(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            filter_traceback(e, config.read("traceback_filtering"))
            raise

    return boundary
