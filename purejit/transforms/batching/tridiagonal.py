"""Batching rules of the tridiagonal ops (ir/ops/tridiagonal.py): the batch becomes one more
leading dimension of every operand, as for the linalg family."""

from __future__ import annotations

from purejit.transforms.batching.core import defrule
from purejit.transforms.batching.linalg import leading_batch_rule

defrule("tridiagonal_solve")(leading_batch_rule("tridiagonal_solve"))
