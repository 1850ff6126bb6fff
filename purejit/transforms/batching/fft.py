"""Batching rule of fft (ir/ops/fft.py): it transforms the trailing dimensions, so the
vmapped dimension goes first and the op runs unchanged."""

from __future__ import annotations

from purejit.transforms.batching.core import defrule
from purejit.transforms.batching.linalg import front_rule

defrule("fft")(front_rule("fft"))
