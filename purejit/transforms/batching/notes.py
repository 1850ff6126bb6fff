"""What vmap did to the ops that do not simply gain a batch dimension, for `explain`.

A batched `cond` that became a select, a `while_loop` that now runs until its slowest
example is done, an op run once per example in a loop: each is a sentence recorded while
tracing. `purejit.explain` collects the sentences of the program it explains. The
collectors are this thread's (`purejit.tracing.context`), so a program traced in another
thread never reports into this one's explanation.
"""

from __future__ import annotations

from purejit.tracing import context


def collecting():
    """Collect the notes recorded in this block; yields the list they are appended to."""
    return context.collecting_notes()


def record(text: str) -> None:
    """Record one note (kept only while someone collects; duplicates are dropped)."""
    context.note(text)


def paused():
    """Record nothing in this block (work done on the side, e.g. programs compiled only to
    be measured, must not report into the program being explained)."""
    return context.notes_paused()
