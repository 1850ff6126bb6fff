"""`purejit.jit`, its ahead-of-time handles (`lower`, `compile`) and `disable_jit`.

One call: `ArgSpec.signature` flattens the arguments and builds the abstract signature
(shapes, dtypes, weak types, static arguments); on a cache miss `purejit.compiler.lower`
traces, optimises and emits, and `Lowered.compile` compiles with PJRT; then the executable
runs and the outputs are unflattened.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import weakref
from typing import Callable, Sequence

from purejit.compiler import CacheStats, Compiled, Lowered, cpp_dispatch
from purejit.compiler.compiled import ELSEWHERE, fast_flatten
from purejit.compiler.buckets import Buckets
from purejit.compiler.callees import Callees
from purejit.compiler.explain import Explanation, explain_lowered
from purejit.compiler.donation import normalize_donation
from purejit.compiler.lower import JitConfig, lower, trace
from purejit.compiler.options import CompilerOptions, check_inline
from purejit import fused_attention
from purejit.compiler.signature import ArgSpec, CallSignature, committed_device
from purejit.compiler.stages import Traced
from purejit import errors, tree_util
from purejit.config import config
from purejit.ir import Function, lru
from purejit.runtime import eval_trace, float_checks
from purejit.tracing import JitTrace, bind, current_trace
from purejit.tracing.context import dispatch_key
from purejit.transforms.batching import notes as transform_notes


# Process-wide bounds, as JAX's: compiled programs (each holds its IR and executable) and
# the Python fast path's dispatch entries of every jitted function; a function's entries go
# when the function goes (its partitions are weakly held).
PROGRAMS = lru.LRU("jit compiled programs", lambda: config.read("jit_cache_size"))
DISPATCH = lru.LRU("jit fast-path dispatch entries", lambda: config.read("dispatch_cache_size"))


def _on_evict(stats: CacheStats, fast: lru.Partition):
    """What a jitted function does when the bound evicts one of its programs: count it and
    forget the fast-path entries that call it (so the program can be freed). Holds no
    reference to the function itself, which keeps the cache weakly keyed on it."""

    def evicted(key, compiled):
        stats.on_evicted()
        for k, v in fast.items():
            if v is compiled:
                fast.pop(k)

    return evicted


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Within this block, jitted functions run op by op (eagerly), for debugging."""
    prev = config.jit_disabled
    config.set_disable_jit(disable)
    try:
        yield
    finally:
        config.set_disable_jit(prev)


@dataclasses.dataclass(frozen=True)
class JitOptions:
    """`jit`'s options (documented there), one record: `jit()` builds it once and its
    `Jitted` holds it as `.options`."""

    static_argnums: int | Sequence[int] = ()
    static_argnames: str | Sequence[str] = ()
    donate_argnums: int | Sequence[int] = ()
    donate_argnames: str | Sequence[str] = ()
    passes: object = None
    compiler_options: dict | None = None
    in_shardings: object = None
    out_shardings: object = None
    buckets: dict | None = None
    bucket_overflow: str = "error"
    recompile_warn_after: int | None = None
    recompile_raise: bool | None = None


class Jitted:
    """A function wrapped by `purejit.jit`.

    Besides being called, it offers what the compiler's helpers (buckets, export, explain)
    use: `signature(args, kwargs)`, `lower_signature(sig)`, `trace_signature(sig)`,
    `cache` (signature key -> `Compiled`, a share of the process-wide bounded table
    `PROGRAMS`) and `stats`.
    """

    @property
    def __signature__(self):
        """The wrapped function's signature (`inspect.signature` of a jitted function, as
        JAX's jitted functions give it, also with `follow_wrapped=False`)."""
        return inspect.signature(self.fun)

    def __init__(self, fun: Callable, options: JitOptions | None = None):
        options = JitOptions() if options is None else options
        functools.update_wrapper(self, fun)
        if not isinstance(getattr(self, "__name__", None), str):
            # functools.partial objects and callable instances have no __name__
            inner = getattr(fun, "func", None)
            self.__name__ = getattr(inner, "__name__", None) or type(fun).__name__
        self.fun = fun
        self.options = options
        self.spec = ArgSpec(fun, self.__name__, options.static_argnums, options.static_argnames)
        donate_argnums, donate_argnames = normalize_donation(
            options.donate_argnums,
            options.donate_argnames,
            self.spec.signature_of_fun,
            self.spec.static_argnums,
            self.spec.static_argnames,
            self.__name__,
        )
        self.config = JitConfig(
            fun,
            self.__name__,
            CompilerOptions.parse(options.compiler_options),
            options.passes,
            donate_argnums,
            donate_argnames,
            options.in_shardings,
            options.out_shardings,
            fused_attention,
        )
        self.stats = CacheStats(
            name=self.__name__,
            warn_after=options.recompile_warn_after,
            raise_on_churn=options.recompile_raise,
        )
        # signature key -> Compiled, and fast key -> Compiled: shares of the bounded tables
        self._fast: lru.Partition = DISPATCH.partition()
        self.cache: lru.Partition = PROGRAMS.partition(_on_evict(self.stats, self._fast))
        # this function's traces as a call inside other traces, per signature
        self.callees = Callees()
        self._fast_context = config.trace_context
        self._fast_ok = not self.spec.has_static
        self._buckets = None
        if options.buckets is not None:
            self._buckets = Buckets(options.buckets, options.bucket_overflow, self.spec)
            self._fast_ok = False  # every call must go through the padding
        # jaxlib's C++ dispatch, where it can be used: calls go straight to it (a class of
        # this instance's own whose __call__ is the C++ object), and reach Python on a miss
        self._cpp = cpp_dispatch.make(self, self._cpp_cache_miss)
        if self._cpp is not None:
            self.__class__ = _cpp_class(type(self), cpp_dispatch.entry(self, self._cpp))

    static_argnums = property(lambda self: self.spec.static_argnums)
    static_argnames = property(lambda self: self.spec.static_argnames)

    def __get__(self, obj, objtype=None):
        """As a method decorator: `obj.f(x)` calls the jitted function as `f(obj, x)`.

        As in JAX, `obj` is an argument like any other: mark it static (`static_argnums=0`,
        for a hashable object) or make its class a registered pytree."""
        if obj is None:
            return self
        return functools.partial(self, obj)

    def signature(self, args, kwargs, *, shapes_only: bool = False) -> CallSignature:
        """The `CallSignature` of a call (arguments converted and checked once)."""
        return self.spec.signature(args, kwargs, shapes_only=shapes_only)

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and optimise for these arguments (arrays or shape specs), without compiling.
        Its `compile()` makes the executable that calls with these arguments then run."""
        sig = self.signature(args, kwargs, shapes_only=True)
        lowered = self.lower_signature(sig)
        lowered.cache_slot = self._cache_slot(sig)
        return lowered

    def trace(self, *args, **kwargs) -> Traced:
        """JAX's first ahead-of-time stage: the traced program for these arguments (arrays
        or shape specs); `.jaxpr` shows its IR, `.lower()` continues to `Lowered`."""
        sig = self.signature(args, kwargs, shapes_only=True)
        return Traced(self.config, sig, self.stats, cache_slot=self._cache_slot(sig))

    def _cache_slot(self, sig: CallSignature) -> "_CacheSlot | None":
        """Where `compile_signature` keeps the executable of `sig` (None with buckets, whose
        calls run padded signatures)."""
        if self._buckets is not None:
            return None
        key, device = self._cache_key(sig)
        return _CacheSlot(self, key, device)

    def _cache_key(self, sig: CallSignature, key=None) -> tuple:
        """(cache key, device) of a call: as in JAX, a program without shardings runs on the
        device its arguments are committed to (`device_put(x, device)`), else on the default
        device (None)."""
        device = None
        if self.config.in_shardings is None and self.config.out_shardings is None:
            device = committed_device(sig, self.__name__)
        key = sig.key if key is None else key
        return ((key, device) if device is not None else key), device

    def eval_shape(self, *args, **kwargs):
        """The outputs' shapes and dtypes for these arguments, without compiling."""
        return self.trace(*args, **kwargs).out_info

    def lower_signature(self, sig: CallSignature) -> Lowered:
        """Trace, optimise and emit for the call `sig` (at its `avals`)."""
        return lower(self.config, sig, self.stats)

    def trace_signature(self, sig: CallSignature) -> Function:
        """Only trace (no passes, no compile) for `sig`, e.g. to analyse the program."""
        self.stats.traces += 1
        return trace(self.config, sig)[0].fn

    def compile_signature(self, sig: CallSignature, *, key=None, expected=frozenset()):
        """The cached executable for `sig`, compiling it on a miss (explained in `stats`);
        it runs on the device `_cache_key` names."""
        key, device = self._cache_key(sig, key)
        compiled = self.cache.get(key)
        if compiled is None:
            # threads asking for one signature wait for the first to compile it
            with self.stats.compile_lock(key):
                compiled = self.cache.get(key)
                if compiled is None:
                    self.stats.on_miss(sig, expected)
                    try:
                        compiled = self.lower_signature(sig).compile(device=device)
                    except Exception as e:  # the user sees their frames, not purejit's
                        errors.filter_traceback(e, config.read("traceback_filtering"))
                        raise
                    self.stats.on_compiled(compiled)
                    self.cache[key] = compiled
                    return compiled
        self.stats.hits += 1
        return compiled

    def __call__(self, *args, **kwargs):
        return self._dispatch(args, kwargs)[0]

    def _dispatch(self, args: tuple, kwargs: dict):
        """purejit's Python dispatch: `(outputs, the Compiled that ran or None, the purejit
        Arrays / NumPy arrays it ran on or None)`."""
        trace = current_trace()
        if trace is not eval_trace or config.jit_disabled:
            if type(trace) is JitTrace and self._buckets is None and not config.jit_disabled:
                # under an outer jit: one `call` op (JAX's jit_p); the passes inline it
                return self._staged_call(args, kwargs), None, None
            # under another transformation, or disabled: run inline (the trace records it)
            return self.fun(*args, **kwargs), None, None
        if self._fast_context is not config.trace_context:  # x64 or precision changed
            self._fast.clear()
            # this function's traces as a call inside other traces, per signature
        self.callees = Callees()
        self._fast_context = config.trace_context
        if not kwargs and self._fast_ok and not dispatch_key():
            # fast path: positional purejit Arrays and NumPy arrays (in plain tuples, lists
            # and dicts) whose tree, shapes, dtypes and weak types exactly match a compiled
            # signature (see `Compiled.fast_key_for`)
            flat = fast_flatten(args)
            if flat is not None:
                compiled = self._fast.get(flat[0])
                if compiled is not None:
                    out = compiled.call_fast(flat[1])
                    if out is not ELSEWHERE:
                        self.stats.hits += 1
                        if float_checks.STATE[0] or float_checks.STATE[1]:
                            self._check_floats(out, args, kwargs)
                        return out, compiled, flat[1]
        if self._buckets is not None:
            return self._buckets.call(self, self.spec.signature(args, kwargs)), None, None
        # NumPy leaves are not copied yet: one that goes into a stack is copied once, into it
        sig = self.spec.signature(args, kwargs, borrow=True)
        try:
            compiled = self.compile_signature(sig)
            if self._fast_ok and not kwargs and not dispatch_key():
                key = compiled.fast_key_for(args, sig.leaves, sig.avals)
                if key is not None:
                    self._fast[key] = compiled
                    if compiled.stacked:
                        self._python_calls()
            sig.own(compiled.stacked_leaves)  # the others copied, as `as_array` does
            out = compiled.run_arrays(sig.leaves, sig.avals, borrowed=sig.borrowed)
        finally:
            sig.own()  # none left holding the caller's arrays (an error on the way, say)
        if float_checks.STATE[0] or float_checks.STATE[1]:  # debug_nans / debug_infs
            self._check_floats(out, args, kwargs)
        return out, compiled, sig.leaves

    def _check_floats(self, out, args: tuple, kwargs: dict):
        """debug_nans / debug_infs: on a NaN (Inf) among the outputs, run the function again
        op by op so the error names the op that made it (JAX's de-optimised rerun)."""
        found = float_checks.problem(tree_util.tree_leaves(out))
        if found is None:
            return
        where = f"the outputs of jit({self.__name__})"
        saved = config.jit_disabled
        config.set_disable_jit(True)
        try:
            self.fun(*args, **kwargs)
        except FloatingPointError as e:
            e.add_note(f"found in {where}, then located by running it op by op")
            raise
        finally:
            config.set_disable_jit(saved)
        raise FloatingPointError(
            f"{float_checks.message(where, found[1])} (output {found[0]}; running it op by "
            "op made none, so XLA's optimised program differs there)"
        )

    def _staged_call(self, args: tuple, kwargs: dict):
        """This function as one `call` op of the current jit trace: traced at the
        arguments' abstract values into a function of its own (values it closes over from
        the outer trace become trailing operands), its outputs rebuilt as it returned them."""
        sig = self.spec.signature(args, kwargs)
        fn, captures, weak, out_tree = self.callees.trace(self.config, sig)
        operands = [*sig.leaves, *captures]
        outs = bind("call", *operands, regions=[fn], callee=self.__name__, weak=weak)
        return out_tree.unflatten(outs)

    def _cpp_cache_miss(self, *args, **kwargs):
        """jaxlib's C++ dispatch calls this on a miss: purejit's Python dispatch, and the
        data that lets C++ run the next calls of this signature (or None)."""
        leaves = None if kwargs else cpp_dispatch.input_leaves(args)
        out, compiled, ran_on = self._dispatch(args, kwargs)
        fastpath = None
        if leaves is not None and compiled is not None:
            fastpath = cpp_dispatch.fastpath_for(self, compiled, ran_on, leaves, out)
        return out, fastpath, False

    def derived(self, key, make: Callable) -> "Jitted | None":
        """`jit(make(self.fun))` for `key` (a transformation and its options), made once and
        kept with this function (same passes and compiler options), so that a transformation
        called outside jit (`grad(jit(f))`, `vmap(jit(f))`) runs one cached executable. None
        when it should not: jit disabled, or static arguments, donation, buckets or
        shardings, which the derived program would have to restate."""
        c = self.config
        if (
            config.jit_disabled
            or self.spec.has_static
            or c.donate_argnums
            or c.donate_argnames
            or c.in_shardings is not None
            or c.out_shardings is not None
            or self._buckets is not None
        ):
            return None
        table = self.__dict__.setdefault("_derived", {})
        got = table.get(key)
        if got is None:
            got = table[key] = jit(make(self.fun), passes=c.passes, compiler_options=c.options)
        return got

    def clear_cache(self):
        self.cache.clear()
        self._fast.clear()
        self.callees.clear()
        for derived in self.__dict__.get("_derived", {}).values():
            derived.clear_cache()
        if self._cpp is not None:
            self._cpp._clear_cache()
            if getattr(type(self), "_cpp_base", None) is None:  # no program with stacks now
                self.__class__ = _cpp_class(type(self), cpp_dispatch.entry(self, self._cpp))

    def _python_calls(self) -> None:
        """Calls come to purejit's Python dispatch directly from now on, not through
        jaxlib's C++ dispatch: done once a program with stacks of leaves is on the Python
        fast path. C++ never runs such a program (`cpp_dispatch.fastpath_for`), so each
        of its calls would go through C++'s signature of every leaf only to miss to Python
        (0.1 ms a call at 97 leaves); the function's other signatures then take Python's
        fast path too. `clear_cache` gives the C++ dispatch back."""
        base = getattr(type(self), "_cpp_base", None)
        if base is not None:
            self.__class__ = base

    def __repr__(self):
        return f"<purejit.jit {self.__name__}>"


class _CacheSlot:
    """One signature's entry in a jitted function's cache, for `Lowered.compile`: it returns
    the executable there, or compiles and puts it there, as JAX's ahead-of-time compile
    fills the cache its calls read. Holds the function weakly (the cache's programs hold
    their `Lowered`)."""

    def __init__(self, jitted: Jitted, key, device):
        self._jitted = weakref.ref(jitted)
        self.key = key
        self.device = device
        # what the key was made in: a compile in another context (another default device,
        # x64) makes another program than the calls in this one run
        self.context = (config.trace_context, dispatch_key())

    def compile(self, compile_now: Callable, device):
        """`compile_now(device)`, through the cache when `device` and the context are the
        ones the calls of this signature run in."""
        jitted = self._jitted()
        here = (config.trace_context, dispatch_key())
        if jitted is None or device != self.device or here != self.context:
            return compile_now(device)
        with jitted.stats.compile_lock(self.key):
            compiled = jitted.cache.get(self.key)
            if compiled is None:
                compiled = compile_now(device)
                jitted.stats.on_compiled(compiled)
                jitted.cache[self.key] = compiled
        return compiled


def _cpp_class(base: type, dispatcher) -> type:
    """A subclass of `base` whose instances are called through `dispatcher` (no Python
    frame on the way: Python looks `__call__` up on the type)."""
    attrs = {"__call__": staticmethod(dispatcher), "__slots__": (), "_cpp_base": base}
    return type(base.__name__, (base,), attrs)


def jit(
    fun: Callable | None = None,
    *,
    static_argnums: int | Sequence[int] | None = (),
    static_argnames: str | Sequence[str] | None = (),
    donate_argnums: int | Sequence[int] | None = (),
    donate_argnames: str | Sequence[str] | None = (),
    passes=None,
    compiler_options=None,
    in_shardings=None,
    out_shardings=None,
    buckets=None,
    bucket_overflow: str = "error",
    recompile_warn_after: int | None = None,
    recompile_raise: bool | None = None,
    keep_unused: bool = False,
    device=None,
    backend: str | None = None,
    inline=False,
    abstracted_axes=None,
):
    """Compile `fun` with purejit: trace once per abstract signature, run through XLA.

    Args:
        fun: a pure function of arrays (and pytrees of arrays).
        static_argnums: positions of arguments whose Python values are baked into the
            program (they must be hashable); a new value recompiles.
        static_argnames: the same, by keyword name.
        donate_argnums: positions of arguments (whole pytrees) whose buffers XLA may reuse
            for outputs of the same shape and dtype; the donated arrays are deleted after
            the call. A donated argument no output can reuse gives a warning.
        donate_argnames: the same, by keyword name.
        passes: a `purejit.passes.Pipeline` to use instead of the default one.
        compiler_options: a dict: `disable_passes` (names), `dump_dir` (IR after every
            pass), `fusion` ("xla", default: XLA fuses the flat program; "purejit": purejit's
            fusion groups become XLA's kernels where the back end allows, see
            `purejit/compiler/options.py`).
        in_shardings: a `purejit.sharding.NamedSharding` (or None) per positional argument,
            as a pytree prefix; the program is compiled for the mesh's devices and XLA's SPMD
            partitioner inserts the communication. Arguments are resharded to fit.
        out_shardings: the same for the outputs (default: replicated, or the out_specs of
            a shard_map that returns them directly).
        buckets: `{argument name or position: {axis: [sizes...]}}`: pad that axis with
            zeros up to the next size, run that size's executable, slice the outputs back
            (only where purejit proves each output row depends on the same input row).
        bucket_overflow: "error" (default) for inputs above the largest bucket, or "exact"
            to compile their exact size.
        recompile_warn_after: warn once after this many recompilations, naming the churning
            dimension (default `config.recompile_warn_after`, 8; 0 disables).
        recompile_raise: raise `purejit.compiler.RecompilationError` instead of warning.
        keep_unused, device, backend, inline, abstracted_axes: JAX's keywords (see
            `_jax_keywords`): purejit keeps every argument and inlines nested jits already;
            `device` / `backend` name the default one; anything else raises.
    Returns:
        A callable with `.lower(*args)` for ahead-of-time use.
    """
    _jax_keywords(keep_unused, device, backend, inline, abstracted_axes)
    options = JitOptions(
        static_argnums=() if static_argnums is None else static_argnums,
        static_argnames=() if static_argnames is None else static_argnames,
        donate_argnums=() if donate_argnums is None else donate_argnums,
        donate_argnames=() if donate_argnames is None else donate_argnames,
        passes=passes,
        compiler_options=compiler_options,
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        buckets=buckets,
        bucket_overflow=bucket_overflow,
        recompile_warn_after=recompile_warn_after,
        recompile_raise=recompile_raise,
    )
    if fun is None:
        return functools.partial(Jitted, options=options)
    return Jitted(fun, options)


def _jax_keywords(keep_unused, device, backend, inline, abstracted_axes) -> None:
    """Check JAX's jit keywords that purejit either honours by construction or refuses.

    `keep_unused` and `inline` change no result: purejit's executables take every argument,
    and a jit called inside another trace is inlined into it (JAX's `inline=True`); an
    `Inline` mode that keeps the call for XLA is refused (`check_inline`)."""
    del keep_unused
    check_inline(inline)
    if abstracted_axes is not None:
        raise NotImplementedError(
            "jit(abstracted_axes=...): purejit compiles static shapes only; use "
            "jit(buckets=...) to share executables across sizes"
        )
    if device is not None or backend is not None:
        from purejit.backend import pjrt

        default = pjrt.default_device()
        names = {default.platform, "gpu" if pjrt.is_gpu() else default.platform}
        if (device is not None and device != default) or (
            backend is not None and backend not in names
        ):
            raise NotImplementedError(
                f"jit(device={device!r}, backend={backend!r}): purejit's jit runs on the "
                f"default device ({default}); put the arguments on the device you want with "
                "purejit.device_put (jit runs where its arguments are committed)"
            )


def explain(f, *args, **kwargs) -> Explanation:
    """Explain how purejit compiles `f` for these arguments.

    Args:
        f: a function or a `purejit.jit`-wrapped one (its options, e.g.
            `compiler_options={"fusion": "purejit"}`, are used).
        *args, **kwargs: example arguments (arrays or anything with shape and dtype).
    Returns:
        An `Explanation`; `print()` it for the report, or read its fields (`stages`,
        `kernels`, `groups`, `xla_kernels`, `xla_cost`, `differences`).
    """
    jitted = f if isinstance(f, Jitted) else jit(f)
    with transform_notes.collecting() as transformed:  # what vmap did to control flow
        lowered = jitted.lower(*args, **kwargs)
    ex = explain_lowered(lowered)
    ex.transforms = transformed
    return ex


__all__ = ["Compiled", "Explanation", "Jitted", "Lowered", "disable_jit", "explain", "jit"]
