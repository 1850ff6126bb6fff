"""purejit's IR: types, values, ops, functions, the op registry, text form, verifier and
reference interpreter. Imports only numpy and ml_dtypes."""

from purejit.ir import ops as _ops  # noqa: F401  (registers every op)
from purejit.ir.core import Builder, Function, Op, TensorType, Value
from purejit.ir.interpreter import interpret
from purejit.ir.parser import ParseError, parse
from purejit.ir.printer import print_function
from purejit.ir.registry import IRTypeError, OpDef, all_ops, get_op, register
from purejit.ir.traits import TRAITS
from purejit.ir.verifier import VerifyError, verify

__all__ = [
    "Builder",
    "Function",
    "IRTypeError",
    "Op",
    "OpDef",
    "ParseError",
    "TRAITS",
    "TensorType",
    "Value",
    "VerifyError",
    "all_ops",
    "get_op",
    "interpret",
    "parse",
    "print_function",
    "register",
    "verify",
]
