"""Differentiation rules of the random family (`ir/ops/random.py`)."""

from __future__ import annotations

from purejit.transforms.autodiff._core import not_differentiable

# the hash maps keys and counters to random bits: JAX's threefry2x32_p has no JVP either
# (keys are never differentiated; a sampler's derivative flows through its parameters)
not_differentiable("integer or boolean results", "threefry2x32")
