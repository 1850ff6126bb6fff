"""Batching rules of the Householder ops (ir/ops/householder.py): like the linalg family's,
the batch becomes one more leading dimension of every operand."""

from __future__ import annotations

from purejit.transforms.batching.core import defrule
from purejit.transforms.batching.linalg import leading_batch_rule

for _name in ("geqrf", "householder_product", "ormqr", "gehrd", "sytrd"):
    defrule(_name)(leading_batch_rule(_name))
