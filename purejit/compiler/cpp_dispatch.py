"""Which calls of a jitted function may run through jaxlib's C++ dispatch, and the data that
lets them.

`purejit.jit` hands jaxlib's C++ `pjit` a cache-miss function (purejit's Python dispatch).
After each miss, `fastpath_for` decides from what the Python path did whether the next
calls with the same C++ signature may skip Python. They may only when running the
executable on the arguments' buffers is all the Python path would do:

- the call went through the executable cache (no transformation traced it, jit enabled,
  no buckets), with positional arguments only;
- the program has no host callbacks, and either
  - runs on one device; its inputs are the executable's parameters in order, each a buffer
    on that device, a NumPy array or a scalar whose canonical type is the parameter's; a
    parameter it donates (aliases to an output) took a buffer on that device (never a
    NumPy array, whose memory the transfer may share and donation would hand to an
    output); every output is a purejit Array on that device; or
  - is an SPMD program over a mesh (`shard_map` inside jit, jit with shardings); every
    input is a purejit Array whose committed buffer has the parameter's global shape,
    dtype and a sharding equal to the parameter's, which the Python path ran on as is
    (C++ keys a call on its arguments' shardings and hands their buffers to the program
    unchecked, so any other layout, NumPy array or scalar misses to the Python path,
    which reshards or raises); every output is a purejit Array laid out as its result;
- JAX's x64 flag (by which the C++ path narrows NumPy and Python values) is purejit's.

Everything else returns None and keeps that signature on the Python path. The C++ key
holds purejit's tracing options (set here on every change) and, per thread, whether a
trace is active or jit is disabled, so those calls reach Python, or else the part of the
thread's trace context that changes a traced program (`tracing.context.dispatch_key`: the
axes bound for collectives), as the Python path's cache key does (`sync_thread_state`).
`stats.hits` stays exact: the first output of each fast call counts the hit as it is
rebuilt.

A donating program runs in C++ as in JAX: PJRT deletes each buffer the executable aliases
to an output (unless something else holds its memory, as a NumPy view of a CPU buffer
does: PJRT then copies and the Array stays valid, where the Python path marks it deleted).
`entry` wraps a donating function's dispatcher in one Python frame that, after the call,
marks the donated arguments' Arrays whose buffers PJRT deleted (`mark_donated`: a C++
flatten and a check per array, about 15 µs for 96 arrays), so that every later use, down
to paths that hand buffers straight to C++ (eager ops, a jitted function already running
in C++), raises purejit's `DeletedArrayError` naming the function; `Array` also notices a
deleted buffer itself (`Array.deleted_error`). Where PJRT refuses to run a donating call
(a donated buffer passed again, or one buffer donated and used twice), it refuses before
running anything, and `entry` sends the call through purejit's Python path, whose error
names the argument. An SPMD program given one donated buffer twice crashes jaxlib instead
(a segfault on CPU, for `jax.jit` too), so once C++ runs a donating SPMD signature of a
function, `entry` first checks that no two Arrays of the call share a buffer (a C++ flatten
and a set of ids, tens of µs for a training step's 290 arrays) and sends a call where two do
through the Python path.

On the CPU backend an SPMD call in C++ is paced as the Python path paces its own
(`backend.spmd`: at most a few calls in flight, or jaxlib's CPU client can deadlock): the
first output that C++ rebuilds of each call reports it (`SpmdExecutable.cpu_launch_hook`).
"""

from __future__ import annotations

import functools
import itertools
import operator
import threading
import weakref

import numpy as np

from purejit import _treedef
from purejit import dtypes as pdt
from purejit.backend import cpp_jit
from purejit.config import config
from purejit.runtime import eval_trace
from purejit.runtime.array import Array
from purejit.tracing import context, current_trace, on_trace_change, trace_depth


def available() -> bool:
    """Whether jaxlib's C++ dispatch is used (see `cpp_jit.why_unavailable`)."""
    return cpp_jit.available()


class _Outputs:
    """Turns output Arrays into (buffer, aux) and back; the first Array flattened after
    `counting(stats)` carries `stats`, so that rebuilding it counts one hit."""

    def __init__(self):
        self._stats = self._hook = None
        self.lock = threading.Lock()

    def counting(self, stats, launched=None):
        self._stats, self._hook = stats, launched

    def to_parts(self, a: Array):
        stats, self._stats = self._stats, None
        hook, self._hook = self._hook, None
        return (a._buf,), (a.aval, stats, hook)

    @staticmethod
    def from_parts(aux, children):
        # Array.from_buffer inlined: this runs once per output of every fast call
        aval, stats, launched = aux
        if stats is not None:
            stats.hits += 1
            if launched is not None:  # an SPMD call on CPU devices: paced (backend.spmd)
                launched(children[0])
        a = _new(Array)
        a._buf = children[0]
        a._host = a._deleted_by = a._row = None
        a.aval = aval
        a._weak = aval.weak_type
        return a


_new = object.__new__
_outputs = _Outputs()
_registries = None


class _NodeMirror:
    """Which of purejit's registered pytree node types the C++ registries know: every one
    but the containers C++ flattens itself (tuple, list, dict, None; namedtuples are not
    registered), taught in registration order (`_treedef._REGISTRY` only grows). A type
    registered after the registries were made is taught at the next `registries()`: until
    then C++ sees its objects as leaves, so the signature misses to the Python path (its
    leaves are no executable's parameters), which calls `registries()`."""

    NATIVE = (tuple, list, dict, type(None))

    def __init__(self):
        self.lock = threading.Lock()
        self.taught = 0

    def sync(self, regs: cpp_jit.Registries) -> None:
        if self.taught == len(_treedef._REGISTRY):
            return
        with self.lock:
            kinds = list(_treedef._REGISTRY.items())
            for cls, node in kinds[self.taught :]:
                if cls not in self.NATIVE:
                    cpp_jit.register_node(regs, cls, node.flatten, node.unflatten)
            self.taught = len(kinds)


_mirror = _NodeMirror()


def registries() -> cpp_jit.Registries:
    global _registries
    if _registries is None:
        with _mirror.lock:
            if _registries is None:
                _registries = cpp_jit.registries(
                    Array, "_buf", "_weak", _outputs.to_parts, _Outputs.from_parts
                )
    _mirror.sync(_registries)
    return _registries


def make(jitted, cache_miss):
    """The C++ dispatcher of a `purejit.jit` function, or None where it cannot have one
    (buckets, static arguments, or a jaxlib without the path)."""
    if not available() or jitted._buckets is not None or jitted.spec.has_static:
        return None
    return cpp_jit.make(
        jitted.__name__,
        jitted.fun,
        cache_miss,
        static_argnums=(),
        static_argnames=(),
        key=_Key(),
        registry=registries().inputs,
    )


def entry(jitted, dispatcher):
    """What a call of `jitted` runs: `dispatcher` itself, or for a donating function,
    `dispatcher` with PJRT's donation failures re-dispatched through purejit's Python path
    (which raises purejit's errors: `DeletedArrayError`, or the ValueError naming the
    arguments that share a buffer)."""
    c = jitted.config
    if not (c.donate_argnums or c.donate_argnames):
        return dispatcher
    owner = weakref.ref(jitted)  # the class holding this function belongs to `jitted`
    # positions (the C++ path takes positional arguments only; names map to positions)
    donated = tuple(sorted(c.donate_argnums))
    name = getattr(jitted, "__name__", "f")
    # set once C++ runs an SPMD signature of this function (`_spmd_fastpath`)
    checks = jitted._cpp_spmd_donates = [False]

    def call(*args, **kwargs):
        per = None
        if checks[0]:
            # jaxlib crashes (jaxlib 0.10.2, CPU: a segfault, as `jax.jit` does) where an
            # SPMD program is given a donated buffer twice, instead of refusing it as for
            # one device: purejit's Python path raises its error naming the arguments
            per = [cpp_jit.array_leaves(a) for a in args]
            if _shares_a_buffer(per):
                return owner()._dispatch(args, kwargs)[0]
        try:
            out = dispatcher(*args, **kwargs)
        except (ValueError, RuntimeError) as e:
            # only PJRT's refusal in C++ itself (no Python frame below this one), which
            # comes before the program runs; the Python path's own errors pass through
            if e.__traceback__.tb_next is not None or not cpp_jit.is_donation_failure(e):
                raise
            return owner()._dispatch(args, kwargs)[0]
        for i in donated:
            if i < len(args):
                mark_donated_leaves(
                    cpp_jit.array_leaves(args[i]) if per is None else per[i], i, name
                )
        return out

    return call


def _shares_a_buffer(per_argument: list) -> bool:
    """Whether two Arrays among the arguments' leaves (`array_leaves` of each) hold one
    buffer (or none: deleted, on the host)."""
    leaves = itertools.chain.from_iterable(per_argument)
    try:  # all Arrays (a training step's state and batch): the loop runs in C
        return len(set(map(id, map(_buffer_of, leaves)))) != sum(map(len, per_argument))
    except AttributeError:  # a NumPy array or a scalar among them
        bufs = [a._buf for leaves in per_argument for a in leaves if a.__class__ is Array]
        return len(set(map(id, bufs))) != len(bufs)


_buffer_of = operator.attrgetter("_buf")


def mark_donated(tree, position: int, fname: str) -> None:
    """Mark the Arrays of a donated argument whose buffers PJRT deleted, as the Python path's
    `consume_donated` does: every later use (a jitted call in C++ included, which then
    misses to Python) raises `DeletedArrayError` naming the function. C++ saw only builtin
    containers and Arrays in a call it ran, so a plain flatten finds them all."""
    mark_donated_leaves(cpp_jit.array_leaves(tree), position, fname)


def mark_donated_leaves(leaves: list, position: int, fname: str) -> None:
    """`mark_donated` of a donated argument's leaves (`cpp_jit.array_leaves`)."""
    reason = None
    for a in leaves:
        if a.__class__ is Array:
            buf = a._buf
            if buf is not None and buf.is_deleted():
                if reason is None:
                    reason = (
                        f"it was donated as (part of) argument {position} of the jitted "
                        f"function {fname}; a donated array cannot be used after the call"
                    )
                a._buf = a._host = a._row = None
                a._deleted_by = reason


class _Key:
    """Names one jitted function in jaxlib's shared cache (by identity)."""

    __slots__ = ("__weakref__",)


def input_leaves(args: tuple):
    """The leaves C++ saw for positional `args`, taken before the Python path runs (it
    moves host-only Arrays to the device)."""
    return cpp_jit.flatten(registries(), args)[0]


def fastpath_for(jitted, compiled, ran_on: list, leaves: list, out):
    """The C++ fast-path data for the signature that just missed, or None (see the module
    docstring for the conditions).

    Args:
        jitted: the `purejit.jit` function.
        compiled: the `Compiled` the Python path ran.
        ran_on: what it ran on, one per parameter (purejit Arrays or NumPy arrays).
        leaves: what C++ saw (`input_leaves`, taken before the call).
        out: the call's outputs.
    """
    lowered = compiled.lowered
    exe = compiled.exe
    if (
        compiled.stacked  # several leaves to one parameter: Python's
        or lowered.has_callbacks
        or cpp_jit.jax_x64() != config.enable_x64
        or len(leaves) != len(exe.param_types)
        or len(ran_on) != len(leaves)
    ):
        return None
    if lowered.layout is not None:
        return _spmd_fastpath(jitted, compiled, ran_on, leaves, out)
    device = exe.device
    if device is None:
        return None
    aliases = () if compiled.plain else lowered.donation.aliases
    for i, (given, arr, want) in enumerate(zip(leaves, ran_on, exe.param_types)):
        if i in aliases:
            # donated: the Python path consumed the Array whose buffer C++ saw (a NumPy
            # array here would have been copied first, and C++ would donate its transfer)
            if type(arr) is not Array or arr._deleted_by is None:
                return None
            if not cpp_jit.is_donated_buffer_on(given, device, want.shape, want.dtype):
                return None
        elif not _leaf_fits(given, arr, want, device):
            return None
    with _outputs.lock:
        _outputs.counting(jitted.stats)
        try:
            bufs, treedef = cpp_jit.output_treedef(registries(), out)
        finally:
            _outputs.counting(None)
    avals = compiled.out_avals
    if len(bufs) != len(avals) or len(bufs) != len(exe.result_types) or not bufs:
        return None
    for b, a in zip(bufs, avals):
        if b is None or tuple(getattr(b, "shape", ())) != a.shape:
            return None
    return cpp_jit.fastpath_data(
        exe._exe,
        device,
        treedef,
        bufs,
        [(a.shape, a.dtype, a.weak_type) for a in avals],
        len(leaves),
    )


def _spmd_fastpath(jitted, compiled, ran_on: list, leaves: list, out):
    """`fastpath_for` of an SPMD program: every argument C++ saw is a committed jax.Array
    whose sharding equals its parameter's, which the Python path ran on as is (donated:
    consumed). C++ keys each call on its arguments' shardings and runs them unchecked, so a
    later call with any other layout misses to the Python path, which reshards or raises."""
    exe = compiled.exe
    aliases = () if compiled.plain else compiled.lowered.donation.aliases
    js_in, js_out = exe.jax_in_shardings, exe.jax_out_shardings
    for i, (given, arr, want) in enumerate(zip(leaves, ran_on, exe.param_types)):
        if type(arr) is not Array or not cpp_jit.is_sharded_buffer(
            given, js_in[i], want.shape, want.dtype
        ):
            return None
        if i in aliases:
            if arr._deleted_by is None:  # the Python path consumed what it donated
                return None
        elif arr._buf is not given or given.is_deleted():
            return None
    with _outputs.lock:
        _outputs.counting(jitted.stats, exe.cpu_launch_hook)
        try:
            bufs, treedef = cpp_jit.output_treedef(registries(), out)
        finally:
            _outputs.counting(None)
    avals = compiled.out_avals
    if len(bufs) != len(avals) or len(bufs) != len(js_out) or not bufs:
        return None
    if aliases:
        checks = getattr(jitted, "_cpp_spmd_donates", None)
        if checks is None:
            return None
        checks[0] = True  # `entry` checks that no donated buffer comes twice
    return cpp_jit.spmd_fastpath_data(
        exe._exe,
        js_in,
        js_out,
        treedef,
        bufs,
        [(a.shape, a.dtype, a.weak_type) for a in avals],
    )


def _leaf_fits(given, arr, want, device) -> bool:
    """Whether C++'s view of one argument (`given`) is the parameter `want` that the Python
    path bound `arr` (a purejit Array or a NumPy array) to."""
    if given is None:  # an Array still on the host (or deleted): the Python path moves it
        return False
    if cpp_jit.is_device_buffer_on(given, device):
        # the very buffer the Python path ran on: same position, same type
        return getattr(arr, "_buf", None) is given and arr.dtype == want.dtype
    if isinstance(given, np.ndarray):
        return given.shape == want.shape and pdt.canonicalize(given.dtype) == want.dtype
    if isinstance(given, (bool, int, float, complex, np.generic)):
        return arr.shape == want.shape == () and arr.dtype == want.dtype
    return False


_ids = itertools.count()


@functools.lru_cache(maxsize=256)
def _context_id(trace_context: tuple) -> int:
    """A small int naming one value of purejit's tracing options (cheap to hash per call);
    never reused, so a value seen again after eviction only costs C++ misses."""
    return next(_ids)


def _sync_global(_value=None) -> None:
    cpp_jit.set_global_state(_context_id(config.trace_context))


def sync_thread_state() -> None:
    """Make this thread's C++ dispatches miss while a trace is active or jit is disabled,
    and key them on what of its trace context changes a traced program (its bound axes)."""
    if trace_depth() > 1 or current_trace() is not eval_trace or config.jit_disabled:
        cpp_jit.set_thread_state(cpp_jit.PYTHON_ONLY)
    else:
        meaning = context.dispatch_key()
        cpp_jit.set_thread_state(("purejit trace context", meaning) if meaning else None)


if available():
    _sync_global()
    config.watch("trace_context", _sync_global)
    config.watch("disable_jit", lambda _v: sync_thread_state())
    on_trace_change(sync_thread_state)
