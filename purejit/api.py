"""`purejit.jit`, its AOT handles (`lower`, `compile`) and `disable_jit`.

One call: flatten the arguments, build the abstract signature (shapes, dtypes, weak types,
static arguments); on a cache miss trace to IR, run the pass pipeline, emit StableHLO and
compile with PJRT; then execute and unflatten the outputs.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from purejit import errors
from purejit.array import Array, as_array
from purejit.config import config
from purejit.core import ShapedArray, Tracer, current_trace
from purejit.eager import EvalTrace
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


@dataclass
class CacheStats:
    traces: int = 0
    compiles: int = 0
    hits: int = 0
    misses: int = 0


@dataclass
class Lowered:
    """The result of `jit(f).lower(*args)`: purejit IR and StableHLO, not yet compiled."""

    name: str
    traced: Function
    fn: Function
    records: list
    module: str
    in_tree: PyTreeDef
    in_avals: list[ShapedArray]
    out_tree: PyTreeDef
    out_avals: list[ShapedArray]
    timings: dict = field(default_factory=dict)

    def ir(self) -> str:
        """The optimised purejit IR as text."""
        return print_function(self.fn)

    def as_text(self) -> str:
        """The StableHLO module handed to XLA."""
        return self.module

    def compile(self) -> "Compiled":
        from purejit.backend import pjrt

        t0 = time.perf_counter()
        exe = pjrt.compile(self.module, self.fn.param_types, self.fn.result_types)
        self.timings["xla_compile"] = time.perf_counter() - t0
        return Compiled(self, exe)


class Compiled:
    """A compiled jitted function for one signature: callable, with XLA's analyses."""

    def __init__(self, lowered: Lowered, exe):
        self.lowered = lowered
        self._exe = exe
        self._param_key = tuple((t.shape, t.dtype) for t in exe.param_types)
        self._single_output = lowered.out_tree.kind is None

    def __call__(self, *args, **kwargs):
        leaves, tree = tree_flatten((args, kwargs))
        if tree != self.lowered.in_tree:
            raise TypeError(
                f"{self.lowered.name}: compiled for arguments {self.lowered.in_tree}, "
                f"called with {tree}"
            )
        for path, x, want in zip(tree_paths(tree, "args"), leaves, self.lowered.in_avals):
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
        outs = self._exe.execute_unchecked([a.buffer for a in arrays])
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
        passes=None,
    ):
        functools.update_wrapper(self, fun)
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
        paths = tree_paths(tree, "args")
        avals = [_leaf_aval(x, p, self.__name__) for x, p in zip(leaves, paths)]
        return static, leaves, tree, avals

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
        from purejit.backend import stablehlo
        from purejit.passes import Pipeline

        out_tree_box = []

        def flat_fun(*tracers):
            args, kwargs = self._rebuild(static, tree, list(tracers))
            out = self.fun(*args, **kwargs)
            leaves, out_tree = tree_flatten(out)
            for p, x in zip(tree_paths(out_tree, "output"), leaves):
                if not isinstance(x, (Tracer, Array, np.ndarray, np.generic, int, float, complex)):
                    raise TypeError(
                        f"{self.__name__}: {p} is a {type(x).__name__}, not an array. A "
                        "jitted function must return a pytree of arrays (tuples, lists, "
                        "dicts, None, namedtuples, registered nodes)."
                    )
            out_tree_box.append(out_tree)
            return leaves

        t0 = time.perf_counter()
        traced = trace_to_function(flat_fun, avals, name=self.__name__)
        t1 = time.perf_counter()
        self.stats.traces += 1
        pipeline = self.passes if self.passes is not None else Pipeline()
        fn, records = pipeline.run(traced.fn)
        t2 = time.perf_counter()
        module = stablehlo.emit(fn)
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
        )

    def __call__(self, *args, **kwargs):
        if config.jit_disabled or not isinstance(current_trace(), EvalTrace):
            # disabled, or inside another trace: run inline (the outer trace records it)
            return self.fun(*args, **kwargs)
        if not kwargs and self._fast_ok:
            # fast path: positional purejit Arrays only, keyed on their avals
            try:
                fast_key = tuple([a.aval for a in args])
            except AttributeError:
                fast_key = None
            if fast_key is not None:
                compiled = self._fast.get(fast_key)
                if compiled is not None and all(type(a) is Array for a in args):
                    self.stats.hits += 1
                    return compiled.run_arrays(args, fast_key)
        static, leaves, tree, avals = self._signature(args, kwargs)
        key = (tree, tuple(avals), static)
        compiled = self._cache.get(key)
        if compiled is None:
            self.stats.misses += 1
            compiled = self._lower(static, tree, avals).compile()
            self.stats.compiles += 1
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
    passes=None,
):
    """Compile `fun` with purejit: trace once per abstract signature, run through XLA.

    Args:
        fun: a pure function of arrays (and pytrees of arrays).
        static_argnums: positions of arguments whose Python values are baked into the
            program (they must be hashable); a new value recompiles.
        static_argnames: the same, by keyword name.
        passes: a `purejit.passes.Pipeline` to use instead of the default one.
    Returns:
        A callable with `.lower(*args)` for ahead-of-time use.
    """
    if fun is None:
        return functools.partial(
            jit, static_argnums=static_argnums, static_argnames=static_argnames, passes=passes
        )
    return Jitted(fun, static_argnums=static_argnums, static_argnames=static_argnames, passes=passes)


__all__ = ["errors"]
