"""`verify(fn)`: checks types, SSA dominance and region signatures of a function."""

from __future__ import annotations

from purejit.ir.core import Function, Value
from purejit.ir.registry import IRTypeError, get_op


class VerifyError(ValueError):
    """The IR is malformed; the message names the op and what is wrong."""


def _verify_body(fn: Function, where: str):
    defined: set[Value] = set(fn.params)
    if len(defined) != len(fn.params):
        raise VerifyError(f"{where}: a parameter appears twice")
    for k, op in enumerate(fn.ops):
        tag = f"{where}: op #{k} {op.name}"
        opdef = get_op(op.name)
        for v in op.operands:
            if v not in defined:
                raise VerifyError(f"{tag}: operand {v} is not defined before use")
        if opdef.num_regions is not None and len(op.regions) != opdef.num_regions:
            raise VerifyError(f"{tag}: expects {opdef.num_regions} regions, has {len(op.regions)}")
        for r in op.regions:
            _verify_body(r, f"{tag} region")
        try:
            expected = opdef.infer([v.type for v in op.operands], op.attrs, op.regions)
        except IRTypeError as e:
            raise VerifyError(f"{tag}: {e}") from None
        got = [r.type for r in op.results]
        if got != list(expected):
            raise VerifyError(f"{tag}: result types {got} but the type rule gives {expected}")
        for r in op.results:
            if r in defined:
                raise VerifyError(f"{tag}: result {r} defined twice")
            defined.add(r)
    for v in fn.results:
        if v not in defined:
            raise VerifyError(f"{where}: returned value {v} is not defined")


def verify(fn: Function) -> Function:
    """Raise VerifyError if `fn` is malformed; return it unchanged otherwise."""
    _verify_body(fn, f"@{fn.name}")
    return fn
