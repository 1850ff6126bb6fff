"""The closed list of op traits: what an op promises, for passes to ask instead of its name.

`register` rejects an op whose traits are not all listed here, and `Op.has_trait` rejects a
query for an unlisted trait, so a misspelt trait fails loudly instead of silently never
matching. A pass that needs a new fact about ops adds it here, with its promise, and to
the ops that have it.
"""

from __future__ import annotations

TRAIT_DOCS: dict[str, str] = {
    "pure": "no side effect: removable when unused, mergeable by CSE",
    "elementwise": "result[i] depends only on operands[i]; all operand and result shapes equal",
    "commutative": "binary op with f(a, b) == f(b, a)",
    "associative": "binary op with f(f(a, b), c) == f(a, f(b, c))",
    "idempotent": "binary op with f(x, x) == x",
    "involution": "unary op with f(f(x)) == x",
    "cheap": "one ALU operation per element: recomputing it in every kernel that reads it "
    "costs less than storing it",
    "reduction": "combines elements along dimensions with a region (an input fusion's root)",
    "contraction": "dot-like: each output element reads a whole row or column of its operands",
    "constant": "produces a compile-time array from its attributes alone",
    "view": "reinterprets its operand's buffer (a row-major reshape): XLA launches no kernel",
    "shape_only": "moves or copies data without arithmetic (reshape, transpose, slice, ...)",
    "fusion": "a fused kernel: its region is the computation, run as one loop",
    "control_flow": "has regions that run conditionally or repeatedly",
    "collective": "communicates between devices: every device runs it, in the same order",
    "per_device": "its result depends on which device runs it (SPMD programs only)",
    "side_effect": "has an effect besides its results: always kept, never reordered",
    "saved": "expensive, with results the backward pass reads (fused attention): remat saves "
    "them and never recomputes the op, whatever the budget",
    "accumulates": "its floating-point result depends on the order XLA sums in or on a "
    "library kernel (dots, convolutions, reductions, scatter, FFT, LAPACK/cuSOLVER calls): "
    "NumPy's pairwise sums and BLAS round otherwise, so constant folding leaves float ones "
    "to XLA",
    "approximate": "XLA computes it with its own approximation (transcendental functions): "
    "the NumPy reference can differ in the last bits, so constant folding leaves it to XLA "
    "and a program gives the same numbers whether its inputs are constants or arguments",
}

TRAITS: frozenset[str] = frozenset(TRAIT_DOCS)


def unknown_traits_message(what: str, unknown) -> str:
    """The error text for traits outside the list, naming `what` asked for them."""
    listed = ", ".join(sorted(TRAITS))
    return f"{what}: unknown trait(s) {sorted(unknown)}; the traits are: {listed}"
