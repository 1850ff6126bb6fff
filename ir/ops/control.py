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
