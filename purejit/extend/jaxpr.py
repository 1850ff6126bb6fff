"""purejit's IR seen through JAX's jaxpr API: what libraries read when they walk a program
(`ClosedJaxpr.jaxpr`, `.consts`, `.in_avals`, `.out_avals`; `Jaxpr.invars`, `.outvars`,
`.constvars`, `.eqns`; `JaxprEqn.primitive`, `.invars`, `.outvars`, `.params`; `Var.aval`;
`Literal.val`), and `eval_jaxpr` / `jaxpr_as_fun` to run one.

The views are built from an IR `Function` (what `make_jaxpr` traces), not a second program
representation, and map it as follows:

- every op but `constant` is one equation; its primitive is a `user_primitive` op's own
  `Primitive` (so a library finds the objects it defined), else an `IRPrimitive` named as the
  IR op (StableHLO's names: `multiply`, `sine`, `while`, not JAX's `mul`, `sin`, `while`);
- a scalar `constant` becomes a `Literal` wherever it is read; any other `constant` becomes a
  constant variable (`constvars`) whose value is in `ClosedJaxpr.consts`;
- an op's static attributes are its `params`; its regions are `ClosedJaxpr`s under `jaxpr`
  (one region), `cond_jaxpr` and `body_jaxpr` (`while`), or `branches` (more regions).

A view is read-only: equations are not rebuilt from edited views (`eval_jaxpr` binds the
IR ops they stand for).
"""

from __future__ import annotations

import numpy as np

from purejit.ir import Function, Value
from purejit.ir.ops.user_primitive import lookup_use
from purejit.tracing import ShapedArray, bind
from purejit.tracing.primitive import IRPrimitive, get_primitive

_USER_OPS = ("user_primitive", "user_primitive_effect")


class Var:
    """A variable of a jaxpr: one IR value. `aval` is its abstract value; variables compare
    by identity (use them as dict keys, as with JAX's)."""

    __slots__ = ("value", "aval")

    def __init__(self, value: Value, aval: ShapedArray):
        self.value, self.aval = value, aval

    @property
    def count(self) -> int:
        return self.value.id

    suffix = ""

    def __repr__(self):
        return f"%{self.value.id}:{self.aval.str_short()}"


class Literal:
    """A scalar constant read in place by an equation: `val` (a NumPy scalar) and `aval`."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val, self.aval = val, aval

    def __repr__(self):
        return f"Literal({self.val!r})"


class SourceInfo:
    """Where an equation was traced from (`loc`: the user's file and line, or None)."""

    __slots__ = ("loc",)

    def __init__(self, loc):
        self.loc = loc

    def __repr__(self):
        return f"SourceInfo({self.loc!r})"


class JaxprEqn:
    """One equation: `outvars = primitive(*invars, **params)` (one IR op)."""

    __slots__ = ("invars", "outvars", "primitive", "params", "effects", "source_info", "op")

    def __init__(self, invars, outvars, primitive, params, effects, source_info, op):
        self.invars, self.outvars = list(invars), list(outvars)
        self.primitive, self.params, self.effects = primitive, params, effects
        self.source_info, self.op = source_info, op

    def __repr__(self):
        outs = " ".join(map(repr, self.outvars))
        return f"{outs} = {self.primitive.name} {' '.join(map(repr, self.invars))}"


class Jaxpr:
    """An open jaxpr: `constvars`, `invars`, `eqns`, `outvars` over one IR function `fn`
    (whose `str()` is the program's IR text)."""

    __slots__ = ("constvars", "invars", "outvars", "eqns", "effects", "fn", "debug_info")

    def __init__(self, constvars, invars, outvars, eqns, effects, fn):
        self.constvars, self.invars, self.outvars = list(constvars), list(invars), list(outvars)
        self.eqns, self.effects, self.fn = list(eqns), effects, fn
        self.debug_info = None

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    def __str__(self) -> str:
        return str(self.fn)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


class ClosedJaxpr:
    """A jaxpr with the values of its constant variables (`consts`), as JAX's. `str()` is
    the IR text; `fn` the IR function; `out_tree` the structure of the outputs when it came
    from `make_jaxpr`."""

    def __init__(self, jaxpr: Jaxpr, consts, out_tree=None):
        self.jaxpr, self.consts, self.out_tree = jaxpr, list(consts), out_tree

    @property
    def fn(self) -> Function:
        return self.jaxpr.fn

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    effects = property(lambda self: self.jaxpr.effects)

    @property
    def literals(self):
        return self.consts

    def __str__(self) -> str:
        return str(self.fn)

    __repr__ = __str__

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def _aval(value: Value) -> ShapedArray:
    return ShapedArray(tuple(value.type.shape), value.type.dtype)


def closed_jaxpr(
    fn: Function, in_avals=None, out_avals=None, out_tree=None, captures=()
) -> ClosedJaxpr:
    """The jaxpr view of the IR function `fn` (`in_avals`/`out_avals`: its parameters' and
    results' abstract values when known with weak types, as a trace records them).

    `captures`: the values of `fn`'s trailing parameters that a trace added for what the
    function closes over (tracers of an outer trace); as in JAX they are constant variables
    whose `consts` are those values (Equinox's `filter_closure_convert` passes them in)."""
    n_in = len(fn.params) - len(captures)
    params = fn.params[:n_in]
    params_avals = list(in_avals) if in_avals is not None else [_aval(p) for p in params]
    if len(params_avals) != len(params):
        raise ValueError(f"{fn.name} has {len(params)} parameters, got {len(params_avals)}")
    env: dict[Value, object] = {p: Var(p, a) for p, a in zip(params, params_avals)}
    invars = [env[p] for p in params]
    constvars, consts, eqns = [], [], []
    for p, value in zip(fn.params[n_in:], captures):
        env[p] = var = Var(p, _aval(p))
        constvars.append(var)
        consts.append(value)

    def read(v: Value):
        got = env.get(v)
        if got is None:  # a value from outside this function: the IR's regions are closed
            raise ValueError(f"{fn.name} reads {v!r}, which it does not define")
        return got

    for op in fn.ops:
        if op.name == "constant" and not op.regions:
            (res,) = op.results
            value = np.asarray(op.attrs["value"])
            if value.ndim == 0:
                env[res] = Literal(value[()], _aval(res))
            else:
                env[res] = var = Var(res, _aval(res))
                constvars.append(var)
                consts.append(value)
            continue
        eqns.append(_eqn(op, [read(v) for v in op.operands], env))
    results = [read(v) for v in fn.results]
    for r, a in zip(results, out_avals or ()):
        if isinstance(r, Var) and r.value not in fn.params:
            r.aval = a  # the trace's abstract value, with its weak type
    effects = {e for eqn in eqns for e in eqn.effects}
    return ClosedJaxpr(Jaxpr(constvars, invars, results, eqns, effects, fn), consts, out_tree)


def _eqn(op, invars, env) -> JaxprEqn:
    outvars = []
    for r in op.results:
        env[r] = var = Var(r, _aval(r))
        outvars.append(var)
    effects = set()
    if op.name in _USER_OPS:
        use = lookup_use(op.attrs["primitive"])
        prim, params = use.prim, dict(use.params)
        if op.name == "user_primitive_effect":
            effects = set(use.prim.abstract_eval(*[v.aval for v in invars], **params)[1])
    else:
        prim, params = get_primitive(op.name), dict(op.attrs)
        regions = [closed_jaxpr(r) for r in op.regions]
        if op.name == "while" and len(regions) == 2:
            params["cond_jaxpr"], params["body_jaxpr"] = regions
        elif len(regions) == 1:
            params["jaxpr"] = regions[0]
        elif regions:
            params["branches"] = tuple(regions)
    return JaxprEqn(invars, outvars, prim, params, effects, SourceInfo(op.loc), op)


def eval_jaxpr(jaxpr: Jaxpr, consts, *args, propagate_source_info=True):
    """Run `jaxpr` on `consts` (one per constant variable) and `args` (one per input) by
    binding each equation's primitive in the current trace; returns the list of outputs."""
    del propagate_source_info
    if len(consts) != len(jaxpr.constvars) or len(args) != len(jaxpr.invars):
        raise TypeError(
            f"eval_jaxpr: the jaxpr takes {len(jaxpr.constvars)} constants and "
            f"{len(jaxpr.invars)} inputs, got {len(consts)} and {len(args)}"
        )
    env = {}
    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return v.val if isinstance(v, Literal) else env[v]

    for eqn in jaxpr.eqns:
        if isinstance(eqn.primitive, IRPrimitive) and eqn.op is not None:
            # the op itself, regions and all: a view's params are not an op's attributes
            op = eqn.op
            outs = bind(op.name, *map(read, eqn.invars), regions=op.regions, **op.attrs)
        else:
            outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
            if not eqn.primitive.multiple_results:
                outs = [outs]
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def jaxprs_in_params(params: dict):
    """The open jaxprs among an equation's parameters (its regions)."""
    for p in params.values():
        for sub in p if isinstance(p, (tuple, list)) else (p,):
            if isinstance(sub, ClosedJaxpr):
                yield sub.jaxpr
            elif isinstance(sub, Jaxpr):
                yield sub


def subjaxprs(jaxpr: Jaxpr):
    """The open jaxprs of `jaxpr`'s equations' regions (one level down)."""
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)


def jaxpr_as_fun(closed: ClosedJaxpr):
    """`closed` as a function of its inputs returning the list of its outputs."""

    def fun(*args):
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)

    return fun


__all__ = [
    "ClosedJaxpr",
    "IRPrimitive",
    "Jaxpr",
    "JaxprEqn",
    "Literal",
    "SourceInfo",
    "Var",
    "closed_jaxpr",
    "eval_jaxpr",
    "get_primitive",
    "jaxpr_as_fun",
    "jaxprs_in_params",
    "subjaxprs",
]
