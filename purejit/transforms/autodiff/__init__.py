"""Automatic differentiation as interpreters of purejit's IR.

`interpreter.py` holds the three interpreters (JVP, linearize, transpose) and `eager.py`
the trace that applies the same rules to a Python function on concrete values (outside
`jit`); the rules live one file per op family, named like `ir/ops/<family>.py`, each
holding the JVP and transpose rules of its family's ops. Importing this package registers
every rule.
"""

from purejit.transforms.autodiff import (  # noqa: F401  (registers the rules)
    autodiff,
    call,
    callback,
    collective,
    contraction,
    control,
    conv,
    elementwise,
    fft,
    fusion,
    gather,
    householder,
    indexing,
    linalg,
    random,
    reduce,
    shape,
    sort,
    tridiagonal,
    attention,
    user_primitive,
    powers,
)
from purejit.transforms.autodiff._core import (
    JVP_RULES,
    NOT_DIFFERENTIABLE,
    TRANSPOSE_RULES,
    Context,
    UndefinedPrimal,
    Zero,
    is_differentiable_dtype,
    tangent_aval,
)
from purejit.transforms.autodiff.interpreter import (
    LinearFunction,
    NonDifferentiableError,
    evaluate,
    jvp_function,
    linearize_function,
    transpose_function,
)

__all__ = [
    "Context",
    "JVP_RULES",
    "LinearFunction",
    "NOT_DIFFERENTIABLE",
    "NonDifferentiableError",
    "evaluate",
    "TRANSPOSE_RULES",
    "UndefinedPrimal",
    "Zero",
    "is_differentiable_dtype",
    "jvp_function",
    "linearize_function",
    "tangent_aval",
    "transpose_function",
]
