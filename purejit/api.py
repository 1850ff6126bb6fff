"""`purejit.jit`, its AOT handles (`lower`, `compile`) and `disable_jit`.

One call: flatten the arguments, build the abstract signature (shapes, dtypes, weak types,
static arguments); on a cache miss trace to IR, run the pass pipeline, emit StableHLO and
compile with PJRT; then execute and unflatten the outputs.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from purejit import errors
from purejit.array import Array, as_array
from purejit.config import config
from purejit.core import ShapedArray, Tracer
from purejit.core import _stack as _core_stack
from purejit.eager import eval_trace as _eval_trace
from purejit.ir import Function, print_function
from purejit.tracing import trace_to_function
from purejit.tree_util import PyTreeDef, tree_flatten, tree_paths, tree_unflatten


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """Within this block, jitted functions run op by op (eagerly), for debugging."""
    prev = config.jit_disabled
    config._set_disable_jit(disable)
    try:
        yield
    finally:
        config._set_disable_jit(prev)


def _leaf_aval(x, path: str, fname: str) -> ShapedArray:
    if isinstance(x, Tracer):
        return x.aval
    try:
        return as_array(x).aval
    except (TypeError, OverflowError) as e:
        raise TypeError(
            f"{fname}: argument {path} of type {type(x).__name__} is not a valid array "
            f"({e}). Pass arrays or Python scalars, or mark it static with static_argnums / "
            "static_argnames."
        ) from None


@contextlib.contextmanager
def _gc_paused():
    """Pause Python's cyclic garbage collector (only if it was on) for the block."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


from purejit.recompile import CacheStats  # noqa: E402  (counters + miss reasons, issue 5)


@dataclass
class Lowered:
    """The result of `jit(f).lower(*args)`: purejit IR and StableHLO, not yet compiled.

    `emitted` is the IR the module was emitted from. Passes that only report (the fusion
    plan when XLA fuses, the buffer plan) run when `fn` or `records` is first read.
    """

    name: str
    traced: Function
    emitted: Function
    head_records: list
    module: str
    in_tree: PyTreeDef
    in_avals: list[ShapedArray]
    out_tree: PyTreeDef
    out_avals: list[ShapedArray]
    timings: dict = field(default_factory=dict)
    in_paths: list[str] | None = None  # the user's names of the input leaves, for errors
    donation: Any = None  # a purejit.donation.DonationPlan when arguments are donated
    layout: Any = None  # a purejit.sharding.ProgramLayout for programs over several devices
    xla_disable_passes: tuple = ()  # XLA passes off (fusion="purejit" realised, issue 8)
    tail: Any = None  # the deferred reporting passes (a Pipeline), if any
    _done: tuple | None = field(default=None, init=False, repr=False)  # (fn, records)

    def _complete(self) -> tuple:
        if self._done is None:
            fn, records = self.emitted, list(self.head_records)
            if self.tail is not None:
                t0 = time.perf_counter()
                fn, more = self.tail.run(fn)
                self.timings["deferred_passes"] = time.perf_counter() - t0
                records += more[1:]
            self._done = (fn, records)
        return self._done

    @property
    def fn(self) -> Function:
        """The optimised purejit IR, after every pass of the pipeline."""
        return self._complete()[0]

    @property
    def records(self) -> list:
        """One `PassRecord` per pass run (the first, "trace", is the input)."""
        return self._complete()[1]

    def ir(self) -> str:
        """The optimised purejit IR as text."""
        return print_function(self.fn)

    def as_text(self) -> str:
        """The StableHLO module handed to XLA."""
        return self.module

    def explain(self):
        """What the compiler did, pass by pass, and XLA's kernels (`purejit.explain`)."""
        from purejit.explain import explain_lowered

        return explain_lowered(self)

    def compile(self) -> "Compiled":

        t0 = time.perf_counter()
        hit = False
        if self.layout is not None:  # SPMD: one program for every device of the mesh
            exe = self.layout.compile(self.module, self.emitted)
        elif self.xla_disable_passes:  # purejit's fusion groups as kernels (issue 8)
            from purejit import compile_cache
            from purejit.backend import fusion

            exe, hit = fusion.compile_realised(self, compile_cache.compile)
        else:  # through the persistent cache when config cache_dir is set (issue 5)
            from purejit import compile_cache

            exe, hit = compile_cache.compile(
                self.module, self.emitted.param_types, self.emitted.result_types
            )
        self.timings["cache_load" if hit else "xla_compile"] = time.perf_counter() - t0
        compiled = Compiled(self, exe)
        compiled.cache_hit = hit
        return compiled


class Compiled:
    """A compiled jitted function for one signature: callable, with XLA's analyses."""

    def __init__(self, lowered: Lowered, exe):
        self.lowered = lowered
        self._exe = exe
        self._param_key = tuple((t.shape, t.dtype) for t in exe.param_types)
        self._single_output = lowered.out_tree.kind is None
        self._out_avals = list(lowered.out_avals)
        donation = getattr(lowered, "donation", None)
        # no donation to honour: the fast path may execute directly
        self._plain = donation is None or not donation.aliases

    def __call__(self, *args, **kwargs):
        leaves, tree = tree_flatten((args, kwargs))
        if tree != self.lowered.in_tree:
            raise TypeError(
                f"{self.lowered.name}: compiled for arguments {self.lowered.in_tree}, "
                f"called with {tree}"
            )
        paths = self.lowered.in_paths or tree_paths(tree, "args")
        for path, x, want in zip(paths, leaves, self.lowered.in_avals):
            got = _leaf_aval(x, path, self.lowered.name)
            if got.shape != want.shape or got.dtype != want.dtype:
                raise TypeError(
                    f"{self.lowered.name}: argument {path} is {got.type}, but this "
                    f"executable was compiled for {want.type}"
                )
        return self.run(leaves)

    def run(self, leaves: Sequence):
        arrays = [as_array(x) for x in leaves]
        return self.run_arrays(arrays, [a.aval for a in arrays])

    def run_arrays(self, arrays: Sequence[Array], avals: Sequence[ShapedArray]):
        """Execute on purejit Arrays whose avals were already checked against the signature.

        The hot path: purejit checks dtypes itself (PJRT would reinterpret bits silently)."""
        if self._param_key != tuple((a.shape, a.dtype) for a in avals):
            raise TypeError(
                f"{self.lowered.name}: arguments {[str(a.type) for a in avals]} do not match "
                f"the compiled parameters {[str(t) for t in self._exe.param_types]}"
            )
        donation = self.lowered.donation
        if donation is not None and donation.aliases:
            return self._run_donating(arrays, donation)
        return self._wrap(self._exe.execute_unchecked([a.buffer for a in arrays]))

    def _wrap(self, outs):
        results = [Array._from_buffer(o, a) for o, a in zip(outs, self._out_avals)]
        if self._single_output:
            return results[0]
        return tree_unflatten(self.lowered.out_tree, results)

    def _run_donating(self, arrays, donation):
        from purejit import donation as dn

        paths = self.lowered.in_paths or [f"#{i}" for i in range(len(arrays))]
        bufs = [a.buffer for a in arrays]
        dn.check_donated_inputs(arrays, donation, paths, self.lowered.name)
        outs = self._exe.execute_unchecked(bufs)
        dn.consume_donated(arrays, donation, paths, self.lowered.name)
        results = [Array._from_buffer(o, a) for o, a in zip(outs, self.lowered.out_avals)]
        if self._single_output:
            return results[0]
        return tree_unflatten(self.lowered.out_tree, results)

    def cost_analysis(self) -> dict:
        return self._exe.cost_analysis()

    def memory_analysis(self):
        return self._exe.memory_analysis()

    def as_text(self) -> str:
        """The optimised HLO that XLA compiled."""
        return self._exe.hlo_text()


class Jitted:
    """A function wrapped by `purejit.jit`."""

    def __init__(
        self,
        fun: Callable,
        *,
        static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (),
        donate_argnums: int | Sequence[int] = (),
        donate_argnames: str | Sequence[str] = (),
        passes=None,
        compiler_options=None,
        in_shardings=None,
        out_shardings=None,
        buckets=None,
        bucket_overflow: str = "error",
        recompile_warn_after: int | None = None,
        recompile_raise: bool | None = None,
    ):
        functools.update_wrapper(self, fun)
        from purejit.compile_options import CompilerOptions

        self.compiler_options = CompilerOptions.parse(compiler_options)
        self.in_shardings, self.out_shardings = in_shardings, out_shardings
        if not isinstance(getattr(self, "__name__", None), str):
            # functools.partial objects and callable instances have no __name__
            inner = getattr(fun, "func", None)
            self.__name__ = getattr(inner, "__name__", None) or type(fun).__name__
        self.fun = fun
        self.passes = passes
        self.stats = CacheStats()
        self._cache: dict[Any, Compiled] = {}
        self._fast: dict[tuple, Compiled] = {}
        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        params = list(self._sig.parameters) if self._sig else []
        # as in JAX, static_argnums and static_argnames imply each other where possible
        nums = set(nums) | {params.index(n) for n in names if n in params}
        names = set(names) | {params[i] for i in nums if 0 <= i < len(params)}
        self.static_argnums = frozenset(nums)
        self.static_argnames = frozenset(names)
        self._fast_ok = not self.static_argnums and not self.static_argnames
        from purejit.donation import normalize_donation

        self.donate_argnums, self.donate_argnames = normalize_donation(
            donate_argnums, donate_argnames, self._sig, self.static_argnums, self.static_argnames
        )
        # issue 5: shape buckets (purejit/buckets.py) and the recompilation trap guard
        self.recompile_warn_after, self.recompile_raise = recompile_warn_after, recompile_raise
        self._buckets = None
        if buckets is not None:
            from purejit.buckets import Buckets

            self._buckets = Buckets(buckets, bucket_overflow, self.__name__, self._sig)
            self._fast_ok = False  # every call must go through the padding

    def _split(self, args, kwargs):
        n = len(args)
        nums = {i + n if i < 0 else i for i in self.static_argnums}
        static, dyn_args, dyn_kwargs = [], [], {}
        for i, a in enumerate(args):
            if i in nums:
                static.append((i, a))
            else:
                dyn_args.append(a)
        for k, v in kwargs.items():
            if k in self.static_argnames:
                static.append((k, v))
            else:
                dyn_kwargs[k] = v
        for where, v in static:
            try:
                hash(v)
            except TypeError as e:
                raise ValueError(
                    f"{self.__name__}: static argument {where!r} has unhashable type "
                    f"{type(v).__name__} ({e}). Static arguments must be hashable: use a "
                    "tuple instead of a list, or pass arrays as non-static arguments."
                ) from None
        return tuple(static), dyn_args, dyn_kwargs

    def _signature(self, args, kwargs):
        static, dyn_args, dyn_kwargs = self._split(args, kwargs)
        leaves, tree = tree_flatten((tuple(dyn_args), dyn_kwargs))
        try:
            avals = [x.aval if isinstance(x, (Tracer, Array)) else as_array(x).aval for x in leaves]
        except (TypeError, OverflowError):
            # name the offending leaf by the user's parameter names: `params['w'][0]`
            paths = self._leaf_paths(tree, static, len(args))
            avals = [_leaf_aval(x, p, self.__name__) for x, p in zip(leaves, paths)]
        return static, leaves, tree, avals

    def _leaf_paths(self, tree: PyTreeDef, static, nargs: int) -> list[str]:
        """A readable path per dynamic leaf, rooted at the parameter names of `fun`."""
        static_pos = {k for k, _ in static if isinstance(k, int)}
        dyn_pos = [i for i in range(nargs) if i not in static_pos]
        params = list(self._sig.parameters.values()) if self._sig else []
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)

        var = next((k for k, p in enumerate(params) if p.kind == p.VAR_POSITIONAL), None)

        def pos_name(i):
            if var is not None and i >= var:  # def f(x, *rest): rest[0], rest[1], ...
                return f"{params[var].name}[{i - var}]"
            if i < len(params) and params[i].kind in positional:
                return params[i].name
            return f"args[{i}]"

        args_td, kwargs_td = tree.children
        out: list[str] = []
        for j, td in enumerate(args_td.children):
            out += tree_paths(td, pos_name(dyn_pos[j]))
        for k, td in zip(kwargs_td.aux, kwargs_td.children):
            out += tree_paths(td, k)
        return out

    def _rebuild(self, static, tree, leaves):
        dyn_args, dyn_kwargs = tree_unflatten(tree, leaves)
        args, it = [], iter(dyn_args)
        pos = dict((k, v) for k, v in static if isinstance(k, int))
        for i in range(len(dyn_args) + len(pos)):
            args.append(pos[i] if i in pos else next(it))
        kwargs = dict(dyn_kwargs)
        kwargs.update((k, v) for k, v in static if isinstance(k, str))
        return args, kwargs

    def lower(self, *args, **kwargs) -> Lowered:
        static, _, tree, avals = self._signature(args, kwargs)
        return self._lower(static, tree, avals)

    def _lower(self, static, tree, avals) -> Lowered:
        # tracing and the passes allocate many small objects that reference counting
        # frees; the cyclic collector's passes over them cost about a tenth of lowering
        with _gc_paused():
            return self._lower_now(static, tree, avals)

    def _lower_now(self, static, tree, avals) -> Lowered:

        out_tree_box = []

        def flat_fun(*tracers):
            args, kwargs = self._rebuild(static, tree, list(tracers))
            out = self.fun(*args, **kwargs)
            leaves, out_tree = tree_flatten(out)
            for p, x in zip(tree_paths(out_tree, "output"), leaves):
                if not isinstance(x, (Tracer, Array, np.ndarray, np.generic, int, float, complex)):
                    raise TypeError(
                        f"{self.__name__}: {p} has type {type(x).__name__}, not an array. A "
                        "jitted function must return a pytree of arrays (tuples, lists, "
                        "dicts, None, namedtuples, registered nodes)."
                    )
            out_tree_box.append(out_tree)
            return leaves

        t0 = time.perf_counter()
        traced = trace_to_function(flat_fun, avals, name=self.__name__)
        t1 = time.perf_counter()
        self.stats.traces += 1
        pipeline = self.compiler_options.pipeline(self.passes)
        tail = None
        if self.compiler_options.capability() is None:
            # XLA fuses the flat program and plans its buffers: purejit's own fusion and
            # buffer plans only report, so they run when someone reads them
            pipeline, tail = pipeline.split(("fusion", "buffer_assignment"))
        from purejit import compile_cache  # persistent pass cache when cache_dir is set

        fn, records = compile_cache.run_pipeline(pipeline, traced.fn)
        t2 = time.perf_counter()
        nargs = len(tree.children[0].children) + sum(isinstance(k, int) for k, _ in static)
        paths = self._leaf_paths(tree, static, nargs)
        donation = self._donation(fn, tree, static, nargs, paths)
        layout = self._layout(fn, tree, out_tree_box[0])
        if layout is not None and tail is not None:  # SPMD programs take every pass now
            fn, more = tail.run(fn)
            records, tail = records + more[1:], None
        arg_attrs = donation.arg_attrs() if donation else None
        xla_off = ()
        if layout is not None:
            module = layout.emit(fn, arg_attrs=arg_attrs)
        else:  # compiler_options decide how fusion groups reach XLA (issue 8)
            module, xla_off = self.compiler_options.emit(fn, arg_attrs=arg_attrs)
        t3 = time.perf_counter()
        return Lowered(
            self.__name__,
            traced.fn,
            fn,
            records,
            module,
            tree,
            avals,
            out_tree_box[0],
            traced.out_avals,
            {"trace": t1 - t0, "passes": t2 - t1, "emit": t3 - t2},
            paths,
            donation,
            layout,
            xla_off,
            tail,
        )

    def _layout(self, fn, tree, out_tree):
        """The SPMD layout (purejit.sharding) of this program, None for one device."""
        from purejit import sharding

        what = f"{self.__name__}: in_shardings"
        ins = sharding.leaf_shardings(self.in_shardings, tree.children[0], what)
        if ins is not None:  # keyword arguments take the default placement
            ins = ins + [None] * (len(fn.params) - len(ins))
        outs = sharding.leaf_shardings(
            self.out_shardings, out_tree, f"{self.__name__}: out_shardings"
        )
        return sharding.plan_layout(fn, ins, outs)

    def _donation(self, fn, tree, static, nargs, paths):
        """The donation plan for this signature (None when nothing is donated)."""
        if not self.donate_argnums and not self.donate_argnames:
            return None
        from purejit import donation as dn

        mask = dn.donated_leaves(tree, static, nargs, self.donate_argnums, self.donate_argnames)
        if not any(mask):
            return None
        plan = dn.plan_donation(fn.param_types, mask, fn.result_types)
        dn.warn_unusable(plan, fn.param_types, paths, self.__name__)
        return plan

    def __call__(self, *args, **kwargs):
        if _core_stack[-1] is not _eval_trace or config.jit_disabled:
            # inside another trace, or disabled: run inline (the outer trace records it)
            return self.fun(*args, **kwargs)
        if not kwargs and self._fast_ok:
            # fast path: positional purejit Arrays only, keyed on their avals (an exact
            # match of the compiled signature, so no further check is needed)
            try:
                fast_key = tuple([a.aval for a in args])
            except AttributeError:
                fast_key = None
            if fast_key is not None:
                compiled = self._fast.get(fast_key)
                if compiled is not None and all([type(a) is Array for a in args]):
                    self.stats.hits += 1
                    if compiled._plain:
                        outs = compiled._exe.execute_unchecked([a.buffer for a in args])
                        if compiled._single_output:
                            return Array._from_buffer(outs[0], compiled._out_avals[0])
                        return compiled._wrap(outs)
                    return compiled.run_arrays(args, fast_key)
        static, leaves, tree, avals = self._signature(args, kwargs)
        if self._buckets is not None:
            return self._buckets.call(self, static, leaves, tree, avals)
        key = (tree, tuple(avals), static)
        compiled = self._cache.get(key)
        if compiled is None:
            self.stats.on_miss(self, static, tree, avals)  # explains it; trap guard
            compiled = self._lower(static, tree, avals).compile()
            self.stats.on_compiled(compiled)
            self._cache[key] = compiled
            if self._fast_ok and not kwargs and all(type(a) is Array for a in args):
                self._fast[tuple(a.aval for a in args)] = compiled
        else:
            self.stats.hits += 1
        return compiled.run(leaves)

    def clear_cache(self):
        self._cache.clear()
        self._fast.clear()

    def __repr__(self):
        return f"<purejit.jit {self.__name__}>"


def jit(
    fun: Callable | None = None,
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
    donate_argnames: str | Sequence[str] = (),
    passes=None,
    compiler_options=None,
    in_shardings=None,
    out_shardings=None,
    buckets=None,
    bucket_overflow: str = "error",
    recompile_warn_after: int | None = None,
    recompile_raise: bool | None = None,
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
            `purejit/compile_options.py`).
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
        recompile_raise: raise `purejit.recompile.RecompilationError` instead of warning.
    Returns:
        A callable with `.lower(*args)` for ahead-of-time use.
    """
    options = dict(
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        donate_argnums=donate_argnums,
        donate_argnames=donate_argnames,
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
        return functools.partial(jit, **options)
    return Jitted(fun, **options)


__all__ = ["errors"]
