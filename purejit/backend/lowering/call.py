"""StableHLO lowering of `call` (`ir/ops/call.py`): the called function's ops, inlined.

XLA inlines `func.call` when it imports a module (see DESIGN.md, "Passes"), so emitting the
body in place gives XLA the same program with less text; a call the passes keep on purpose
(the compile-once work) will be emitted as a private function instead.
"""

from __future__ import annotations

from purejit.backend.lowering._util import lowering


@lowering("call")
def _call(ctx, op, args):
    return ctx.inline(op.regions[0], list(args))
