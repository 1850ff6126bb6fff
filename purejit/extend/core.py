"""User-defined primitives, as `jax.extend.core.Primitive`.

A `Primitive` is a named operation whose rules the user supplies: `def_impl` (run on
concrete arrays), `def_abstract_eval` (result shapes and dtypes from the operands'), and,
in the tables of `purejit.extend.ad`, `.batching` and `.mlir`, its JVP, transpose, batching
rule and lowering. Bound on concrete arrays outside any transformation, it runs its
implementation; bound on tracers, it becomes one `user_primitive` op
(`ir/ops/user_primitive.py`) that carries the primitive and this use's parameters by key,
with its lowering traced as the op's region. So it flows through `jit`, `grad`, `vmap`,
control flow, `checkpoint` and the passes like a built-in op.

Effects: a primitive is pure (removed when unused, merged with an identical use) unless
`def_effectful_abstract_eval`'s rule returns effects, which makes that use a
`user_primitive_effect` op that no pass removes, merges or reorders.
"""

from __future__ import annotations

import weakref
from typing import Callable

import numpy as np

from purejit import dtypes as pdt
from purejit.ir import TensorType
from purejit.ir.ops.user_primitive import register_use
from purejit.random._keys import PRNGKeyArray
from purejit.runtime import eval_trace
from purejit.tracing import (
    ShapedArray,
    Tracer,
    aval_of,
    bind,
    current_trace,
    find_top_trace,
    set_current_trace,
)
from purejit.transforms.autodiff._core import UndefinedPrimal, Zero, tangent_aval
from purejit.transforms.batching.core import not_mapped

from purejit.extend import _tables
from purejit.extend.jaxpr import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    Var,
    eval_jaxpr,
    jaxpr_as_fun,
    jaxprs_in_params,
    subjaxprs,
)


def _as_aval(x, what: str) -> ShapedArray:
    """An abstract value from what a user's rule returned (ShapedArray, ShapeDtypeStruct,
    anything with shape and dtype)."""
    if isinstance(x, ShapedArray):
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return ShapedArray(tuple(int(d) for d in x.shape), np.dtype(x.dtype),
                           bool(getattr(x, "weak_type", False)))  # fmt: skip
    raise TypeError(f"{what} must return abstract values (ShapedArray), got {type(x).__name__}")


def get_aval(x) -> ShapedArray:
    """The abstract value of an array, tracer or Python scalar."""
    return aval_of(x)


def valid_jaxtype(x) -> bool:
    """Whether `x` can be an array argument: an array, a tracer, a Python or NumPy scalar,
    or a typed PRNG key (not a list, a string or None)."""
    if isinstance(x, PRNGKeyArray):
        return True
    try:
        aval_of(x)
    except TypeError:
        return False
    return True


def primal_dtype_to_tangent_dtype(primal_dtype) -> np.dtype:
    """The dtype of a tangent of values of `primal_dtype`: the same for floating and complex
    dtypes, float0 (no data) for integers, bool and PRNG keys."""
    if pdt.is_key_dtype(primal_dtype):
        return pdt.float0
    return tangent_aval(ShapedArray((), np.dtype(primal_dtype))).dtype


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
    """`aval` with its axis `axis` (of length `size`) removed: one example of a batch
    (`axis` None: `aval` itself), as JAX's."""
    if axis is None:
        return aval
    shape = list(aval.shape)
    if shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} is not of size {size}")
    del shape[axis]
    return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def unmapped_aval(
    size: int, axis: int | None, aval: ShapedArray, explicit_mesh_axis=None
) -> ShapedArray:
    """`aval` with an axis of length `size` inserted at `axis`: a batch of it (`axis` None:
    `aval` itself), as JAX's."""
    if explicit_mesh_axis is not None:
        raise NotImplementedError(
            "unmapped_aval(explicit_mesh_axis=...): purejit's abstract values carry no "
            "sharding; pass explicit_mesh_axis=None"
        )
    if axis is None:
        return aval
    shape = list(aval.shape)
    shape.insert(axis, size)
    return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


class Effect:
    """The base class of effects (JAX's `jax.extend.core.Effect`): an effectful abstract
    evaluation returns instances of its subclasses; any effect keeps the use in the program
    (`user_primitive_effect`)."""


class Primitive:
    """A user-defined primitive, as `jax.extend.core.Primitive`.

    Args:
        name: its name (in IR, errors and `explain`).
    """

    multiple_results = False
    call_primitive = False
    map_primitive = False

    def __init__(self, name: str):
        self.name = name
        self.impl = None
        self._abstract = None
        self._effectful = False

    def __repr__(self):
        return self.name

    def def_impl(self, impl: Callable) -> Callable:
        """`impl(*arrays, **params)`: the primitive on concrete arrays."""
        self.impl = impl
        return impl

    def def_abstract_eval(self, abstract_eval: Callable) -> Callable:
        """`abstract_eval(*avals, **params)`: the result's abstract value (a list of them
        with `multiple_results`)."""
        self._abstract = abstract_eval
        self._effectful = False
        return abstract_eval

    def def_effectful_abstract_eval(self, rule: Callable) -> Callable:
        """`rule(*avals, **params) -> (abstract values, effects)`; a use with effects is
        kept by every pass."""
        self._abstract = rule
        self._effectful = True
        return rule

    def abstract_eval(self, *avals, **params):
        """`(result abstract values, effects)`, as JAX's."""
        if self._abstract is None:
            raise NotImplementedError(
                f"Abstract evaluation for '{self.name}' not implemented: define it with "
                f"{self.name}.def_abstract_eval"
            )
        got = self._abstract(*avals, **params)
        return got if self._effectful else (got, set())

    def _out_avals(self, avals, params) -> tuple[list[ShapedArray], bool]:
        out, effects = self.abstract_eval(*avals, **params)
        what = f"the abstract evaluation of {self.name!r}"
        outs = list(out) if self.multiple_results else [out]
        return [_as_aval(o, what) for o in outs], bool(effects)

    def bind(self, *args, **params):
        """Apply the primitive: its implementation on concrete arrays, else one op in the
        trace of the deepest tracer among `args`."""
        top = find_top_trace(args)
        if top is eval_trace and not any(isinstance(a, Tracer) for a in args):
            if self.impl is None:
                raise NotImplementedError(
                    f"Evaluation rule for '{self.name}' not implemented: define it with "
                    f"{self.name}.def_impl"
                )
            return self.impl(*args, **params)
        avals = [aval_of(a) for a in args]
        out_avals, effectful = self._out_avals(avals, params)
        use = _Use(self, params)
        key = _register(self, params, use)
        region = _tables.lowering_region(self, avals, params, out_avals)
        outs = bind(
            "user_primitive_effect" if effectful else "user_primitive",
            *args,
            regions=[region] if region is not None else [],
            primitive=key,
            weak=tuple(a.weak_type for a in out_avals),
        )
        return list(outs) if self.multiple_results else outs[0]


def _register(prim, params, use) -> str:
    try:
        identity = (prim, tuple(sorted(params.items())))
        hash(identity)
        return register_use(prim.name, use, identity)
    except (TypeError, ValueError):  # parameters that do not hash or compare: a key per use
        return register_use(prim.name, use)


class _Use:
    """One primitive with the parameters of its uses: what the `user_primitive` op's key
    names, and what its rules (type, reference, JVP, transpose, batching) ask."""

    def __init__(self, prim: Primitive, params: dict):
        self.prim, self.params = prim, dict(params)

    def _single(self, xs):
        return list(xs) if self.prim.multiple_results else [xs]

    def infer(self, types) -> list[TensorType]:
        avals = [ShapedArray(tuple(t.shape), t.dtype) for t in types]
        outs, _ = self.prim._out_avals(avals, self.params)
        return [TensorType(a.shape, a.dtype) for a in outs]

    def reference(self, arrays) -> list[np.ndarray]:
        prim = self.prim
        if prim.impl is None:
            raise NotImplementedError(f"Evaluation rule for '{prim.name}' not implemented")
        with set_current_trace(eval_trace):  # the NumPy oracle runs it on concrete arrays
            got = prim.impl(*arrays, **self.params)
        return [np.asarray(o) for o in self._single(got)]

    def jvp(self, primals, tangents):
        prim = self.prim
        rule = _tables.primitive_jvps.get(prim)
        if rule is None:
            raise NotImplementedError(
                f"Differentiation rule for '{prim.name}' not implemented: set "
                f"purejit.extend.ad.primitive_jvps[{prim.name}] (jax.interpreters.ad)"
            )
        out, tout = rule(primals, tangents, **self.params)
        outs, touts = self._single(out), self._single(tout)
        if len(outs) != len(touts):
            raise TypeError(
                f"the JVP rule of {prim.name!r} returned {len(outs)} primal outputs and "
                f"{len(touts)} tangents; they must correspond"
            )
        return outs, [Zero(_tangent_aval(o)) if t is None else t for o, t in zip(outs, touts)]

    def transpose(self, cts, operands):
        prim = self.prim
        rule = _tables.primitive_transposes.get(prim)
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for '{prim.name}' not "
                f"implemented: set purejit.extend.ad.primitive_transposes[{prim.name}]"
            )
        ct = cts if prim.multiple_results else cts[0]
        got = list(rule(ct, *operands, **self.params))
        if len(got) != len(operands):
            raise TypeError(
                f"the transpose rule of {prim.name!r} returned {len(got)} cotangents for "
                f"{len(operands)} operands"
            )
        out = []
        for g, x in zip(got, operands):
            if not isinstance(x, UndefinedPrimal):
                out.append(None)
            elif g is None:
                out.append(Zero(x.aval))
            else:
                out.append(g)
        return out

    def batch(self, axis, args, dims):
        prim = self.prim
        dims = [not_mapped if d is None else d for d in dims]
        rule = _tables.axis_primitive_batchers.get(prim)
        if rule is not None:
            outs, odims = rule(axis.size, axis.name, None, args, dims, **self.params)
        else:
            rule = _tables.primitive_batchers.get(prim)
            if rule is None:
                raise NotImplementedError(
                    f"Batching rule for '{prim.name}' not implemented: set "
                    f"purejit.extend.batching.primitive_batchers[{prim.name}]"
                )
            outs, odims = rule(args, dims, **self.params)
        outs, odims = self._single(outs), self._single(odims)
        return outs, [None if d is not_mapped else d for d in odims]


def _tangent_aval(x) -> ShapedArray:
    return tangent_aval(aval_of(x))


class OpaqueTraceState:
    """Which trace is current, as an opaque token: two are equal when taken under the same
    trace (the same `jit`, `grad` or `vmap` trace in progress, or both outside any). A
    library compares the token saved when a value was created with the current one to
    refuse mutating it from inside a transformation (Flax's nnx Variables)."""

    __slots__ = ("_ref",)

    def __init__(self, trace):
        self._ref = weakref.ref(trace)

    def __eq__(self, other):
        return isinstance(other, OpaqueTraceState) and self._ref == other._ref

    __hash__ = None  # as JAX's: compared, never used as a key

    def __repr__(self):
        trace = self._ref()
        return f"OpaqueTraceState({type(trace).__name__ if trace is not None else 'finished'})"


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
    """The current trace as an `OpaqueTraceState` (`convention` is accepted and ignored,
    as in JAX)."""
    del convention
    return OpaqueTraceState(current_trace())


__all__ = [
    "ClosedJaxpr",
    "Effect",
    "Jaxpr",
    "JaxprEqn",
    "Literal",
    "OpaqueTraceState",
    "Primitive",
    "ShapedArray",
    "Var",
    "eval_jaxpr",
    "jaxpr_as_fun",
    "jaxprs_in_params",
    "find_top_trace",
    "get_opaque_trace_state",
    "mapped_aval",
    "primal_dtype_to_tangent_dtype",
    "subjaxprs",
    "unmapped_aval",
    "valid_jaxtype",
]
