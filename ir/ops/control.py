"""Control flow ops with regions: `case` and `while` (StableHLO semantics).

Regions are closed functions, so every value a branch or loop body reads from outside is an
explicit operand of the op:

    case(index, args...) region(args...) {...} region(args...) {...}
        Runs branch `index` on `args`; every branch takes the same parameters and returns the
        same types. As in StableHLO, an index outside [0, N) runs the last branch.

    while(carry..., invariants...) region(carry..., invariants...) {cond -> pred[]}
                                    region(carry..., invariants...) {body -> carry...}
        Runs `body` while `cond` holds. The first N operands are the loop-carried values
        (N = number of body results, which are the op's results); the remaining operands are
        loop invariants that both regions read but never change (in StableHLO they are
        captured from the enclosing scope instead of being carried).

    scan(consts..., carry..., xs...) {length, reverse, unroll, num_consts, num_carry}
        region(consts..., carry..., x...) {body -> carry..., y...}
        JAX's `lax.scan` as one op: the body runs `length` times, step i reading slice i of
        every `xs` operand (each stacked along a leading axis of size `length`) and writing
        slice i of every stacked `ys` result. Results: the final carry, then the ys. With
        `reverse` the steps run from i = length - 1 down to 0; slice i of ys still belongs
        to slice i of xs. `unroll` is how many body copies one loop trip runs (XLA's unroll
        factor, at least 1); it changes the emitted loop, never the numbers.
"""

from __future__ import annotations

import numpy as np
from purejit.ir.core import TensorType
from purejit.ir.registry import OpDef, fail, register

_CONTROL = frozenset({"pure", "control_flow"})


def _types(ts) -> str:
    return "(" + ", ".join(str(t) for t in ts) + ")"


# case(index, args...) region(args...) per branch ---------------------------------------------


def _case_infer(types, attrs, regions):
    if not types:
        fail("case", "expects an index operand")
    index, args = types[0], list(types[1:])
    if index.shape != () or index.dtype != np.int32:
        fail("case", f"index must be an s32 scalar, got {index}")
    if not regions:
        fail("case", "needs at least one branch region")
    results = regions[0].result_types
    for k, branch in enumerate(regions):
        if branch.param_types != args:
            got, want = _types(branch.param_types), _types(args)
            fail("case", f"branch {k} takes {got}, operands are {want}")
        if branch.result_types != results:
            got, want = _types(branch.result_types), _types(results)
            fail("case", f"branch {k} returns {got}, branch 0 returns {want}")
    return list(results)


def _case_ref(args, attrs, regions, run):
    index = int(args[0])
    if not 0 <= index < len(regions):
        index = len(regions) - 1
    return run(regions[index], *args[1:])


register(
    OpDef(
        "case",
        _case_infer,
        _case_ref,
        _CONTROL,
        num_regions=None,
        doc="case(index, args...) region(args...)...: runs branch index (last if out of range)",
    )
)

# while(carry..., invariants...) region cond, region body -------------------------------------


def _while_infer(types, attrs, regions):
    if len(regions) != 2:
        fail("while", f"needs a cond and a body region, got {len(regions)} regions")
    cond, body = regions
    n = len(body.results)
    if n > len(types):
        fail("while", f"body returns {n} values but the op has only {len(types)} operands")
    carry = list(types[:n])
    for name, region in (("cond", cond), ("body", body)):
        if region.param_types != list(types):
            got, want = _types(region.param_types), _types(types)
            fail("while", f"{name} region takes {got}, operands are {want}")
    if cond.result_types != [TensorType((), np.bool_)]:
        fail("while", f"cond region must return pred[], got {_types(cond.result_types)}")
    if body.result_types != carry:
        fail("while", f"body returns {_types(body.result_types)}, the carry is {_types(carry)}")
    return carry


def _while_ref(args, attrs, regions, run):
    cond, body = regions
    n = len(body.results)
    carry, invariants = list(args[:n]), list(args[n:])
    while bool(run(cond, *carry, *invariants)[0]):
        carry = list(run(body, *carry, *invariants))
    return carry


register(
    OpDef(
        "while",
        _while_infer,
        _while_ref,
        _CONTROL,
        num_regions=2,
        doc="while(carry..., invariants...) region cond -> pred[], region body -> carry...",
    )
)

# scan(consts..., carry..., xs...) region(consts..., carry..., x...) -> (carry..., ys...) -------

SCAN_ATTRS = ("length", "reverse", "unroll", "num_consts", "num_carry")


def _int_attr(attrs, key: str, low: int, default=None) -> int:
    value = attrs.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        fail("scan", f"attribute {key} must be an int >= {low}, got {value!r}")
    return int(value)


def scan_split(attrs, items) -> tuple[list, list, list]:
    """(consts, carry, xs) of a scan's operands (or of anything laid out like them)."""
    nconst, ncarry = int(attrs["num_consts"]), int(attrs["num_carry"])
    items = list(items)
    return items[:nconst], items[nconst : nconst + ncarry], items[nconst + ncarry :]


def _scan_infer(types, attrs, regions):
    length = _int_attr(attrs, "length", 0)
    _int_attr(attrs, "unroll", 1, default=1)
    nconst = _int_attr(attrs, "num_consts", 0)
    ncarry = _int_attr(attrs, "num_carry", 0)
    if not isinstance(attrs.get("reverse", False), (bool, np.bool_)):
        fail("scan", f"attribute reverse must be a bool, got {attrs['reverse']!r}")
    if nconst + ncarry > len(types):
        fail(
            "scan",
            f"num_consts={nconst} and num_carry={ncarry} but the op has only {len(types)} operands",
        )
    if len(regions) != 1:
        fail("scan", f"needs one body region, got {len(regions)} regions")
    (body,) = regions
    consts, carry, xs = scan_split(attrs, types)
    slices = []
    for k, x in enumerate(xs):
        if x.rank == 0 or x.shape[0] != length:
            want = f"stacked along a leading axis of size length={length}"
            fail("scan", f"xs operand {k} is {x}, but it must be {want}")
        slices.append(TensorType(x.shape[1:], x.dtype))
    want = [*consts, *carry, *slices]
    if body.param_types != want:
        got, want = _types(body.param_types), _types(want)
        fail("scan", f"body takes {got}, but (consts, carry, x slices) are {want}")
    outs = body.result_types
    if outs[:ncarry] != carry:
        fail(
            "scan",
            f"body returns {_types(outs)}, but it must return the carry {_types(carry)} "
            "first, then one slice of each y",
        )
    ys = [TensorType((length, *y.shape), y.dtype) for y in outs[ncarry:]]
    return [*carry, *ys]


def _scan_ref(args, attrs, regions, run):
    (body,) = regions
    consts, carry, xs = scan_split(attrs, args)
    length, ncarry = int(attrs["length"]), len(carry)
    ys = [np.zeros((length, *t.shape), t.dtype) for t in body.result_types[ncarry:]]
    steps = range(length - 1, -1, -1) if attrs.get("reverse", False) else range(length)
    for i in steps:
        outs = run(body, *consts, *carry, *[x[i] for x in xs])
        carry = list(outs[:ncarry])
        for buf, y in zip(ys, outs[ncarry:]):
            buf[i] = y
    return [*carry, *ys]


register(
    OpDef(
        "scan",
        _scan_infer,
        _scan_ref,
        _CONTROL,
        attrs=SCAN_ATTRS,
        num_regions=1,
        doc="scan(consts..., carry..., xs...) region(consts..., carry..., x...) -> "
        "(carry..., y...): the op gives (carry..., ys stacked to length...)",
    )
)
