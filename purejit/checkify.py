"""`purejit.checkify`: JAX's `jax.experimental.checkify` for user checks.

    def f(x):
        checkify.check(x > 0, "x must be positive, got {}", x)
        return jnp.log(x)

    err, y = purejit.jit(checkify.checkify(f))(-1.0)
    err.throw()                     # JaxRuntimeError: x must be positive, got -1.0 (...)

`check` outside `checkify` raises at once on concrete values. Inside `checkify`, each check
becomes data: whether it failed and the values its message formats, returned with the
function's results as an `Error` (a pytree, so it leaves `jit` like any result); the first
failed check in program order is the one reported. `checkify(jit(f))` is `jit(checkify(f))`.

Only user checks (`user_checks`) are functionalised; JAX's automatic NaN, division and
index checks raise NotImplementedError, as does a check inside a transformation nested in
the checkified function (a nested `jit`, `vmap`, `scan`, `cond` body): move the check to the
checkified function's own level.
"""

from __future__ import annotations

import functools
import threading
from typing import Callable

import numpy as np

from purejit import errors as _errors
from purejit import numpy as jnp
from purejit.api import Jitted
from purejit.tracing import Tracer, current_trace
from purejit.tree_util import register_pytree_node, tree_flatten


class JaxRuntimeError(ValueError):
    """A failed check, raised by `Error.throw`, `check_error` or an eager `check`."""


class JaxException(Exception):
    """The categories of checks (`ErrorCategory`), as JAX names them."""


class FailedCheckError(JaxException):
    """A user check (`checkify.check`)."""


class NaNError(JaxException):
    """An automatic check for NaNs (not implemented in purejit)."""


class OOBError(JaxException):
    """An automatic check for out-of-bounds indexing (not implemented in purejit)."""


class DivisionByZeroError(JaxException):
    """An automatic check for integer division by zero (not implemented in purejit)."""


ErrorCategory = type
user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks

_state = threading.local()
_FAILED = " (`check` failed)"  # JAX's words after every failed check's message


def _frames() -> list:
    if not hasattr(_state, "frames"):
        _state.frames = []
    return _state.frames


class _Frame:
    """The checks recorded while one checkified call traces or runs."""

    def __init__(self):
        self.trace = current_trace()
        self.failed: list = []  # one bool scalar per check: it failed
        self.payloads: list = []  # the values each message formats (a pytree)
        self.messages: list[str] = []


class Error:
    """The outcome of a checkified call: which checks failed, with their messages' values.

    A pytree: its arrays go through `jit`, `device_get` and `tree_map` as results do."""

    def __init__(self, failed, payloads, messages):
        self._failed = list(failed)
        self._payloads = list(payloads)
        self._messages = tuple(messages)

    def _first(self):
        for k, f in enumerate(self._failed):
            if isinstance(f, Tracer):
                raise ValueError(
                    "checkify: an Error's values are traced here; return it from the jitted "
                    "function and call get()/throw() on the result"
                )
            if bool(np.asarray(f)):
                return k
        return None

    def get(self) -> str | None:
        """The message of the first failed check, or None when every check passed."""
        k = self._first()
        if k is None:
            return None
        args, kwargs = self._payloads[k]
        args = [_host(a) for a in args]
        kwargs = {n: _host(v) for n, v in kwargs.items()}
        return self._messages[k].format(*args, **kwargs)

    def get_exception(self) -> JaxRuntimeError | None:
        msg = self.get()
        return None if msg is None else JaxRuntimeError(msg)

    def throw(self) -> None:
        """Raise `JaxRuntimeError` with the first failed check's message, if one failed."""
        exc = self.get_exception()
        if exc is not None:
            raise exc

    def __repr__(self) -> str:
        try:
            msg = self.get()
        except ValueError:
            return f"Error({len(self._messages)} checks, traced)"
        return "Error(no failures)" if msg is None else f"Error({msg!r})"


def _host(value):
    """A checked value as its message shows it: a NumPy array, or (a typed key, which has no
    NumPy form) the value itself."""
    try:
        return np.asarray(value)
    except TypeError:
        return value


def _flatten_error(e: Error):
    return (e._failed, e._payloads), e._messages


def _unflatten_error(messages, children):
    failed, payloads = children
    return Error(failed, payloads, messages)


register_pytree_node(Error, _flatten_error, _unflatten_error)


def _not_functionalised() -> ValueError:
    return ValueError(
        "Cannot abstractly evaluate a checkify.check which was not functionalized. This "
        "probably means you tried to stage (jit/scan/pmap/...) a `check` without "
        "functionalizing it through `checkify.checkify`"
        f"{_errors.at(_errors.user_location())}"
    )


def _record(frame: _Frame, failed, payload, message: str) -> None:
    if isinstance(failed, Tracer) and current_trace() is not frame.trace:
        raise NotImplementedError(
            "checkify: a check inside a transformation nested in the checkified function "
            "(jit, vmap, scan, cond, while_loop) is not implemented in purejit; call the "
            "check at the checkified function's own level, or checkify the outer jit"
            f"{_errors.at(_errors.user_location())}"
        )
    frame.failed.append(failed)
    frame.payloads.append(payload)
    frame.messages.append(message)


def check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """Check that every element of `pred` is true; else the failure reports
    `msg.format(*fmt_args, **fmt_kwargs)`. Outside `checkify` a concrete failure raises
    `JaxRuntimeError` at once; inside, the check becomes part of the returned `Error`."""
    _scalar_pred("check", pred)
    failed = jnp.logical_not(pred)
    message = msg + _FAILED
    frames = _frames()
    if frames:
        _record(frames[-1], failed, (tuple(fmt_args), dict(fmt_kwargs)), message)
        return
    if isinstance(failed, Tracer) or any(isinstance(x, Tracer) for x in tree_flatten(
        (fmt_args, fmt_kwargs))[0]):  # fmt: skip
        raise _not_functionalised()
    if bool(np.asarray(failed)):
        raise JaxRuntimeError(message.format(*fmt_args, **fmt_kwargs))


def _scalar_pred(name: str, pred) -> None:
    shape, dtype = getattr(pred, "shape", ()), getattr(pred, "dtype", np.dtype(bool))
    if not (isinstance(pred, (bool, np.bool_)) or (shape == () and dtype == np.dtype(bool))):
        raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")


def debug_check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """`check` inside `checkify`; outside it nothing happens, even on a concrete failure."""
    _scalar_pred("debug_check", pred)
    if _frames():
        check(pred, msg, *fmt_args, **fmt_kwargs)


# the Error of a run in which no check failed (JAX's `checkify.init_error`)
init_error = Error((), (), ())


def check_error(error: Error) -> None:
    """Raise `error`'s failure (concrete), or fold its checks into the enclosing `checkify`
    (traced)."""
    if not isinstance(error, Error):
        raise TypeError(f"check_error takes a checkify.Error, got {type(error).__name__}")
    leaves = tree_flatten(error)[0]
    if not any(isinstance(x, Tracer) for x in leaves):
        error.throw()
        return
    frames = _frames()
    if not frames:
        raise _not_functionalised()
    for f, p, m in zip(error._failed, error._payloads, error._messages):
        _record(frames[-1], f, p, m)


def _run_checked(fun: Callable, args, kwargs):
    frame = _Frame()
    _frames().append(frame)
    try:
        out = fun(*args, **kwargs)
    finally:
        _frames().pop()
    return Error(frame.failed, frame.payloads, frame.messages), out


def checkify(fun: Callable, errors=user_checks) -> Callable:
    """`fun` returning `(Error, outputs)`: its checks become data instead of raising.

    Args:
        fun: the function to check; a `purejit.jit` function is checkified inside its jit.
        errors: the categories to check; only `user_checks` is implemented.
    Returns:
        The checkified function.
    """
    unsupported = set(errors) - user_checks
    if unsupported:
        names = sorted(c.__name__ for c in unsupported)
        raise NotImplementedError(
            f"checkify(errors=...): automatic checks {names} are not implemented in purejit; "
            "only user checks (checkify.user_checks) are"
        )
    if isinstance(fun, Jitted):
        inner = fun.derived(("checkify",), _plain_checkify)
        if inner is not None:
            return inner

    @functools.wraps(fun)
    def checked(*args, **kwargs):
        return _run_checked(fun, args, kwargs)

    return checked


def _plain_checkify(fun: Callable) -> Callable:
    @functools.wraps(fun)
    def checked(*args, **kwargs):
        return _run_checked(fun, args, kwargs)

    return checked


__all__ = [
    "DivisionByZeroError",
    "Error",
    "ErrorCategory",
    "FailedCheckError",
    "JaxException",
    "JaxRuntimeError",
    "NaNError",
    "OOBError",
    "all_checks",
    "automatic_checks",
    "check",
    "check_error",
    "checkify",
    "debug_check",
    "div_checks",
    "float_checks",
    "index_checks",
    "init_error",
    "nan_checks",
    "user_checks",
]
