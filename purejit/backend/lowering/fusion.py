"""StableHLO lowering of the fusion family (`ir/ops/fusion.py`): a `fusion` group emitted by
the route the emission context names (`ctx.fusion_route`, see `fusion_routes.py`).

Every op of a group is tagged with the location `loc("purejit.fusion.N")`.
"""

from __future__ import annotations

from purejit.backend.fusion_routes import ROUTES, TAG, route_problem, warn_once
from purejit.backend.lowering._util import lowering, mlir_type


def _next_tag(ctx) -> str:
    n = getattr(ctx, "fusion_count", 0)
    ctx.fusion_count = n + 1
    return f"{TAG}{n}"


def _tag_text(text: str, tag: str) -> str:
    """Append `loc(tag)` to every complete op line of `text` (nested regions included)."""
    out = []
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith(("%", '"', "})")) and not s.endswith(("{", "(")) and " loc(" not in s:
            line = f'{line} loc("{tag}")'
        out.append(line)
    return "\n".join(out)


def _tag_lines(ctx, start: int, tag: str):
    """Tag every op emitted since `start` with `loc(tag)`; XLA keeps it as `op_name`."""
    for i in range(start, len(ctx.lines)):
        ctx.lines[i] = _tag_text(ctx.lines[i], tag)


def _private_func(ctx, sym: str, body) -> str:
    """`body` as a module-level `func.func private @sym`."""
    params, lines = ctx.body(body, terminator="func.return", indent="    ")
    types = ", ".join(mlir_type(v.type) for v in body.results)
    head = f"func.func private @{sym}({', '.join(params)}) -> ({types}) {{"
    return "\n".join([head, *lines, "  }"])


@lowering("fusion")
def _fusion(ctx, op, args):
    route = getattr(ctx, "fusion_route", "xla")
    tag = _next_tag(ctx)
    (body,) = op.regions
    cap = getattr(ctx, "fusion_capability", None)
    problem = None if route == "xla" else route_problem(body, route, cap)
    if problem is not None:
        warn_once(
            f"unsafe:{route}:{problem}",
            f"fusion: a group with {problem} cannot be realised with {route} on this back "
            "end; it is inlined and XLA fuses it (run the default pipeline, which forms only "
            "groups the back end takes).",
        )
        route = "xla"
    start = len(ctx.lines)
    in_types = [v.type for v in op.operands]
    out_types = [r.type for r in op.results]
    if route == "mhlo.fusion":
        outs = ctx.op(
            "mhlo.fusion",
            args,
            in_types,
            out_types,
            "fusion_kind = #mhlo<fusion_kind kLoop>",
            [ctx.region(body)],
        )
    elif route == "call":
        sym = tag.replace(".", "_")
        ctx.module_ops[sym] = _private_func(ctx, sym, body)
        attrs = f'callee = @{sym}, mhlo.frontend_attributes = {{inlineable = "false"}}'
        outs = ctx.op("func.call", args, in_types, out_types, attrs)
    elif route == "xla":
        outs = ctx.inline(body, args)
    else:
        raise NotImplementedError(f"fusion: unknown route {route!r}; known: {list(ROUTES)}")
    _tag_lines(ctx, start, tag)
    return outs
