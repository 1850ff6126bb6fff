"""`purejit.debug`: see values inside jitted code (`print`, `callback`), `pure_callback` and
`io_callback`.

Under `jit` (and inside `cond`, `scan`, `while_loop` bodies) each call becomes a callback op
(`ir/ops/callback.py`) that XLA runs through jaxlib's Python-callback custom call, on CPU
and GPU: the values are copied to the host and the function runs there, every time the
program runs. Outside jit the function runs at once.

`debug.print` and `debug.callback` have effects: purejit's passes never drop, merge or
fold them, even when nothing uses their result. With `ordered=True` the calls run in
program order, as JAX's: each reads an order token the previous one wrote, and a `cond`,
`switch`, `scan`, `while_loop`, `fori_loop` or `map` whose body makes ordered calls takes
the token in and gives the body's last token back (a loop carry), so a call before the op
runs before the body's and one after it runs after (`purejit/lax/_effects.py`).
`pure_callback` is pure: unused, it may be removed; twice on the same values, run
once; on constants, run at compile time.

Exceptions raised by the callback reach the caller as themselves (`KeyboardInterrupt`, the
user's `ValueError`, purejit's message for a result of the wrong shape), with the callback's
traceback and jaxlib's runtime error chained as the cause (`backend/callback_errors.py`;
JAX raises `JaxRuntimeError: INTERNAL: CpuCallback error` instead). Where each surfaces:
outside jit, at the `debug.callback` / `pure_callback` / `io_callback` call itself. Under jit
on CPU, at the call of the program. Under jit on a GPU the program runs asynchronously, so
the failure of any of them is reported at the next synchronisation of that program's
results: `block_until_ready()`, or reading a result on the host (`np.asarray`, `float`,
printing it).

`debug.breakpoint` is not provided: it needs an interactive debugger on the host fed with
every traced value of the frame, which the callback op could carry but which no test here
can drive; use `purejit.disable_jit()` and `pdb` instead.
"""

from __future__ import annotations

import builtins
from typing import Callable

import numpy as np

from purejit import dtypes as pdt
from purejit.ir.ops.callback import register_callback
from purejit.lax import _effects
from purejit.runtime import Array, eval_trace
from purejit.tracing import Tracer, bind, current_trace
from purejit.tree_util import tree_flatten, tree_unflatten


def _is_array(x) -> bool:
    return isinstance(x, (Tracer, Array, np.ndarray, np.generic, int, float, complex, bool)) or (
        hasattr(x, "__array__") and hasattr(x, "shape") and hasattr(x, "dtype")
    )


def _split(args, kwargs):
    """Array leaves (operands) and a function rebuilding (args, kwargs) from host arrays."""
    leaves, tree = tree_flatten((args, kwargs))
    is_arr = [_is_array(x) for x in leaves]
    arrays = [x for x, a in zip(leaves, is_arr) if a]

    def rebuild(host):
        it = iter(host)
        return tree_unflatten(tree, [next(it) if a else x for x, a in zip(leaves, is_arr)])

    return arrays, rebuild


def _traced() -> bool:
    return current_trace() is not eval_trace


def _host(x) -> np.ndarray:
    return np.asarray(x)


def _bind_effect(fn: Callable, name: str, arrays: list, ordered: bool) -> None:
    """Record a `host_callback` op calling `fn(*host arrays)` in the current trace."""
    key = register_callback(fn, name)
    attrs = dict(callback=key, result_shapes=(), result_dtypes=(), ordered=bool(ordered))
    if not ordered:
        bind("host_callback", *arrays, **attrs)
        return
    (token,) = bind("host_callback", _effects.current_token(), *arrays, **attrs)
    _effects.set_token(token)


def callback(callback: Callable, *args, ordered: bool = False, partitioned: bool = False, **kwargs):
    """Call `callback(*args, **kwargs)` on the host, with the values as NumPy arrays, each
    time the program runs (as `jax.debug.callback`); its result is ignored.

    Args:
        callback: a Python function.
        *args, **kwargs: pytrees; array leaves arrive as NumPy arrays, other leaves as given.
        ordered: run in program order relative to the other ordered callbacks.
        partitioned: accepted for JAX compatibility (one device: no effect).
    Raises:
        Whatever `callback` raises, as itself: outside jit at once; under jit at the call of
        the program on CPU, at the next synchronisation of its results on a GPU (module
        docstring).
    """
    del partitioned
    arrays, rebuild = _split(args, kwargs)
    if not _traced():
        if ordered:
            _effects.wait_eager()
        a, kw = rebuild([_host(x) for x in arrays])
        callback(*a, **kw)
        return None

    def run(*host):
        a, kw = rebuild(host)
        callback(*a, **kw)
        return ()

    _bind_effect(run, getattr(callback, "__name__", "callback"), arrays, ordered)
    return None


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:  # noqa: A001
    """Print `fmt.format(*args, **kwargs)` with the values of traced arrays, each time the
    program runs (as `jax.debug.print`)."""
    if not isinstance(fmt, str):
        raise TypeError(f"debug.print: fmt must be a format string, got {type(fmt).__name__}")
    arrays, rebuild = _split(args, kwargs)

    def show(*host):
        a, kw = rebuild(host)
        builtins.print(fmt.format(*a, **kw), flush=True)
        return ()

    if not _traced():
        if ordered:
            _effects.wait_eager()
        show(*[_host(x) for x in arrays])
        return None
    _bind_effect(show, "print", arrays, ordered)
    return None


def _result_types(result_shape_dtypes):
    specs, tree = tree_flatten(result_shape_dtypes)
    out = []
    for s in specs:
        if not (hasattr(s, "shape") and hasattr(s, "dtype")):
            raise TypeError(
                "pure_callback: result_shape_dtypes must be a pytree of objects with .shape "
                f"and .dtype (purejit.ShapeDtypeStruct, arrays), got {type(s).__name__}"
            )
        out.append((tuple(int(d) for d in s.shape), pdt.canonicalize(np.dtype(s.dtype))))
    return out, tree


def _returning(callback: Callable, api: str, tree, rebuild) -> Callable:
    """The host function of a callback returning arrays in the structure `tree`."""

    def run(*host):
        a, kw = rebuild(host)
        outs, out_tree = tree_flatten(callback(*a, **kw))
        if out_tree != tree:
            raise RuntimeError(
                f"{api}: {getattr(callback, '__name__', 'callback')} returned "
                f"{out_tree}, declared {tree}"
            )
        host_outs = [np.asarray(o) for o in outs]
        # as JAX: 64-bit NumPy results count as their canonical (32-bit without x64) type
        return [o.astype(pdt.canonicalize(o.dtype), copy=False) for o in host_outs]

    return run


def _run_now(run: Callable, api: str, types, tree, arrays):
    """Outside jit: run the callback at once and check its results' types."""
    outs = run(*[_host(x) for x in arrays])
    for o, (shape, dt) in zip(outs, types):
        if o.shape != shape or o.dtype != dt:
            raise RuntimeError(
                f"{api}: a result is {o.dtype}{list(o.shape)}, declared {dt}{list(shape)}"
            )
    return tree_unflatten(tree, [Array(host=o) for o in outs])


def pure_callback(
    callback: Callable, result_shape_dtypes, *args, sharding=None, vmap_method=None, **kwargs
):
    """Call a side-effect-free host function from traced code (as `jax.pure_callback`).

    Args:
        callback: takes NumPy arrays (in the structure of args/kwargs) and returns arrays
            in the structure of `result_shape_dtypes`.
        result_shape_dtypes: a pytree of `ShapeDtypeStruct`s (or arrays) declaring the
            results.
        *args, **kwargs: the inputs (pytrees).
        sharding: only None (one device) is supported.
        vmap_method: accepted for JAX compatibility; purejit has no `vmap` rule for it yet.
    Returns:
        The results as purejit arrays, in the structure of `result_shape_dtypes`.
    Raises:
        Whatever `callback` raises, as itself (under jit on a GPU, at the next
        synchronisation of the program's results); a RuntimeError naming the declared and
        returned types for a result that does not fit.
    """
    del vmap_method
    if sharding is not None:
        raise NotImplementedError("pure_callback: sharding= is not supported (one device only)")
    types, tree = _result_types(result_shape_dtypes)
    arrays, rebuild = _split(args, kwargs)
    run = _returning(callback, "pure_callback", tree, rebuild)
    if not _traced():
        return _run_now(run, "pure_callback", types, tree, arrays)
    key = register_callback(run, getattr(callback, "__name__", "pure_callback"))
    outs = bind(
        "pure_callback",
        *arrays,
        callback=key,
        result_shapes=tuple(s for s, _ in types),
        result_dtypes=tuple(d for _, d in types),
        weak=False,
    )
    return tree_unflatten(tree, outs)


def io_callback(
    callback: Callable, result_shape_dtypes, *args, sharding=None, ordered: bool = False, **kwargs
):
    """Call a host function with side effects that returns arrays (as
    `jax.experimental.io_callback`): never removed, merged or folded by purejit's passes,
    run each time the program runs; with `ordered=True`, in program order relative to the
    other ordered callbacks.

    Args:
        callback: takes NumPy arrays (in the structure of args/kwargs) and returns arrays
            in the structure of `result_shape_dtypes`.
        result_shape_dtypes: a pytree of `ShapeDtypeStruct`s (or arrays).
        *args, **kwargs: the inputs (pytrees).
        sharding: only None (one device) is supported.
        ordered: run in program order relative to the other ordered callbacks.
    Returns:
        The results as purejit arrays, in the structure of `result_shape_dtypes`.
    Raises:
        Whatever `callback` raises, as itself, at the call of the program that runs it (on
        a GPU, at the next synchronisation of its results).
    """
    if sharding is not None:
        raise NotImplementedError("io_callback: sharding= is not supported (one device only)")
    types, tree = _result_types(result_shape_dtypes)
    arrays, rebuild = _split(args, kwargs)
    run = _returning(callback, "io_callback", tree, rebuild)
    if not _traced():
        if ordered:
            _effects.wait_eager()
        return _run_now(run, "io_callback", types, tree, arrays)
    key = register_callback(run, getattr(callback, "__name__", "io_callback"))
    attrs = dict(
        callback=key,
        result_shapes=tuple(s for s, _ in types),
        result_dtypes=tuple(d for _, d in types),
        ordered=bool(ordered),
    )
    if not ordered:
        return tree_unflatten(tree, bind("host_callback", *arrays, **attrs))
    token, *outs = bind("host_callback", _effects.current_token(), *arrays, **attrs)
    _effects.set_token(token)
    return tree_unflatten(tree, outs)


__all__ = ["callback", "io_callback", "print", "pure_callback"]
