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

`debug.breakpoint` is a `debug.callback` carrying every array local of the user's frames
into a small command-line debugger (`purejit/debugger.py`); `debug.log` is `debug.print`
through the `purejit.debug` logger (INFO, the user's file and line);
`inspect_array_sharding`, `visualize_array_sharding` and `visualize_sharding` show where
an array's shards live, as a text grid of devices.
"""

from __future__ import annotations

import builtins
import logging
import sys
from typing import Callable

import numpy as np

from purejit import debugger, errors
from purejit import dtypes as pdt
from purejit.ir.ops.callback import register_callback
from purejit.lax import _effects
from purejit.runtime import Array, eval_trace
from purejit.tracing import ConcreteArray, Tracer, bind, current_trace
from purejit.tree_util import tree_flatten, tree_unflatten


def _is_array(x) -> bool:
    return isinstance(
        x, (Tracer, ConcreteArray, np.ndarray, np.generic, int, float, complex, bool)
    ) or (hasattr(x, "__array__") and hasattr(x, "shape") and hasattr(x, "dtype"))


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


def _format(fmt: str, args, kwargs) -> str:
    # JAX's rule: a format without placeholders gets the values appended, space-separated
    if args and "{" not in fmt:
        return " ".join((fmt, *(str(a) for a in args)))
    return fmt.format(*args, **kwargs)


logger = logging.getLogger("purejit.debug")


def log(fmt: str, *args, ordered: bool = False, partitioned: bool = False, **kwargs) -> None:
    """Log `fmt.format(*args, **kwargs)` with the values of traced arrays at INFO through
    the `purejit.debug` logger, each time the program runs (as `jax.debug.log`); the record
    names the user's file and line.

    Args:
        fmt: a `str.format` string.
        *args, **kwargs: pytrees of values.
        ordered: log in program order relative to the other ordered callbacks.
        partitioned: accepted for JAX compatibility (the values are logged whole).
    """
    del partitioned
    if not isinstance(fmt, str):
        raise TypeError(f"debug.log: fmt must be a format string, got {type(fmt).__name__}")
    frame = errors.user_frame()
    filename = frame.f_code.co_filename if frame is not None else "(unknown file)"
    lineno = frame.f_lineno if frame is not None else 0

    def emit(*a, **kw):
        if logger.isEnabledFor(logging.INFO):
            msg = _format(fmt, a, kw)
            logger.handle(logger.makeRecord(logger.name, logging.INFO, filename, lineno, msg,
                                            (), None))  # fmt: skip

    callback(emit, *args, ordered=ordered, **kwargs)


def breakpoint(  # noqa: A001
    *,
    backend: str | None = None,
    filter_frames: bool = True,
    num_frames: int | None = None,
    ordered: bool = False,
    token=None,
    **kwargs,
) -> None:
    """Stop here each time the program runs and open a command-line debugger over the
    frames' values (as `jax.debug.breakpoint`): `p x`, `pp x`, `u`, `d`, `l`, `ll`, `w`,
    `c` (continue), `q` (raise `bdb.BdbQuit`); see `purejit/debugger.py`.

    Args:
        backend: None or "cli" (purejit has only the command-line debugger).
        filter_frames: leave out purejit's, the standard library's and installed
            packages' frames.
        num_frames: how many frames to capture (None: all).
        ordered: stop in program order relative to the other ordered callbacks.
        token: not supported (pass ordered=True to order breakpoints).
    """
    if backend not in (None, "cli"):
        raise NotImplementedError(
            f"debug.breakpoint: backend={backend!r}; purejit has only the 'cli' debugger"
        )
    if token is not None or kwargs:
        raise NotImplementedError(
            "debug.breakpoint: token= and debugger options are not supported; use ordered=True"
        )
    frames, arrays = debugger.capture(
        sys._getframe(1), filter_frames=filter_frames, num_frames=num_frames, is_array=_is_array
    )
    callback(lambda *host: debugger.run(frames, list(host)), *arrays, ordered=ordered)


def inspect_array_sharding(value, *, callback: Callable) -> None:
    """Call `callback(sharding)` with the sharding of the array `value` (as
    `jax.debug.inspect_array_sharding`).

    Raises:
        NotImplementedError under a trace: purejit's traced values carry no sharding (XLA's
        partitioner decides it after tracing); inspect the jitted function's result, or
        `jit(f).lower(...).compile()`'s output shardings, instead.
    """
    if _traced() or isinstance(value, Tracer):
        raise NotImplementedError(
            "debug.inspect_array_sharding of a traced value: purejit's traced values carry no "
            "sharding (the partitioner decides it after tracing); call it on the jitted "
            f"function's result instead{errors.at(errors.user_location())}"
        )
    sharding = getattr(value, "sharding", None)
    if sharding is None:
        raise TypeError(
            f"debug.inspect_array_sharding: {type(value).__name__} has no sharding; pass an array"
        )
    callback(sharding)


def visualize_array_sharding(arr, **kwargs) -> None:
    """Print the grid of devices holding each block of the 1-D or 2-D array `arr` (as
    `jax.debug.visualize_array_sharding`); keyword options as `visualize_sharding`."""
    inspect_array_sharding(arr, callback=lambda s: visualize_sharding(arr.shape, s, **kwargs))


def _blocks(shape, sharding) -> dict:
    """{(row range, column range): sorted device ids} for a 1-D or 2-D shape."""
    grid: dict = {}
    for device, index in sharding.devices_indices_map(tuple(shape)).items():
        spans = []
        for d, sl in zip(shape, tuple(index) + (slice(None),) * (len(shape) - len(index))):
            start, stop, _ = sl.indices(d)
            spans.append((start, stop))
        if len(shape) == 1:
            spans = [(0, 1), *spans]
        grid.setdefault(tuple(spans), []).append(device)
    return grid


def _label(devices) -> str:
    platform = str(getattr(devices[0], "platform", "device")).upper()
    ids = sorted(int(getattr(d, "id", 0)) for d in devices)
    return f"{platform} {','.join(str(i) for i in ids)}"


def visualize_sharding(
    shape,
    sharding,
    *,
    use_color: bool = True,
    scale: float = 1.0,
    min_width: int = 9,
    max_width: int = 80,
    color_map=None,
) -> None:
    """Print which devices hold each block of an array of `shape` (1-D or 2-D) under
    `sharding`, as a text grid (as `jax.debug.visualize_sharding`). Column widths follow
    the blocks' sizes (times `scale`, between `min_width` and `max_width` in all); the grid
    is plain text, so `use_color` and `color_map` change nothing."""
    del use_color, color_map
    shape = tuple(int(d) for d in shape)
    if len(shape) not in (1, 2):
        raise ValueError(
            f"visualize_sharding: only 1-D and 2-D shapes can be visualized, got {shape}"
        )
    grid = _blocks(shape, sharding)
    rows = sorted({r for r, _ in grid})
    cols = sorted({c for _, c in grid})
    labels = {k: _label(v) for k, v in grid.items()}
    total = max(1, shape[-1])
    widths = []
    for c in cols:
        want = round(scale * max_width * (c[1] - c[0]) / total)
        need = max(len(labels.get((r, c), "")) for r in rows) + 2
        widths.append(max(min_width, need, min(want, max_width)))

    def rule(left: str, mid: str, right: str) -> str:
        return left + mid.join("─" * w for w in widths) + right

    lines = [rule("┌", "┬", "┐")]
    for i, r in enumerate(rows):
        cells = [labels.get((r, c), "").center(w) for c, w in zip(cols, widths)]
        lines.append("│" + "│".join(cells) + "│")
        lines.append(rule("├", "┼", "┤") if i + 1 < len(rows) else rule("└", "┴", "┘"))
    builtins.print("\n".join(lines), flush=True)


__all__ = [
    "breakpoint",
    "callback",
    "inspect_array_sharding",
    "io_callback",
    "log",
    "print",
    "pure_callback",
    "visualize_array_sharding",
    "visualize_sharding",
]
