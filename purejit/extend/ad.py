"""Differentiation rules of user-defined primitives, under the names of
`jax.interpreters.ad`: `primitive_jvps[prim] = jvp(primals, tangents, **params) ->
(primal_out, tangent_out)` and `primitive_transposes[prim] = transpose(cts, *operands,
**params) -> cotangent per operand`, where a symbolic zero is a `Zero` and a linear operand
being transposed an `UndefinedPrimal`, both with `.aval`."""

from __future__ import annotations

from typing import Callable

from purejit.extend._tables import primitive_jvps, primitive_transposes
from purejit.tracing import ShapedArray, Tracer
from purejit.transforms.autodiff._core import UndefinedPrimal, Zero, add, instantiate, zeros


class _TracerOfATrace(type):
    def __instancecheck__(cls, x) -> bool:
        return isinstance(x, Tracer)


class JVPTracer(metaclass=_TracerOfATrace):
    """What `isinstance(x, ad.JVPTracer)` tests: whether `x` is a tracer. purejit's `jvp`
    traces its function into the IR, so the tracers a `jvp` makes are its trace's tracers
    (`x._trace.main is trace.main` picks them out, as Equinox's `filter_jvp` does). JAX's
    JVPTracers are only the values that depend on the inputs; purejit's are every value the
    function computes, so an output independent of the inputs gets a zero tangent where
    Equinox gives None."""


def is_undefined_primal(x) -> bool:
    """Whether a transpose rule's operand is a linear one."""
    return isinstance(x, UndefinedPrimal)


def instantiate_zeros(t):
    """`t` as an array: zeros for a symbolic `Zero`."""
    return instantiate(t)


def zeros_like_aval(aval: ShapedArray):
    """An array of zeros of `aval`."""
    return zeros(aval)


def defjvp(prim, *jvprules: Callable | None) -> None:
    """Set `prim`'s JVP from one rule per operand, `rule(tangent, *primals, **params)` (None:
    no dependence), summed, as JAX's `ad.defjvp`."""

    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        total = None
        for rule, t in zip(jvprules, tangents):
            if rule is None or isinstance(t, Zero):
                continue
            term = rule(t, *primals, **params)
            total = term if total is None else add(total, term)
        return out, Zero.from_primal_value(out) if total is None else total

    primitive_jvps[prim] = jvp


def defjvp_zero(prim) -> None:
    """Set `prim`'s JVP to zero (its results do not depend on its operands' tangents)."""

    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if prim.multiple_results:
            return out, [Zero.from_primal_value(o) for o in out]
        return out, Zero.from_primal_value(out)

    primitive_jvps[prim] = jvp


__all__ = [
    "JVPTracer",
    "UndefinedPrimal",
    "Zero",
    "defjvp",
    "defjvp_zero",
    "instantiate_zeros",
    "is_undefined_primal",
    "primitive_jvps",
    "primitive_transposes",
    "zeros_like_aval",
]
