"""Lowerings of user-defined primitives, under the names of `jax.interpreters.mlir`.

purejit runs lowerings written as Python functions of purejit ops: `register_lowering(prim,
lower_fun(fn, multiple_results=...))`; each use traces `fn(*operands, **params)` into the
op's region, which the emitter inlines. A rule that builds MLIR with JAX's lowering context
is recorded but cannot run: a program using the primitive then fails to emit, naming it.
"""

from __future__ import annotations

from typing import Callable

from purejit.extend._tables import LoweredFun, lowerings


def lower_fun(fun: Callable, multiple_results: bool = True) -> LoweredFun:
    """A lowering that is `fun` (a function of purejit ops) traced at the operand types."""
    return LoweredFun(fun, multiple_results)


def register_lowering(prim, rule, platform: str | None = None, **_) -> None:
    """Make `rule` the lowering of `prim` (on `platform`, or on every platform)."""
    lowerings.setdefault(prim, {})[platform] = rule


__all__ = ["lower_fun", "register_lowering"]
