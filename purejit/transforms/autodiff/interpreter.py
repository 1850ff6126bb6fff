"""Forward mode, linearization and transposition, each an interpreter of an IR function.

`jvp_function` walks a function op by op with a (primal, tangent) pair per value, calling
each op's JVP rule; primal and tangent ops bind into whichever trace their operands live in.
`linearize_function` runs it with tangents that are the inputs of a fresh linear `JitTrace`
pushed above the current trace (which stays current): primal ops run where they always
would, and only ops that read a tangent are recorded, giving the linear program (its
captured inputs are the residuals). `transpose_function` runs a linear program backwards:
ops that do not read a linear input are evaluated forward, then each linear op's transpose
rule maps the cotangents of its results to cotangents of its linear operands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from purejit import errors
from purejit.ir import Function, Value
from purejit.tracing import (
    JitTrace,
    ShapedArray,
    bind,
    current_trace,
    new_trace,
    set_current_trace,
)
from purejit.transforms.autodiff._core import (
    JVP_RULES,
    NOT_DIFFERENTIABLE,
    TRANSPOSE_RULES,
    Context,
    UndefinedPrimal,
    Unsupported,
    Zero,
    add,
    instantiate,
    is_differentiable_dtype,
    tangent_aval,
)


def _aval(v: Value) -> ShapedArray:
    return ShapedArray(v.type.shape, v.type.dtype)


class NonDifferentiableError(errors.PurejitTypeError):
    """An op on the path from the inputs to the outputs has no derivative."""


def jvp_function(fn: Function, primals: Sequence, tangents: Sequence, ctx: Context):
    """Evaluate `fn` on `primals` and push `tangents` (values or `Zero`) forward.

    Returns:
        (primal results, tangent results), tangents `Zero` where they do not depend on any
        input tangent.
    """
    prev = errors.set_location(None, None)
    try:
        return _jvp_function(fn, primals, tangents, ctx)
    finally:
        errors.restore_location(prev)


def _jvp_function(fn: Function, primals: Sequence, tangents: Sequence, ctx: Context):
    env = dict(zip(fn.params, primals))
    tenv = dict(zip(fn.params, tangents))
    frame = errors.user_frame()  # the ops bound below take the lines of the ops of `fn`
    for op in fn.ops:
        errors.set_location(op.loc, frame)
        ps = [env[v] for v in op.operands]
        ts = [tenv[v] for v in op.operands]
        live = [t for t in ts if not isinstance(t, Zero)]
        floats = any(is_differentiable_dtype(r.type.dtype) for r in op.results)
        if not live or not floats:
            outs = bind(op.name, *ps, regions=op.regions, **op.attrs)
            touts = [Zero(tangent_aval(_aval(r))) for r in op.results]
        else:
            for t in live:
                if isinstance(t, Unsupported):
                    raise NonDifferentiableError(t.message)
            rule = JVP_RULES.get(op.name)
            if rule is None:
                why = NOT_DIFFERENTIABLE.get(op.name, "it has no differentiation rule")
                raise NonDifferentiableError(
                    f"cannot differentiate through op `{op.name}` (in the program traced from "
                    f"your function{errors.at(op.loc)}): {why}"
                )
            try:
                outs, touts = rule(ctx, ps, ts, op.attrs, op.regions)
            except NonDifferentiableError:
                raise
            except (NotImplementedError, errors.PurejitTypeError) as e:
                if op.loc and op.loc in str(e):
                    raise
                raise type(e)(f"{e} (differentiating `{op.name}`{errors.at(op.loc)})") from None
            touts = [
                t if is_differentiable_dtype(r.type.dtype) else Zero(tangent_aval(_aval(r)))
                for t, r in zip(touts, op.results)
            ]
            touts = [  # the error, if anything reads it, names the user's line of the op
                Unsupported(t.aval, f"{t.message}{errors.at(op.loc)}")
                if isinstance(t, Unsupported) and op.loc and op.loc not in t.message
                else t
                for t in touts
            ]
        env.update(zip(op.results, outs))
        tenv.update(zip(op.results, touts))
    return [env[v] for v in fn.results], [tenv[v] for v in fn.results]


@dataclass
class LinearFunction:
    """A linear map recorded by `linearize_function`.

    `fn` takes the nonzero input tangents, then the residuals, and returns the nonzero
    output tangents.
    """

    fn: Function
    residuals: list
    in_avals: list[ShapedArray]  # tangent avals of every input
    in_nonzero: list[bool]
    out_avals: list[ShapedArray]  # tangent avals of every output
    out_nonzero: list[bool]

    def apply(self, tangents: Sequence) -> list:
        """Push input tangents (values or `Zero`) through the map."""
        from_inputs = [t for t, nz in zip(tangents, self.in_nonzero) if nz]
        avals = [a for a, nz in zip(self.in_avals, self.in_nonzero) if nz]
        from_inputs = [instantiate(t, a) for t, a in zip(from_inputs, avals)]
        outs = iter(evaluate(self.fn, [*from_inputs, *self.residuals]))
        return [next(outs) if nz else Zero(a) for a, nz in zip(self.out_avals, self.out_nonzero)]

    def transpose(self, cts: Sequence) -> list:
        """Pull output cotangents (values or `Zero`) back to the inputs (`Zero` if unused)."""
        n = sum(self.in_nonzero)
        linear = [True] * n + [False] * len(self.residuals)
        outs = [c for c, nz in zip(cts, self.out_nonzero) if nz]
        got = iter(transpose_function(self.fn, linear, [None] * n + list(self.residuals), outs))
        return [next(got) if nz else Zero(a) for a, nz in zip(self.in_avals, self.in_nonzero)]


def evaluate(fn: Function, args: Sequence, overrides: dict | None = None) -> list:
    """Bind `fn`'s ops on `args` into the current trace(s); values in `overrides` (IR value
    -> value) are taken as given, and ops whose results all are given are skipped."""
    env = dict(zip(fn.params, args))
    if overrides:
        env.update(overrides)
    for op in fn.ops:
        if overrides and all(r in env for r in op.results):
            continue
        outs = bind(op.name, *[env[v] for v in op.operands], regions=op.regions, **op.attrs)
        env.update(zip(op.results, outs))
    return [env[v] for v in fn.results]


def linearize_function(fn: Function, primals: Sequence, nonzero: Sequence[bool], name="linear"):
    """Evaluate `fn` on `primals` in the current trace and record its linear map.

    Args:
        fn: the function.
        primals: one value per parameter.
        nonzero: which inputs vary (the others get zero tangents).
    Returns:
        (primal results, `LinearFunction`).
    """
    outer = current_trace()
    in_avals = [tangent_aval(_aval(p)) for p in fn.params]
    lin = JitTrace(name, capture_concrete=True)
    with new_trace(lin), set_current_trace(outer):
        tangents = [
            lin.new_arg(a) if nz and is_differentiable_dtype(a.dtype) else Zero(a)
            for a, nz in zip(in_avals, nonzero)
        ]
        in_nonzero = [not isinstance(t, Zero) for t in tangents]
        outs, touts = jvp_function(fn, primals, tangents, Context(True, lin))
        out_avals = [tangent_aval(_aval(r)) for r in fn.results]
        for t in touts:
            if isinstance(t, Unsupported):
                raise NonDifferentiableError(t.message)
        out_nonzero = [not isinstance(t, Zero) for t in touts]
        results = [lin.lift(t) for t in touts if not isinstance(t, Zero)]
    lfn = lin.builder.finish(results)
    residuals = [x for x, _ in lin.captures]
    return outs, LinearFunction(lfn, residuals, in_avals, in_nonzero, out_avals, out_nonzero)


def transpose_function(
    fn: Function, linear: Sequence[bool], args: Sequence, cts: Sequence, *, lazy=None
):
    """Transpose the linear function `fn` with respect to its `linear` parameters.

    Args:
        fn: a function linear in the parameters marked in `linear`.
        linear: one flag per parameter.
        args: the values of the non-linear parameters (anything at the linear ones).
        cts: a cotangent (value or `Zero`) per result of `fn`.
        lazy: non-linear parameters made only when the backward pass first reads them:
            `{param: make}`, `make(ct) -> (value, ct2)` where `ct` is a cotangent flowing
            into the op that reads it (None when there is none) and `ct2` replaces it, so
            that making the value can be ordered after it (rematerialisation).
    Returns:
        A cotangent (value or `Zero`) per linear parameter, in order.
    """
    lazy = lazy or {}
    env: dict = {}
    lin_vals: set = set()
    for p, is_lin, a in zip(fn.params, linear, args):
        if is_lin:
            lin_vals.add(p)
        elif p not in lazy:
            env[p] = a

    def made(v, cts=None):
        if v not in env:
            k = next((k for k, c in enumerate(cts or ()) if not isinstance(c, Zero)), None)
            env[v], ct = lazy[v](None if k is None else cts[k])
            if k is not None:
                cts[k] = ct
        return env[v]

    linear_ops = []
    for op in fn.ops:
        if any(v in lin_vals for v in op.operands):
            linear_ops.append(op)
            lin_vals.update(op.results)
        else:
            outs = bind(op.name, *[made(v) for v in op.operands], regions=op.regions, **op.attrs)
            env.update(zip(op.results, outs))
    ct_env: dict = {}

    def accumulate(v, ct):
        if v in lin_vals and ct is not None and not isinstance(ct, Zero):
            ct_env[v] = add(ct_env[v], ct) if v in ct_env else ct

    for r, ct in zip(fn.results, cts):
        accumulate(r, ct)
    for op in reversed(linear_ops):
        outs_ct = [ct_env.pop(r, None) for r in op.results]
        if all(c is None for c in outs_ct):
            continue
        outs_ct = [Zero(_aval(r)) if c is None else c for c, r in zip(outs_ct, op.results)]
        operands = [
            UndefinedPrimal(_aval(v)) if v in lin_vals else made(v, outs_ct) for v in op.operands
        ]
        rule = TRANSPOSE_RULES.get(op.name)
        if rule is None:
            raise NotImplementedError(
                f"reverse-mode differentiation: op `{op.name}` reads a tangent but has no "
                f"transpose rule (it is not linear){errors.at(op.loc)}"
            )
        cts_in = rule(outs_ct, operands, op.attrs, op.regions)
        for v, ct in zip(op.operands, cts_in):
            accumulate(v, ct)
    return [ct_env.get(p, Zero(_aval(p))) for p, is_lin in zip(fn.params, linear) if is_lin]
