"""What libraries read from `jax.api_util`: flattening a `WrappedFun` over pytrees
(`flatten_fun`, `flatten_fun_nokwargs`, each with a thunk giving the output tree once the
function has run), `debug_info` and `fun_signature`."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from purejit.tree_util import tree_flatten, tree_unflatten

from purejit.extend.linear_util import Store, WrappedFun


def flatten_fun_nokwargs(fun: WrappedFun, in_tree):
    """`fun` taking the flat leaves of `in_tree` (a tuple of the positional arguments) and
    returning flat leaves, and a thunk that gives the output tree after a call."""
    store = Store()

    def flat(call, *leaves):
        out, out_tree = tree_flatten(call(*tree_unflatten(in_tree, list(leaves))))
        store.store(out_tree)
        return out

    return fun.wrap(flat), store


def flatten_fun(fun: WrappedFun, in_tree):
    """As `flatten_fun_nokwargs`, with `in_tree` the tree of `(args, kwargs)`."""
    store = Store()

    def flat(call, *leaves):
        args, kwargs = tree_unflatten(in_tree, list(leaves))
        out, out_tree = tree_flatten(call(*args, **kwargs))
        store.store(out_tree)
        return out

    return fun.wrap(flat), store


@dataclass(frozen=True)
class DebugInfo:
    """What a traced function is, for error messages: what traced it and its name."""

    traced_for: str
    func_src_info: str | None
    arg_names: tuple | None = None
    result_paths: tuple | None = None

    @property
    def func_name(self) -> str:
        return (self.func_src_info or "<unknown>").split(" ")[0]


def fun_signature(fun):
    """`inspect.signature(fun)`, or None where it has none."""
    try:
        return inspect.signature(fun)
    except (ValueError, TypeError):
        return None


def debug_info(traced_for: str, fun, args=(), kwargs=None, **_) -> DebugInfo:
    """The `DebugInfo` of `fun` traced for `traced_for`."""
    name = getattr(fun, "__name__", None) or getattr(getattr(fun, "func", None), "__name__", None)
    code = getattr(fun, "__code__", None) or getattr(getattr(fun, "func", None), "__code__", None)
    where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    return DebugInfo(traced_for, f"{name or type(fun).__name__}{where}")


__all__ = ["DebugInfo", "debug_info", "flatten_fun", "flatten_fun_nokwargs", "fun_signature"]
