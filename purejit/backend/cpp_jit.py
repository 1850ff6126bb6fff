"""jaxlib's C++ jit dispatch (`jaxlib._jax.pjit`), wrapped for purejit's jitted functions.

A call of a `pjit` object runs in C++: it flattens the arguments with a pytree registry,
computes their signature (shapes, dtypes, weak types, shardings, committedness, static
arguments and every thread-local config that is part of the jit key), and on a hit executes
the cached executable and builds the outputs, with no Python in between. On a miss it calls
`cache_miss(*args, **kwargs)`, which returns `(outputs, fastpath_data or None, False)`; None
makes that signature call `cache_miss` every time.

purejit uses it with two registries of its own: on input a purejit `Array` is a dataclass
node whose leaf is its device buffer (read in C++) and whose aux data is its weak-type flag,
so the signature sees the buffer itself; on output an `Array` node is rebuilt by a Python
callback from the buffer and purejit's aval. One `jaxlib` `Config` that is part of the C++
jit key carries purejit's own state: the options that change tracing (global) and, per
thread, whether a transformation's trace is active or jit is disabled, so those calls miss
and take purejit's Python path, or else what of the thread's trace context changes a
traced program (the axes bound for collectives).

Private jaxlib API: `available()` says whether this jaxlib has every piece, and purejit's
Python dispatch is used where it does not (or with `PUREJIT_CPP_DISPATCH=0`).
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

# the value of the key config while a transformation traces or jit is disabled (per thread)
PYTHON_ONLY = "purejit: python dispatch"


class FastpathData(NamedTuple):
    """What jaxlib's `pjit` reads after a miss to run the next calls in C++ (the fields of
    JAX's `MeshExecutableFastpathData`)."""

    xla_executable: Any
    out_pytree_def: Any
    in_shardings: Sequence[Any]
    out_shardings: Sequence[Any]
    out_avals: Sequence[Any]
    out_committed: Sequence[bool]
    kept_var_bitvec: Sequence[bool]
    in_device_local_layouts: Sequence[Any]
    const_args: Sequence[Any]


@functools.lru_cache(maxsize=None)
def _api():
    """jaxlib's pieces, or the reason this jaxlib lacks one (a str)."""
    if os.environ.get("PUREJIT_CPP_DISPATCH", "1").strip().lower() in ("0", "false", "off"):
        return "PUREJIT_CPP_DISPATCH=0"
    try:
        from jax._src.core import ShapedArray
        from jax.sharding import SingleDeviceSharding
        from jaxlib import _jax

        pjit, cache_type = _jax.pjit, _jax.PjitFunctionCache
        registry_type = _jax.pytree.PyTreeRegistry
        config_type = _jax.config.Config
        registry_type().register_dataclass_node  # noqa: B018 (jaxlib >= 0.4.31)
    except (ImportError, AttributeError) as e:
        return f"this jaxlib has no C++ jit dispatch ({e})"
    key = config_type("purejit_dispatch_state", None, include_in_jit_key=True)
    return {
        "pjit": pjit,
        "cache": cache_type(capacity=8192),
        "registry": registry_type,
        "key": key,
        "ShapedArray": ShapedArray,
        "SingleDeviceSharding": SingleDeviceSharding,
    }


def clear_cache() -> None:
    """Drop every entry of the C++ dispatch cache (each jitted function misses once more)."""
    api = _api()
    if isinstance(api, dict):
        api["cache"].clear()


def available() -> bool:
    """Whether jaxlib's C++ jit dispatch can be used (else `why_unavailable()` says why)."""
    return not isinstance(_api(), str)


def why_unavailable() -> str | None:
    api = _api()
    return api if isinstance(api, str) else None


def set_global_state(value) -> None:
    """Set purejit's part of the C++ jit key for every thread (hashable: the options that
    change what tracing produces)."""
    if available():
        _api()["key"].set_global(value)


def set_thread_state(value) -> None:
    """Set this thread's part of the C++ jit key: None when nothing of the thread's state
    changes a traced program, `PYTHON_ONLY` to make every C++ dispatch of a purejit function
    miss (while a trace is active or jit is disabled) so purejit's Python path decides, or
    a hashable value naming what of the thread's trace context changes the program (its
    bound axes): calls under one value never hit executables made under another."""
    if available():
        _api()["key"].set_local(_unset() if value is None else value)


@functools.lru_cache(maxsize=None)
def _unset():
    from jaxlib import _jax

    return _jax.config.unset


class Registries(NamedTuple):
    """The pytree registries a dispatcher flattens inputs with and builds outputs with."""

    inputs: Any
    outputs: Any


def registries(
    array_type: type, buffer_field: str, weak_field: str, to_parts: Callable, from_parts: Callable
) -> Registries:
    """The input and output registries for an array type that wraps a jax.Array.

    Args:
        array_type: purejit's Array.
        buffer_field: the attribute holding the device buffer (None when on the host only).
        weak_field: the attribute holding the weak-type flag (a bool).
        to_parts: `array -> ((buffer,), aux)` for outputs.
        from_parts: `(aux, (buffer,)) -> array` for outputs.
    """
    api = _api()
    inputs, outputs = api["registry"](), api["registry"]()
    inputs.register_dataclass_node(array_type, [buffer_field], [weak_field])
    outputs.register_node(array_type, to_parts, from_parts)
    return Registries(inputs, outputs)


def register_node(registries: Registries, cls: type, flatten: Callable, unflatten: Callable):
    """Teach both registries one of purejit's pytree node types, flattened and rebuilt by
    purejit's own functions, so a call whose arguments or results hold such nodes (a
    `Partial`, a library's module or state class) flattens in C++ to the leaves purejit's
    Python path sees. Aux data C++ cannot hash (purejit allows it) is wrapped: compared as
    itself, hashed by its type, as `PyTreeDef.__hash__` does."""
    to_iter = functools.partial(_to_iterable, flatten)
    from_iter = functools.partial(_from_iterable, unflatten)
    registries.inputs.register_node(cls, to_iter, from_iter)
    registries.outputs.register_node(cls, to_iter, from_iter)


class _UnhashableAux:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return type(other) is _UnhashableAux and self.value == other.value

    def __hash__(self):
        return hash(type(self.value))


def _to_iterable(flatten, x):
    children, aux = flatten(x)
    try:
        hash(aux)
    except TypeError:
        aux = _UnhashableAux(aux)
    return children, aux


def _from_iterable(unflatten, aux, children):
    if type(aux) is _UnhashableAux:
        aux = aux.value
    return unflatten(aux, list(children))


def make(
    name: str,
    fun: Callable,
    cache_miss: Callable,
    *,
    static_argnums: Sequence[int],
    static_argnames: Sequence[str],
    key: object,
    registry,
):
    """A jaxlib `PjitFunction`: calling it dispatches in C++.

    Args:
        name: the function's name (in jaxlib's messages).
        fun: what runs when JAX's own `jax_disable_jit` is set.
        cache_miss: `(*args, **kwargs) -> (outputs, FastpathData | None, False)`.
        static_argnums, static_argnames: as `jit`'s (their values are part of the key).
        key: a hashable object naming this jitted function in the shared cache.
        registry: the input registry of `registries`.
    """
    api = _api()
    return api["pjit"](
        name,
        fun,
        cache_miss,
        list(static_argnums),
        list(static_argnames),
        key,
        registry,
        _shard_arg_fallback,
        api["cache"],
    )


def _shard_arg_fallback(x, sharding, layout):
    # only reached for arguments the fast path was built to refuse (several devices,
    # a layout): put the value where the executable wants it, as JAX's dispatch does
    import jax

    return jax.device_put(x, sharding)


def flatten(registries: Registries, tree) -> tuple[list, Any]:
    """The leaves C++ sees for `tree` (inputs registry) and its treedef."""
    return registries.inputs.flatten(tree)


def output_treedef(registries: Registries, outputs) -> tuple[list, Any]:
    """The output buffers of `outputs` (a pytree of purejit Arrays) and the treedef that
    rebuilds them from new buffers."""
    return registries.outputs.flatten(outputs)


def fastpath_data(
    exe, device, out_treedef, out_buffers: Sequence, out_avals: Sequence, n_params: int
) -> FastpathData | None:
    """The C++ fast path's data for a one-device executable, or None when its outputs are
    not plain jax.Arrays on `device`.

    Args:
        exe: the jaxlib LoadedExecutable.
        device: the one device it runs on.
        out_treedef: from `output_treedef`.
        out_buffers: the outputs of the call that missed, in the treedef's leaf order.
        out_avals: (shape, dtype, weak_type) per output.
        n_params: how many parameters the executable takes (all kept).
    """
    if not all(is_device_buffer_on(b, device) for b in out_buffers):
        return None
    api = _api()
    sharding = api["SingleDeviceSharding"](device)
    shaped = api["ShapedArray"]
    avals = [shaped(tuple(s), np.dtype(d), weak_type=bool(w)) for s, d, w in out_avals]
    return FastpathData(
        xla_executable=exe,
        out_pytree_def=out_treedef,
        in_shardings=[sharding] * n_params,
        out_shardings=[sharding] * len(out_buffers),
        out_avals=avals,
        out_committed=[bool(b._committed) for b in out_buffers],
        kept_var_bitvec=[True] * n_params,
        in_device_local_layouts=[None] * n_params,
        const_args=[],
    )


def spmd_fastpath_data(
    exe,
    in_shardings: Sequence,
    out_shardings: Sequence,
    out_treedef,
    out_buffers: Sequence,
    out_avals: Sequence,
) -> FastpathData | None:
    """The C++ fast path's data for an SPMD executable (one program over a mesh), or None
    when some output is not a committed jax.Array laid out as its result sharding says.

    Args:
        exe: the jaxlib LoadedExecutable compiled for every device of the mesh.
        in_shardings, out_shardings: the jax shardings of its parameters and results.
        out_treedef: from `output_treedef`.
        out_buffers: the outputs of the call that missed, in the treedef's leaf order.
        out_avals: (shape, dtype, weak_type) per output.
    """
    for b, s, (shape, dtype, _) in zip(out_buffers, out_shardings, out_avals):
        if not is_sharded_buffer(b, s, shape, dtype) or b.is_deleted():
            return None
    api = _api()
    shaped = api["ShapedArray"]
    avals = [shaped(tuple(s), np.dtype(d), weak_type=bool(w)) for s, d, w in out_avals]
    n = len(in_shardings)
    return FastpathData(
        xla_executable=exe,
        out_pytree_def=out_treedef,
        in_shardings=list(in_shardings),
        out_shardings=list(out_shardings),
        out_avals=avals,
        out_committed=[True] * len(out_buffers),
        kept_var_bitvec=[True] * n,
        in_device_local_layouts=[None] * n,
        const_args=[],
    )


def is_sharded_buffer(x, sharding, shape, dtype) -> bool:
    """Whether `x` is a committed jax.Array (exactly jaxlib's type) of `shape` and `dtype`
    whose sharding equals `sharding`, deleted or not: what C++ dispatch hands an SPMD
    executable as is, on every later call whose argument has an equal sharding (the
    sharding is part of its cache key; it never compares it with the parameter's)."""
    if type(x).__name__ != "ArrayImpl" or not x._committed:
        return False
    sh = x.sharding
    return (sh is sharding or sh == sharding) and x.shape == shape and x.dtype == dtype


def jax_x64() -> bool:
    """JAX's own x64 flag (the C++ path narrows NumPy and Python values by it)."""
    import jax

    return bool(jax.config.jax_enable_x64)


def is_device_buffer_on(x, device) -> bool:
    """Whether `x` is a jax.Array (exactly jaxlib's type, as the C++ path wants) on
    exactly `device`."""
    return type(x).__name__ == "ArrayImpl" and not x.is_deleted() and x.devices() == {device}


def is_donated_buffer_on(x, device, shape, dtype) -> bool:
    """Whether `x` is a jax.Array of `shape` and `dtype` on exactly `device`, deleted or not:
    a call that donated it deleted it at execute, unless something else holds its memory (on
    CPU, a NumPy view of it), in which case PJRT copies and leaves it alive."""
    if type(x).__name__ != "ArrayImpl":
        return False
    return x.sharding.device_set == {device} and x.shape == shape and x.dtype == dtype


# what PJRT says when it refuses to execute because of a donated buffer, before running
# anything: a deleted (already donated) buffer, or one buffer both donated and used again
_DONATION_FAILURES = (
    "has been deleted or donated",
    "has been donated or deleted",
    "Attempt to donate a buffer which is also used by the same call",
    "Attempt to donate the same buffer twice",
    "Attempt to use a buffer that was previously donated in the same call",
)


def is_donation_failure(e: BaseException) -> bool:
    """Whether `e`, raised by a `make` dispatcher's own C++ code, is PJRT refusing to run
    because of a donated buffer (the program did not run)."""
    if not isinstance(e, (ValueError, RuntimeError)):
        return False
    text = str(e)
    return any(m in text for m in _DONATION_FAILURES)


@functools.lru_cache(maxsize=None)
def _plain_registry():
    return _api()["registry"]()


def array_leaves(tree) -> list:
    """The leaves of `tree` over builtin containers only (any other object, purejit's Array
    included, is a leaf), flattened in C++."""
    return _plain_registry().flatten(tree)[0]
