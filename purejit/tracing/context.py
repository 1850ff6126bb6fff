"""The state of the traces in progress, one context per thread (JAX's `trace_ctx`).

Everything a trace in progress reads or leaves behind lives here, never in a module global,
so that one thread tracing a function never sees another thread's trace:

- `stack`, `current`: the active traces by level, and the trace an op with no deeper tracer
  operands goes to (`purejit.tracing.core`).
- `axis_env`: the named axes bound for collectives (the meshes of the shard_map bodies and
  the vmapped axes being traced, innermost last; `purejit.lax.parallel`). It changes what a
  traced program means, so its `axis_key` enters the jit cache keys (Python and C++).
- `effect_frames`, `effect_tokens`: the control-flow bodies being traced and each trace's
  order token for ordered host callbacks (`purejit.lax._effects`).
- `remat_settings`, `remat_records`, `remat_pins`: differentiation options (a jit's remat
  settings), the records each differentiation leaves for `explain`, and the values a
  user's checkpoint saves (`purejit.transforms.autodiff.remat`).
- `transposed_calls`: per trace, the call bodies transposed into it, reused for isomorphic
  ones (`purejit.transforms.autodiff.call`).
- `concrete`: the arrays the input tracers of each lowering in progress stand for
  (`purejit.compiler.lower`).
- `notes`: the sentences transformations leave for `explain` (`purejit.transforms.batching.
  notes`).
- `attention_reports`: what the attention rewrite fused or refused inside the
  differentiations of each lowering in progress (`purejit.fused_attention`).

Stacks are pushed and popped by context managers here, so a block always leaves the
context as it found it, whatever it raises.
"""

from __future__ import annotations

import contextlib
import threading
import weakref

# the trace at the bottom of every thread's stack: the runtime's eager trace, installed once
# when it is imported (`set_base_trace`); None until then
_base = None

# called after every change of this thread's traces or axis environment, in that thread
# (the C++ dispatch key follows them); filled when modules are imported
_listeners: list = []


class TraceContext(threading.local):
    """The tracing state of one thread (a fresh one in every thread, over the base trace)."""

    def __init__(self):
        self.stack: list = [] if _base is None else [_base]
        self.current: list = [] if _base is None else [_base]
        self.axis_env: list = []
        self.axis_key: tuple = ()
        self.effect_frames: list = []
        self.effect_tokens = weakref.WeakKeyDictionary()  # trace -> its order token
        self.remat_settings: list = []
        self.remat_records: list[list] = []
        self.remat_pins: list[list] = []
        self.transposed_calls = weakref.WeakKeyDictionary()  # trace -> {key: [(fn, fn_t)]}
        self.concrete: list[dict] = []
        self.notes: list[list[str]] = []
        self.attention_reports: list[list[dict]] = []


ctx = TraceContext()


def set_base(trace) -> None:
    """Make `trace` the bottom of every thread's stack (this one's now, new threads' later)."""
    global _base
    _base = trace
    ctx.stack[:] = [trace]
    ctx.current[:] = [trace]


def base():
    return _base


def on_change(listener) -> None:
    """Call `listener()` after a trace is pushed or popped, the current trace changes or an
    axis is bound or unbound, in the thread where it happened."""
    _listeners.append(listener)


def changed() -> None:
    for listener in _listeners:
        listener()


# ---- the axis environment --------------------------------------------------------------------


def _frame_key(frame) -> tuple:
    return (
        type(frame).__name__,
        tuple(frame.axis_names),
        tuple(frame.mesh_shape),
        bool(getattr(frame, "check_vma", False)),
    )


@contextlib.contextmanager
def binding_axes(frame):
    """Bind the axes of `frame` (anything with `axis_names` and `mesh_shape`) in this
    block; yields `frame`."""
    env = ctx.axis_env
    env.append(frame)
    ctx.axis_key = tuple(_frame_key(f) for f in env)
    changed()
    try:
        yield frame
    finally:
        popped = env.pop()
        ctx.axis_key = tuple(_frame_key(f) for f in env)
        changed()
        assert popped is frame, "axis environment corrupted"


def axis_env() -> list:
    """This thread's bound axes, innermost last (read only)."""
    return ctx.axis_env


def dispatch_key() -> tuple:
    """What of this thread's context changes the program a jitted call traces to, beyond
    its arguments and the global options: () when nothing is bound."""
    return ctx.axis_key


# ---- differentiation options and records -----------------------------------------------------


@contextlib.contextmanager
def remat_settings(settings):
    """Differentiations traced in this block follow `settings` (a jit's compiler options)."""
    ctx.remat_settings.append(settings)
    try:
        yield settings
    finally:
        ctx.remat_settings.pop()


def active_remat_settings():
    """The innermost `remat_settings` block's, or None outside any."""
    s = ctx.remat_settings
    return s[-1] if s else None


@contextlib.contextmanager
def _collecting(stack: list):
    out: list = []
    stack.append(out)
    try:
        yield out
    finally:
        # by identity: `list.remove` compares by value, and two empty collectors are equal
        del stack[next(i for i, x in enumerate(stack) if x is out)]


def collecting_remat_records():
    """Collect the records of the differentiations traced in this block (the innermost
    collector gets each)."""
    return _collecting(ctx.remat_records)


def remat_record(rec) -> None:
    if ctx.remat_records:
        ctx.remat_records[-1].append(rec)


def collecting_pins():
    """Collect the values `pin` is given in this block (every enclosing collector too)."""
    return _collecting(ctx.remat_pins)


def pin(values) -> None:
    for c in ctx.remat_pins:
        c.extend(values)


def collecting_attention_reports():
    """Collect what the attention rewrite reports inside differentiations traced in this
    block (the innermost collector gets each; `purejit.fused_attention`)."""
    return _collecting(ctx.attention_reports)


# ---- concrete inputs of a lowering -----------------------------------------------------------


@contextlib.contextmanager
def concrete_inputs():
    """A lowering in progress: yields the dict `id(input tracer) -> (tracer, array)` that
    its trace fills with the arrays its inputs stand for in the call being compiled."""
    known: dict = {}
    ctx.concrete.append(known)
    try:
        yield known
    finally:
        ctx.concrete.pop()


def concrete_input(x):
    """The array the input tracer `x` of a lowering in progress stands for, or None."""
    for known in reversed(ctx.concrete):
        hit = known.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
    return None


# ---- transformation notes --------------------------------------------------------------------


def collecting_notes():
    """Collect the notes recorded in this block; yields the list they are appended to."""
    return _collecting(ctx.notes)


def note(text: str) -> None:
    """Record one note with every collector (duplicates are dropped)."""
    for c in ctx.notes:
        if text not in c:
            c.append(text)


@contextlib.contextmanager
def notes_paused():
    """Record no notes in this block."""
    saved = ctx.notes[:]
    ctx.notes.clear()
    try:
        yield
    finally:
        ctx.notes[:] = saved


__all__ = [
    "TraceContext",
    "active_remat_settings",
    "collecting_attention_reports",
    "axis_env",
    "base",
    "binding_axes",
    "changed",
    "collecting_notes",
    "collecting_pins",
    "collecting_remat_records",
    "concrete_input",
    "concrete_inputs",
    "ctx",
    "dispatch_key",
    "note",
    "notes_paused",
    "on_change",
    "pin",
    "remat_record",
    "remat_settings",
    "set_base",
]
