"""Exceptions raised inside host callbacks reach the caller as themselves.

XLA runs a program's Python callbacks (`debug.callback`, `debug.print`, `pure_callback`,
`io_callback`) through jaxlib's callback custom call; when one raises, jaxlib turns the
exception into an XLA error status and the program's caller gets `JaxRuntimeError: INTERNAL:
CpuCallback error ...` (JAX behaves so): `except KeyboardInterrupt` or `except ValueError`
around the call never fire.

purejit's trampoline (`guarded`) catches the exception on the callback's thread, keeps it
under a fresh number, and raises in its place an error whose message carries that number.
XLA copies the message into the runtime error; wherever that error surfaces in purejit (an
executable's `execute`, or an array's `block_until_ready` / host read when the failure is
reported at the next synchronisation), `reraise` finds the number in the message and raises
the kept exception itself, its traceback (the callback's frames) intact and the runtime
error chained as its `__cause__`. Numbers are unique per callback invocation, so concurrent
programs on several threads each get their own exception back.

Drop-in mode (while `purejit.compat`'s hook is installed) lets the runtime error through, as
JAX does: code written for JAX catches `JaxRuntimeError` and reads the callback's exception
from its message, which names it (Equinox's `filter_jit` turns `error_if`'s failed check
into `EquinoxRuntimeError` so).
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict
from typing import Callable

_TAG = "purejit-host-callback-error#"
_TAG_RE = re.compile(re.escape(_TAG) + r"(\d+)")
# A kept exception whose runtime error is never seen (caught by jaxlib code, or a program
# that failed twice) is dropped after this many newer ones.
_MAX_KEPT = 64

_lock = threading.Lock()
_kept: OrderedDict[int, BaseException] = OrderedDict()
_numbers = itertools.count(1)
_jax_style = [0]  # how many drop-in installs are active


class HostCallbackError(RuntimeError):
    """What XLA sees in place of the callback's exception (the caller gets the original)."""


def guarded(fn: Callable) -> Callable:
    """`fn` (called by XLA with host arrays) whose exceptions, BaseExceptions included, are
    kept for `reraise` and replaced by a `HostCallbackError` naming them."""

    def call(*args):
        try:
            return fn(*args)
        except BaseException as e:  # KeyboardInterrupt too: the caller gets it back
            with _lock:
                n = next(_numbers)
                _kept[n] = e
                while len(_kept) > _MAX_KEPT:
                    _kept.popitem(last=False)
            raise HostCallbackError(f"{_TAG}{n}: {type(e).__name__}: {e}") from None

    call.__wrapped__ = fn
    return call


def reraise(err: BaseException) -> None:
    """Raise the callback exception that caused runtime error `err`, chained to it; return
    if `err` names none (the caller then raises `err` as it is)."""
    numbers = [int(m) for m in _TAG_RE.findall(str(err))]
    if not numbers:
        return
    with _lock:
        found = [_kept.pop(n) for n in numbers if n in _kept]
        if _jax_style[0]:
            return
    if found:
        raise found[0] from err


def jax_style(on: bool) -> None:
    """Drop-in mode begins (`on`) or ends: while any is active, `reraise` lets the runtime
    error through as JAX raises it."""
    with _lock:
        _jax_style[0] += 1 if on else -1


def pending() -> int:
    """How many kept exceptions no runtime error has claimed yet (for tests)."""
    with _lock:
        return len(_kept)
