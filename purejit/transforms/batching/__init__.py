"""vmap's batching rules, one module per op family mirroring `ir/ops/<family>.py`.

`core` holds the interpreter (`batch_function`), the rule registry and the helpers rules
share (`moveaxis`, `matchaxis`, `bdim_at_front`, ...); importing this package registers every
family's rules. `tests/transforms/test_batching_completeness.py` lists every registered op
without a rule, and the ops batched by the looping fallback (`FALLBACKS`) with the reason.
"""

from purejit.transforms.batching import notes
from purejit.transforms.batching.core import (
    FALLBACKS,
    RULES,
    AxisData,
    batch_function,
    batch_region,
    bdim_at_front,
    broadcast_batched,
    defrule,
    matchaxis,
    moveaxis,
    not_mapped,
    reduce_batch,
)
from purejit.transforms.batching import (  # noqa: F401  (each registers its family's rules)
    attention,
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
    user_primitive,
)

__all__ = [
    "FALLBACKS",
    "RULES",
    "AxisData",
    "batch_function",
    "batch_region",
    "bdim_at_front",
    "broadcast_batched",
    "defrule",
    "matchaxis",
    "moveaxis",
    "not_mapped",
    "notes",
    "reduce_batch",
]
