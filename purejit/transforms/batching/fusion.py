"""Batching rule of `fusion` (ir/ops/fusion.py): the group's ops, batched one by one.

A fusion group is an optimisation the passes made; batched, its region is evaluated inline
(each op through its own rule), and the passes of the enclosing program group it again.
"""

from __future__ import annotations

from purejit.transforms.batching.core import batch_function, defrule


@defrule("fusion")
def fusion_rule(axis, args, dims, *, regions, kind):
    return batch_function(regions[0], args, dims, axis)
