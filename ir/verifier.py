"""`verify(fn)`: checks types, SSA dominance and region signatures of a function.

Checked, for the function and (recursively) every region:
  * every operand is defined before its use, in the same (closed) region;
  * every value is defined once in its function or region (a region is a closed function;
    one region object may be shared by several ops, e.g. a cached `add` reduction body);
  * every op is registered, has the number of regions its definition asks for, and its
    result types are exactly those its type rule infers (the type rule also checks region
    signatures, e.g. `reduce`'s `(acc, x) -> acc`);
  * every returned value is defined.
"""

from __future__ import annotations

from purejit.ir.core import Function, Value
from purejit.ir.registry import IRTypeError, get_op


class VerifyError(ValueError):
    """The IR is malformed; the message names the op and what is wrong."""


def _types(vs) -> str:
    return "(" + ", ".join(str(v.type) for v in vs) + ")"


def _define(v: Value, seen: set[Value], tag: str, what: str):
    if v in seen:
        raise VerifyError(f"{tag}: {what} {v} is defined twice")
    seen.add(v)


def _verify_body(fn: Function, where: str):
    defined: set[Value] = set(fn.params)
    if len(defined) != len(fn.params):  # (a branch of a rolled loop's case has hundreds)
        defined = set()
        for p in fn.params:
            _define(p, defined, where, "parameter")
    for k, op in enumerate(fn.ops):
        tag = f"{where}: op #{k} {op.name}"
        try:
            opdef = get_op(op.name)
        except NotImplementedError as e:
            raise VerifyError(f"{tag}: {e}") from None
        for v in op.operands:
            if v not in defined:
                raise VerifyError(f"{tag}: operand {v} is not defined before use")
        if opdef.num_regions is not None and len(op.regions) != opdef.num_regions:
            raise VerifyError(f"{tag}: expects {opdef.num_regions} regions, has {len(op.regions)}")
        memo = getattr(op, "_verified", None)
        if (
            memo is not None
            and memo[0] is op.attrs
            and memo[1] == op.operands
            and memo[2] == op.results
            and memo[3] == op.regions
        ):
            # the same op object with the same values and regions was checked before (ops
            # and regions are immutable by convention: passes build new ones); only
            # dominance in this body is redone
            for r in op.results:
                _define(r, defined, tag, "result")
            continue
        for i, r in enumerate(op.regions):
            _verify_body(r, f"{tag} region {i}")
        try:
            expected = opdef.infer([v.type for v in op.operands], op.attrs, op.regions)
        except IRTypeError as e:
            raise VerifyError(f"{tag}: {e}") from None
        except (KeyError, TypeError, ValueError, IndexError) as e:
            # a type rule that crashed instead of rejecting: still the op's fault, not ours
            raise VerifyError(
                f"{tag}: malformed op {_types(op.operands)} {op.attrs}: {type(e).__name__}: {e}"
            ) from None
        got = [r.type for r in op.results]
        if got != list(expected):
            want = "(" + ", ".join(map(str, expected)) + ")"
            got = _types(op.results)
            raise VerifyError(f"{tag}: result types {got} but the type rule gives {want}")
        for r in op.results:
            _define(r, defined, tag, "result")
        # kept on the op, not in a table: the memo never keeps IR alive after its function
        op._verified = (op.attrs, list(op.operands), list(op.results), list(op.regions))
    for v in fn.results:
        if v not in defined:
            raise VerifyError(f"{where}: returned value {v} is not defined")


def verify(fn: Function) -> Function:
    """Raise VerifyError if `fn` is malformed; return it unchanged otherwise.

    Args:
        fn: the function to check.
    Returns:
        `fn` itself, so that `verify(pass_(fn))` chains.
    """
    _verify_body(fn, f"@{fn.name}")
    return fn
