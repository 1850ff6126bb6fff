"""Order tokens of ordered host callbacks, threaded through control flow as JAX threads its
effect tokens.

Each trace holds its current order token (a `pred[]` value): an ordered callback reads it
and leaves the token it returns as the new current one, so XLA runs the callbacks of one
program in program order. A `cond`/`switch` branch or a `scan`/`while_loop` body that makes
ordered callbacks gets the enclosing trace's token as an extra operand and returns its last
token as an extra result (a loop carry), which becomes the enclosing trace's token: the
body's calls run after the ones before the op and before the ones after it.

Control flow traces a body once without a token; when an ordered callback inside asked for
one (`_Frame.used`), it traces the body again with the token threaded through.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from purejit.ir.ops.callback import ORDER_TOKEN
from purejit.runtime import Array, eval_trace
from purejit.tracing import ShapedArray, current_trace
from purejit.tracing.context import ctx

TOKEN_AVAL = ShapedArray(ORDER_TOKEN.shape, ORDER_TOKEN.dtype, False)

# the tokens (by trace) and the frames of the bodies being traced are this thread's
# (`TraceContext.effect_tokens`, `.effect_frames`): another thread's ordered callbacks are
# not ordered with this one's


@dataclass
class _Frame:
    """A control-flow body being traced: its trace, and whether an ordered callback in it
    asked for a token it did not have."""

    trace: object = None
    used: bool = False


def _fresh():
    return Array(host=np.zeros(ORDER_TOKEN.shape, ORDER_TOKEN.dtype))


def current_token():
    """The current trace's order token (a fresh one at the start of a program)."""
    trace = current_trace()
    tok = ctx.effect_tokens.get(trace)
    if tok is None:
        frames = ctx.effect_frames
        if frames and frames[-1].trace is trace:
            frames[-1].used = True  # the body must be traced again with a token
        tok = _fresh()
    return tok


def set_token(token) -> None:
    """Make `token` (returned by an ordered op) the current trace's order token."""
    ctx.effect_tokens[current_trace()] = token


def wait_eager() -> None:
    """Outside jit: wait until the ordered callbacks already dispatched have run."""
    tok = ctx.effect_tokens.get(eval_trace)
    if type(tok) is Array:
        tok.block_until_ready()


class body_frame:
    """`with body_frame() as frame:` around the call of a body, inside its trace."""

    def __enter__(self) -> _Frame:
        self.frame = _Frame(current_trace())
        ctx.effect_frames.append(self.frame)
        return self.frame

    def __exit__(self, *exc) -> None:
        ctx.effect_frames.pop()
