"""What vmap did to the ops that do not simply gain a batch dimension, for `explain`.

A batched `cond` that became a select, a `while_loop` that now runs until its slowest
example is done, an op run once per example in a loop: each is a sentence recorded while
tracing. `purejit.explain` collects the sentences of the program it explains.
"""

from __future__ import annotations

import contextlib

_collectors: list[list[str]] = []


@contextlib.contextmanager
def collecting():
    """Collect the notes recorded in this block; yields the list they are appended to."""
    out: list[str] = []
    _collectors.append(out)
    try:
        yield out
    finally:
        _collectors.remove(out)


def record(text: str) -> None:
    """Record one note (kept only while someone collects; duplicates are dropped)."""
    for c in _collectors:
        if text not in c:
            c.append(text)


@contextlib.contextmanager
def paused():
    """Record nothing in this block (work done on the side, e.g. programs compiled only to
    be measured, must not report into the program being explained)."""
    saved = _collectors[:]
    _collectors.clear()
    try:
        yield
    finally:
        _collectors[:] = saved
