"""Structured control flow: cond, switch and while_loop (as in jax.lax), and the helpers
the loops in `scan.py` share.

Each branch or loop body is traced once into a closed IR function (`trace_to_function`);
values it reads from the enclosing trace become extra parameters, which are passed as
explicit operands of the `case` / `while` op. Outside jit the ops run eagerly (the eager
trace compiles one `case` or `while` op); under `purejit.disable_jit()` they run as Python
control flow, as JAX does.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence

import numpy as np

from purejit import dtypes as pdt
from purejit import errors
from purejit.runtime.array import Array
from purejit.config import config
from purejit.tracing import ConcreteArray, JitTrace, ShapedArray, Tracer, bind, bind1, current_trace
from purejit.ir import Builder, Function, Op, TensorType, Value
from purejit.lax import _effects
from purejit.lax._lift import convert
from purejit.lax._lift import lift as _lift
from purejit.tracing import trace_to_function
from purejit.tree_util import PyTreeDef, tree_difference, tree_flatten, tree_paths, tree_unflatten

_NO_OPERAND = object()
_PRED = TensorType((), np.bool_)


# ---- tracing bodies into closed regions --------------------------------------------------


class _Body:
    """A traced branch or loop body: its IR function, output avals and tree, captures, and
    whether it makes ordered callbacks (`ordered`: traced without a token, it asked for
    one; see `_effects`)."""

    def __init__(self, fn: Function, out_avals, out_tree: PyTreeDef, captures: list, ordered):
        self.fn = fn
        self.out_avals = out_avals
        self.out_tree = out_tree
        self.captures = captures
        self.ordered = ordered


def _leaves(tree_obj, api: str, prefix: str) -> tuple[list, PyTreeDef]:
    """Flatten a pytree of array-likes into Tracers / Arrays."""
    leaves, tree = tree_flatten(tree_obj)
    out = []
    for x, path in zip(leaves, tree_paths(tree, prefix)):
        if isinstance(x, (Tracer, ConcreteArray)):
            out.append(x)
            continue
        try:
            out.append(_lift(x))
        except (TypeError, OverflowError) as e:
            raise TypeError(
                f"{api}: {path} of type {type(x).__name__} is not an array ({e})"
                f"{errors.at(errors.user_location())}"
            ) from None
    return out, tree


def _trace(fun: Callable, rebuild: Callable, avals, api: str, what: str, token=None) -> _Body:
    """Trace `fun(*rebuild(flat_tracers))` into a closed IR function.

    With `token=(i, j)` the function also takes an order token as flat parameter `i` and
    returns its last order token as result `j` (`j` None: not returned); `out_avals` and
    `out_tree` describe the user's outputs only."""
    box = []
    if token is not None:
        avals = [*avals[: token[0]], _effects.TOKEN_AVAL, *avals[token[0] :]]

    def flat(*tracers):
        tracers = list(tracers)
        if token is not None:
            _effects.set_token(tracers.pop(token[0]))
        with _effects.body_frame() as frame:
            out = fun(*rebuild(tracers))
        leaves, tree = tree_flatten(out)
        for path, x in zip(tree_paths(tree, "output"), leaves):
            if not isinstance(
                x, (Tracer, ConcreteArray, np.ndarray, np.generic, bool, int, float, complex)
            ):
                raise TypeError(
                    f"{api}: {_describe(fun, what)} returned a {type(x).__name__} at {path}, "
                    f"not an array{errors.at(errors.user_location())}"
                )
        box.append((tree, frame.used))
        if token is not None and token[1] is not None:
            leaves.insert(token[1], _effects.current_token())
        return leaves

    # errors name lax.cond (say) when no jit or vmap is tracing around it
    staged = isinstance(current_trace(), JitTrace)
    traced = trace_to_function(
        flat, avals, name=what, transform=None if staged else f"purejit.lax.{api}"
    )
    out_avals = list(traced.out_avals)
    if token is not None and token[1] is not None:
        del out_avals[token[1]]
    tree, used = box[0]
    return _Body(traced.fn, out_avals, tree, traced.captures, used)


def _close(bodies: Sequence[_Body], num_in: int) -> tuple[list[Function], list]:
    """Give every body the same trailing parameters: the union of all their captures."""
    captures, seen = [], set()
    for b in bodies:
        for t in b.captures:
            if id(t) not in seen:
                seen.add(id(t))
                captures.append(t)
    regions = []
    for b in bodies:
        own = dict(zip((id(t) for t in b.captures), b.fn.params[num_in:]))
        extra = [own[id(t)] if id(t) in own else Value(t.aval.type) for t in captures]
        regions.append(Function(b.fn.name, b.fn.params[:num_in] + extra, b.fn.ops, b.fn.results))
    return regions, captures


def _inline(b: Builder, fn: Function, args: Sequence[Value]) -> list[Value]:
    """Append a copy of `fn`'s ops to `b`, with its parameters replaced by `args`."""
    env = dict(zip(fn.params, args))
    for op in fn.ops:
        results = [Value(r.type) for r in op.results]
        b.ops.append(
            Op(op.name, [env[v] for v in op.operands], op.attrs, results, op.regions, op.loc)
        )
        env.update(zip(op.results, results))
    return [env[v] for v in fn.results]


def _concrete(*xs) -> bool:
    return not any(isinstance(x, Tracer) for x in xs)


# ---- error messages: the two sides next to each other ------------------------------------


def _describe(fun, what: str) -> str:
    code = getattr(fun, "__code__", None)
    name = getattr(fun, "__name__", type(fun).__name__)
    where = f" ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})" if code else ""
    return f"{what} `{name}`{where}" if name != what else f"{what}{where}"


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


def _table(head: tuple[str, str, str], rows: list[tuple[str, str, str, bool]]) -> str:
    """Two columns side by side; rows whose flag is set are marked as differing."""
    width = [builtins.max(len(r[k]) for r in [head, *rows]) for k in range(3)]
    lines = []
    for *cells, differs in [(*head, False), *rows]:
        line = "   ".join(c.ljust(w) for c, w in zip(cells, width))
        lines.append("  " + (line + "   <-- differs" if differs else line.rstrip()))
    return "\n".join(lines)


def _tree_error(api, what, name_a, tree_a, name_b, tree_b, hint) -> TypeError:
    w = builtins.max(len(name_a), len(name_b))
    return errors.PurejitTypeError(
        f"{api}: {what} must have the same tree structure, but they differ"
        f"{errors.at(errors.user_location())}:\n"
        f"  {name_a.ljust(w)} : {tree_a}\n  {name_b.ljust(w)} : {tree_b}\n"
        f"  first difference {tree_difference(tree_a, tree_b, name_a, name_b)}\n{hint}"
    )


def _type_error(api, what, tree, name_a, avals_a, name_b, avals_b, hint) -> TypeError:
    rows = [
        (path or "(value)", a.str_short(), b.str_short(), not _typematch(a, b))
        for path, a, b in zip(tree_paths(tree, ""), avals_a, avals_b)
    ]
    return errors.PurejitTypeError(
        f"{api}: {what} must have the same shapes and dtypes, but they differ"
        f"{errors.at(errors.user_location())}:\n{_table(('path', name_a, name_b), rows)}\n{hint}"
    )


# ---- cond and switch ---------------------------------------------------------------------


def _operands(api, operands, operand):
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(
            f"{api}: if 'operand' is passed as a keyword, no positional operands can be passed"
        )
    return (operand,)


def _case(api, index, branches, names, ref: int, operands):
    """Bind `case(index, operands...)` with one region per branch; returns the output tree."""
    leaves, tree = _leaves(operands, api, "operands")
    avals = [x.aval for x in leaves]

    def rebuild(flat):
        return tree_unflatten(tree, flat)

    # traced as JAX traces them, the reference branch (cond's true_fun) first: a branch's
    # Python side effects (Flax's rng counters during init) happen in JAX's order
    order = [ref] + [k for k in range(len(branches)) if k != ref]

    def trace_all(tok=None):
        traced = {k: _trace(branches[k], rebuild, avals, api, names[k], tok) for k in order}
        return [traced[k] for k in range(len(branches))]

    bodies = trace_all()
    ordered = builtins.any(b.ordered for b in bodies)
    if ordered:  # thread the order token through every branch: operand and result last
        bodies = trace_all((len(leaves), len(bodies[0].out_avals)))
    r = bodies[ref]
    hint = f"Make every branch of {api} return the same structure, shapes and dtypes."
    for k, b in enumerate(bodies):
        if k == ref:
            continue
        na, nb = _describe(branches[ref], names[ref]), _describe(branches[k], names[k])
        if b.out_tree != r.out_tree:
            raise _tree_error(api, "the branch outputs", na, r.out_tree, nb, b.out_tree, hint)
        if not all(builtins.map(_typematch, r.out_avals, b.out_avals)):
            raise _type_error(
                api, "the branch outputs", r.out_tree, na, r.out_avals, nb, b.out_avals, hint
            )
    weak = tuple(a.weak_type for a in bodies[0].out_avals)  # as JAX: the first branch's flags
    if ordered:
        leaves, weak = [*leaves, _effects.current_token()], (*weak, False)
    regions, captures = _close(bodies, len(leaves))
    outs = bind("case", index, *leaves, *captures, regions=regions, weak=weak)
    if ordered:
        _effects.set_token(outs.pop())
    return tree_unflatten(r.out_tree, outs)


def _scalar(api: str, x, what: str):
    try:
        x = _lift(x)
    except (TypeError, OverflowError) as e:
        raise TypeError(f"{api}: {what} must be a scalar array, got {x!r} ({e})") from None
    if x.shape != ():
        raise errors.PurejitTypeError(
            f"{api}: {what} must be a scalar, got {x.aval.str_short()}"
            f"{errors.at(errors.user_location())}. For an elementwise choice use "
            "purejit.numpy.where or purejit.lax.select."
        )
    return x


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
    """Run `true_fun(*operands)` if `pred` else `false_fun(*operands)`, as jax.lax.cond.

    Args:
        pred: a boolean scalar (an integer is compared with 0, as in JAX; floats error).
        true_fun, false_fun: functions of the operands returning pytrees with the same
            structure, shapes and dtypes.
        *operands: pytrees of arrays passed to the branch.
    Returns:
        The chosen branch's output. Both branches are traced; only one runs.
    """
    if not (callable(true_fun) and callable(false_fun)):
        if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
            # JAX's older form, still accepted: cond(pred, x_true, f_true, x_false, f_false)
            x_true, f_true, (x_false, f_false) = true_fun, false_fun, operands
            return cond(pred, lambda xs: f_true(xs[0]), lambda xs: f_false(xs[1]),
                        (x_true, x_false))  # fmt: skip
        raise TypeError("cond: true_fun and false_fun arguments should be callable.")
    operands = _operands("cond", operands, operand)
    p = _scalar("cond", pred, "pred")
    if p.dtype != np.bool_:
        if p.dtype.kind not in "iu":
            # as in JAX: integers are compared with 0; floats are an error
            raise errors.PurejitTypeError(
                f"cond: pred must be a boolean (or integer) scalar, got "
                f"{p.aval.str_short()}{errors.at(errors.user_location())}; compare it "
                "explicitly, e.g. `x > 0`"
            )
        p = bind1("compare", p, convert(0, p.dtype), comparison_direction="NE")
    if config.jit_disabled and _concrete(p):
        return true_fun(*operands) if bool(p) else false_fun(*operands)
    index = convert(p, np.int32)
    return _case("cond", index, [false_fun, true_fun], ["false_fun", "true_fun"], 1, operands)


def switch(index, branches: Sequence[Callable], *operands, operand=_NO_OPERAND):
    """Run `branches[clamp(index, 0, len(branches) - 1)](*operands)`, as jax.lax.switch.

    Args:
        index: an integer scalar; out-of-range values are clamped.
        branches: functions of the operands with identical output types.
        *operands: pytrees of arrays passed to the branch.
    Returns:
        The chosen branch's output.
    """
    branches = tuple(branches)
    if not all(callable(b) for b in branches):
        raise TypeError("switch: branches argument should be a sequence of callables.")
    operands = _operands("switch", operands, operand)
    i = _scalar("switch", index, "index")
    if i.dtype.kind not in "iu":
        raise errors.PurejitTypeError(
            f"switch: index must be an integer scalar, got {i.aval.str_short()}"
            f"{errors.at(errors.user_location())}"
        )
    if not branches:
        raise ValueError("switch: empty branch sequence")
    if len(branches) == 1:
        return branches[0](*operands)
    lo, hi = Array(host=np.array(0, np.int32)), Array(host=np.array(len(branches) - 1, np.int32))
    i = bind1("clamp", lo, convert(i, np.int32), hi)
    if config.jit_disabled and _concrete(i):
        return branches[int(i)](*operands)
    names = [f"branch {k}" for k in range(len(branches))]
    return _case("switch", i, branches, names, 0, operands)


# ---- while_loop ---------------------------------------------------------------------------


def _promote_weak(leaves, in_avals, out_avals) -> tuple[list, bool]:
    """As JAX: a weakly typed initial carry takes the type the body gives it."""
    changed = False
    leaves = list(leaves)
    for k, (x, a, b) in enumerate(zip(leaves, in_avals, out_avals)):
        if a.weak_type and not _typematch(a, b):
            dt, _ = pdt.result_type_weak((a.dtype, True), (b.dtype, b.weak_type))
            leaves[k] = convert(x, dt)
            changed = True
    return leaves, changed


def _check_carry(api, fun, what, tree, in_avals, out_tree, out_avals):
    hint = f"Make {what} return a carry with the same structure, shapes and dtypes as its input."
    name = _describe(fun, what)
    if out_tree != tree:
        raise _tree_error(
            api,
            f"the carry input and output of {name}",
            "carry input",
            tree,
            "carry output",
            out_tree,
            hint,
        )
    if not all(builtins.map(_typematch, in_avals, out_avals)):
        raise _type_error(
            api,
            f"the carry input and output of {name}",
            tree,
            "carry input",
            in_avals,
            "carry output",
            out_avals,
            hint,
        )


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """Repeat `val = body_fun(val)` while `cond_fun(val)`, as jax.lax.while_loop.

    Args:
        cond_fun: carry -> boolean scalar.
        body_fun: carry -> carry of the same structure, shapes and dtypes.
        init_val: the initial carry, a pytree of arrays.
    Returns:
        The final carry.
    """
    leaves, tree = _leaves(init_val, "while_loop", "init_val")
    if config.jit_disabled and _concrete(*leaves):
        val = tree_unflatten(tree, leaves)
        while bool(cond_fun(val)):
            val = body_fun(val)
        return val

    def rebuild(flat):
        return (tree_unflatten(tree, flat),)

    def make(leaves, token=None):
        avals = [x.aval for x in leaves]
        c = _trace(cond_fun, rebuild, avals, "while_loop", "cond_fun", token and (token[0], None))
        got = c.out_avals
        if c.out_tree.num_leaves != 1 or c.out_tree.kind is not None or got[0].type != _PRED:
            shown = ", ".join(a.str_short() for a in got)
            shown = shown if c.out_tree.kind is None else f"{c.out_tree} of [{shown}]"
            raise errors.PurejitTypeError(
                f"while_loop: cond_fun must return a boolean scalar, but got {shown}"
                f"{errors.at(errors.user_location())}"
            )
        b = _trace(body_fun, rebuild, avals, "while_loop", "body_fun", token)
        if b.out_tree != tree:
            _check_carry("while_loop", body_fun, "body_fun", tree, avals, b.out_tree, [])
        return avals, c, b

    avals, c, b = make(leaves)
    if c.ordered:
        # ordered callbacks in cond_fun (as JAX lowers them): the predicate becomes a carry
        # computed after each body_fun, so cond_fun's calls are in the token chain too
        # (XLA may evaluate a plain cond region at compile time and drop its calls)
        def step(state):
            val = body_fun(state[1])
            return cond_fun(val), val

        init = tree_unflatten(tree, leaves)
        return while_loop(lambda state: state[0], step, (cond_fun(init), init))[1]
    leaves, changed = _promote_weak(leaves, avals, b.out_avals)
    # ordered callbacks in body_fun: the order token is the last carry
    token = (len(leaves), len(leaves)) if b.ordered else None
    if changed or token:
        avals, c, b = make(leaves, token)
    _check_carry("while_loop", body_fun, "body_fun", tree, avals, b.out_tree, b.out_avals)
    weak = tuple(a.weak_type for a in b.out_avals)
    if token:
        leaves, weak = [*leaves, _effects.current_token()], (*weak, False)
    regions, captures = _close([c, b], len(leaves))
    outs = bind("while", *leaves, *captures, regions=regions, weak=weak)
    if token:
        _effects.set_token(outs.pop())
    return tree_unflatten(tree, outs)
