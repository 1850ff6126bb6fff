"""`lower()`: one call's signature to a StableHLO module, in one straight line.

    trace (purejit.tracing) -> passes (purejit.passes) -> donation and SPMD layout plans
    -> emit (purejit.backend) -> `Lowered`; `Lowered.compile()` -> `Compiled`.

Nothing here calls back into the user API: the function, its options and the call's
`CallSignature` come in as arguments.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from purejit.backend import cudnn_fmha, fusion, pjrt, row_views, stablehlo
from purejit.backend.lowering import callback
from purejit.compiler import cache as compile_cache
from purejit.compiler import calibration
from purejit.compiler import donation as dn
from purejit.compiler import host_loop, spmd
from purejit.compiler.compiled import Compiled
from purejit.compiler.explain import explain_lowered
from purejit.compiler.options import CompilerOptions
from purejit.compiler.signature import CallSignature
from purejit.compiler.stacked_params import stack_parameters
from purejit.config import config
from purejit.ir import Function, print_function
from purejit.passes import Pipeline
from purejit.passes.attention_sharding import ShardAttention
from purejit.runtime.array import Array
from purejit.tracing import ConcreteArray, ShapedArray, Tracer, context, trace_to_function
from purejit.tree_util import PyTreeDef, tree_flatten, tree_paths, tree_unflatten


@dataclass(frozen=True)
class JitConfig:
    """What `lower` needs to know about a jitted function besides the call."""

    fun: Callable
    name: str
    options: CompilerOptions = field(default_factory=CompilerOptions)
    passes: Any = None  # a purejit.passes.Pipeline replacing the default one
    donate_argnums: frozenset = frozenset()
    donate_argnames: frozenset = frozenset()
    in_shardings: Any = None
    out_shardings: Any = None
    # the attention rewrite (`purejit.fused_attention`: it names purejit.nn's softmax rules,
    # so the user API passes it in): `jit_pass(options)` heads the default pipeline and
    # `collecting()` gathers what it does inside differentiations
    attention: Any = None


@dataclass(frozen=True)
class ArgInfo:
    """One argument leaf of a lowered program: its abstract value and whether it is donated
    (JAX's `jax.stages.ArgInfo`)."""

    _aval: ShapedArray
    donated: bool

    @property
    def shape(self) -> tuple:
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype


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
    donation: Any = None  # a DonationPlan when arguments are donated
    layout: Any = None  # a purejit.compiler.spmd.ProgramLayout for several devices
    xla_disable_passes: tuple = ()  # XLA passes off when purejit's fusion groups are kernels
    tail: Any = None  # the deferred reporting passes (a Pipeline), if any
    residuals: list = field(default_factory=list)  # purejit.passes.remat.Record per grad
    attention: list = field(default_factory=list)  # attention fused/refused under grad
    # a rolled program's stacks of leaves passed as one parameter each (`stacked_params`):
    # the plan from the user's leaves to the entry's parameters, and per leaf its donation
    stack_plan: Any = None
    leaf_donated: tuple = ()
    # `roll_layers="host"`: the split into programs run from the host, or why it was refused
    # (a `host_loop.HostRoute`; None for other programs)
    host_route: Any = None
    # where a call of the jitted function with these arguments keeps its executable (set by
    # `jit(f).lower`): `compile` fills it, so the first call does not compile again
    cache_slot: Any = field(default=None, repr=False)
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

    @functools.cached_property
    def has_callbacks(self) -> bool:
        """Whether the emitted program calls back into Python (read per call that misses
        jaxlib's C++ dispatch: one walk of the program, once)."""
        return bool(callback.callback_keys(self.emitted))

    @property
    def fn(self) -> Function:
        """The optimised purejit IR, after every pass of the pipeline."""
        return self._complete()[0]

    @property
    def records(self) -> list:
        """One `PassRecord` per pass run (the first, "trace", is the input)."""
        return self._complete()[1]

    @property
    def args_info(self):
        """The arguments as the caller passed them ((args, kwargs)), each leaf an `ArgInfo`."""
        donated = self.donation.donated if self.donation is not None else ()
        if self.stack_plan is not None:
            donated = self.leaf_donated
        infos = [ArgInfo(a, bool(donated[i]) if i < len(donated) else False)
                 for i, a in enumerate(self.in_avals)]  # fmt: skip
        return tree_unflatten(self.in_tree, infos)

    def ir(self) -> str:
        """The optimised purejit IR as text."""
        return print_function(self.fn)

    def as_text(self) -> str:
        """The StableHLO module handed to XLA."""
        return self.module

    def compiler_ir(self, dialect: str | None = None):
        """The module handed to XLA as JAX gives it: "stablehlo" (default) an MLIR module,
        "hlo" an XLA computation (`.as_hlo_text()`)."""
        from purejit.backend import real_jax

        return real_jax.compiler_ir(self.module, dialect or "stablehlo")

    def explain(self):
        """What the compiler did, pass by pass, and XLA's kernels (`purejit.explain`)."""

        return explain_lowered(self)

    def compile(self, *, device=None) -> Compiled:
        """Compile the module with XLA (through the persistent cache when it is on).

        As in JAX, the executable of `jit(f).lower(*args).compile()` is the one the calls
        `jit(f)(*args)` of the same signature run (and a second `compile` returns it); one
        compiled for another device than such a call's is kept out of that cache.

        Args:
            device: the device a one-device program runs on (default: the default device);
                `jit` passes the device its arguments are committed to.
        """
        if self.cache_slot is not None:
            return self.cache_slot.compile(self._compile, device)
        return self._compile(device)

    def _compile(self, device) -> Compiled:
        t0 = time.perf_counter()
        hit, host = False, None
        if self.host_route is not None and self.host_route.split is not None:
            # programs of their own, chained; None when XLA refused one (run rolled)
            host = host_loop.compile(self, device)
        if host is not None:
            hit = host.cache_hit
        elif self.layout is not None:  # SPMD: one program for every device of the mesh
            if self.has_callbacks:
                raise NotImplementedError(
                    f"{self.name}: debug.print / debug.callback / pure_callback in a program "
                    "over several devices (in_shardings, out_shardings) are not supported yet"
                )
            exe = self._recovering(lambda: self.layout.compile(self.module, self.emitted), None)
        elif self.xla_disable_passes:  # purejit's fusion groups as kernels
            exe, hit = fusion.compile_realised(self, compile_cache.compile)
        else:
            exe, hit = self._compile_one_device(device)
        seconds = time.perf_counter() - t0
        self.timings["cache_load" if hit else "xla_compile"] = seconds
        if not hit:
            log_slow_compile(self.name, seconds, self.layout is None)
        if config.read("jit_log_compiles"):  # JAX's jax_log_compiles, at WARNING as JAX's
            how = "loaded from the persistent cache" if hit else "compiled by XLA"
            logger.warning("purejit: %s %s in %.3f s", self.name, how, seconds)
        compiled = host or Compiled(self, exe)
        compiled.cache_hit = hit
        return compiled

    def _compile_one_device(self, device):
        def compile_module():
            return compile_cache.compile(
                self.module,
                self.emitted.param_types,
                self.emitted.result_types,
                device=device,
                host_callbacks=callback.host_callbacks(self.emitted),
                write_behind=True,  # the first call does not wait for serialising
            )

        return self._recovering(compile_module, device)

    def _recovering(self, compile_module, device):
        """`compile_module()`; when XLA refuses a module with cuDNN attention, the kinds of
        call it refuses alone are decomposed and the module emitted and compiled again."""
        calls = getattr(self, "attention_calls", None)
        try:
            return compile_module()
        except Exception as e:  # noqa: BLE001 - XLA's refusal, whatever its type
            if calls is None or not calls.calls:
                raise
            # XLA refused a module with cuDNN attention: decompose the kinds it refuses alone
            probe = lambda text, ins, outs: pjrt.compile(text, ins, outs, device=device)  # noqa: E731
            if not cudnn_fmha.recover(calls, e, stablehlo.emit, probe):
                raise
            with cudnn_fmha.emission(enabled=calls.enabled, manual=calls.manual,
                                     platform=calls.platform, target=calls.target):  # fmt: skip
                self.module = self.reemit()
            return compile_module()


logger = logging.getLogger("purejit")


def _attention_injection() -> dict:
    """The fault-injection switch of fused attention (`PUREJIT_ATTENTION_INJECT_CUDA=1`,
    tests only): cuDNN calls are emitted on any device (XLA then refuses them on a CPU)."""
    if os.environ.get("PUREJIT_ATTENTION_INJECT_CUDA", "") not in ("1", "true"):
        return {}
    return {"platform": "cuda", "target": cudnn_fmha.Target(90800, (9, 0), "injected")}


def log_slow_compile(name: str, seconds: float, cacheable: bool) -> bool:
    """Log one line when XLA took `slow_compile_log_s` seconds or more to compile `name`.

    Args:
        name: the jitted function's name.
        seconds: how long XLA's compile took.
        cacheable: whether the persistent cache can hold this program (single device).
    Returns:
        whether the line was logged (the option `slow_compile_log_s`, None or 0 silences it).
    """
    limit = config.read("slow_compile_log_s")
    if not limit or seconds < limit:
        return False
    if not cacheable:
        hint = "programs for several devices are not kept in the persistent cache"
    elif config.read("cache_dir"):
        hint = "it is now in the persistent cache, so the next process loads it"
    else:
        hint = (
            "the persistent cache is off; purejit.config.update('cache_dir', PATH) would "
            "let the next process load it"
        )
    logger.warning("purejit: compiling %s took %.1f s (%s)", name, seconds, hint)
    return True


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


_RETURNABLE = (Tracer, ConcreteArray, np.ndarray, np.generic, int, float, complex)


def concrete_input(x) -> Array | None:
    """The array that `x`, an input tracer of a jit trace in progress in this thread,
    stands for in the call being compiled; None for any other value or when the call had no
    arrays (`lower` on shapes). What a transformation that measures (vmap's "auto") runs on."""
    return context.concrete_input(x)


def trace(jc: JitConfig, sig: CallSignature, avals: Sequence[ShapedArray] | None = None):
    """Trace `jc.fun` for `sig` (at `avals` if given). Returns `(Traced, out_tree)`."""
    out_tree_box = []
    concrete = avals is None and all(type(x) is Array for x in sig.leaves)

    def flat_fun(*tracers):
        if concrete:
            known.update({id(t): (t, x) for t, x in zip(tracers, sig.leaves)})
        args, kwargs = sig.rebuild(tracers)
        out = jc.fun(*args, **kwargs)
        leaves, out_tree = tree_flatten(out)
        for p, x in zip(tree_paths(out_tree, "output"), leaves):
            if not isinstance(x, _RETURNABLE):
                raise TypeError(
                    f"{jc.name}: {p} has type {type(x).__name__}, not an array. A "
                    "jitted function must return a pytree of arrays (tuples, lists, "
                    "dicts, None, namedtuples, registered nodes)."
                )
        out_tree_box.append(out_tree)
        return leaves

    # the arrays behind the input tracers and the remat settings are this thread's context
    with context.concrete_inputs() as known, context.remat_settings(jc.options.remat_settings()):
        traced = trace_to_function(flat_fun, sig.avals if avals is None else avals, name=jc.name)
    return traced, out_tree_box[0]


def lower(jc: JitConfig, sig: CallSignature, stats=None) -> Lowered:
    """Trace, optimise and emit `jc.fun` for the call `sig`.

    Args:
        jc: the jitted function and its options.
        sig: the call's signature (its `avals` are what the program is compiled for).
        stats: a `CacheStats` whose trace counter to bump, or None.
    Returns:
        A `Lowered`, ready to `compile()`.
    """
    # tracing and the passes allocate many small objects that reference counting
    # frees; the cyclic collector's passes over them cost about a tenth of lowering
    with _gc_paused():
        return _lower(jc, sig, stats)


def _lower(jc: JitConfig, sig: CallSignature, stats) -> Lowered:
    t0 = time.perf_counter()
    # fused attention follows the compiler option (purejit.config's when not given)
    fused = jc.options.attention_enabled()
    injection = _attention_injection()
    per_device = False
    if jc.in_shardings is not None or jc.out_shardings is not None:
        # XLA cannot partition cuDNN's attention call: a partitioned program fuses attention
        # only where each op is proved to run per device on a split of its batch
        # (`passes/attention_sharding.py`), so the rewrite runs only where that call can be
        # emitted; repeated layers stay unrolled until the many-GPU steps are measured no
        # slower rolled (and remat's automatic plan is off unless forced:
        # `passes.remat.over_devices`)
        per_device = fused and cudnn_fmha.may_emit(
            injection.get("platform"), injection.get("target")
        )
        options = replace(jc.options, roll_layers=False, partitioned=True)
        jc = replace(jc, options=options if per_device else replace(options, fused_attention=False))
    opt = _optimise(jc, sig, stats, t0)
    t2 = time.perf_counter()
    layout = _layout(jc, sig, opt.fn, opt.out_tree)
    if layout is not None and per_device:
        opt = _attention_per_device(jc, sig, stats, layout, opt)
        t2 = time.perf_counter()
        layout = _layout(jc, sig, opt.fn, opt.out_tree)
    fn, records, traced, out_tree, tail = opt.fn, opt.records, opt.traced, opt.out_tree, opt.tail
    paths = sig.paths
    mask = _donation_mask(jc, sig)
    plan = None
    if layout is None and jc.options.stacks_params():
        donated = tuple(mask or [False] * len(fn.params))
        fn, plan = stack_parameters(fn, donated, row_views.alignment())
    donation = _donation(jc, fn, mask, paths, plan)
    host = None
    if layout is None and jc.options.host_loop():
        host = host_loop.plan(fn, donation, jc.options)
    if layout is not None and tail is not None:  # SPMD programs take every pass now
        fn, more = tail.run(fn)
        records, tail = records + more[1:], None
    arg_attrs = donation.arg_attrs() if donation else None
    xla_off = ()
    # a partitioned program emits cuDNN's call only inside manual computations (shard_map
    # bodies and the per-device attention above), which run per device
    manual = None
    if layout is not None:
        manual, fused = fused, False
    with cudnn_fmha.emission(enabled=fused, manual=manual, **injection) as attention_calls:
        if layout is not None:
            module = layout.emit(fn, arg_attrs=arg_attrs)
        elif host is not None and host.split is not None:
            module = host.emit()
        else:  # the compiler options decide how fusion groups reach XLA
            module, xla_off = jc.options.emit(fn, arg_attrs=arg_attrs)
    t3 = time.perf_counter()
    lowered = Lowered(
        jc.name,
        traced.fn,
        fn,
        records,
        module,
        sig.tree,
        list(sig.avals),
        out_tree,
        traced.out_avals,
        {**opt.timings, "emit": t3 - t2},
        paths,
        donation,
        layout,
        xla_off,
        tail,
    )
    lowered.residuals = opt.residuals
    lowered.host_route = host
    if plan is not None:
        lowered.stack_plan = plan
        lowered.leaf_donated = tuple(bool(d) for d in (mask or [False] * plan.n_leaves))
    lowered.attention = opt.reports
    lowered.attention_calls = attention_calls
    if layout is not None:
        lowered.reemit = lambda: layout.emit(fn, arg_attrs=arg_attrs)
    else:
        lowered.reemit = lambda: jc.options.emit(fn, arg_attrs=arg_attrs)[0]
    return lowered


class _Optimised(NamedTuple):
    """A traced program after the pipeline (`_optimise`)."""

    fn: Function  # the optimised program
    records: list  # what each pass did
    traced: object  # the trace (`traced.fn`: the program as traced)
    out_tree: PyTreeDef
    tail: object  # the passes left for later (purejit's fusion and buffer plans), or None
    timings: dict  # seconds: "trace", "passes", "calibration"
    residuals: list  # what each differentiation saved
    reports: list  # each attention fused or refused, for explain


def _optimise(jc: JitConfig, sig: CallSignature, stats, t0: float) -> _Optimised:
    """Trace `jc.fun` for `sig` and run the pipeline."""
    # what each differentiation saved and each attention fused or refused, for explain
    attention = jc.attention.collecting() if jc.attention else contextlib.nullcontext([])
    with context.collecting_remat_records() as residuals, attention as fused_reports:
        traced, out_tree = trace(jc, sig)
    t1 = time.perf_counter()
    if stats is not None:
        stats.traces += 1
    first = jc.attention.jit_pass(jc.options) if jc.attention is not None else None
    pipeline = jc.options.pipeline(jc.passes, first)
    tail = None
    if jc.options.capability() is None:
        # XLA fuses the flat program and plans its buffers: purejit's own fusion and
        # buffer plans only report, so they run when someone reads them
        pipeline, tail = pipeline.split(("fusion", "buffer_assignment"))
    # the collective-matmul cost model's inputs: measured at the first `auto` compile on a
    # device kind, so they count in this call's figures ("calibration", inside "passes")
    timings = {"trace": t1 - t0}
    pipeline = calibration.calibrate(pipeline, timings, traced.fn)
    # the entry is encoded while XLA compiles (`write_behind`)
    fn, records = compile_cache.run_pipeline(pipeline, traced.fn, write_behind=True)
    timings["passes"] = time.perf_counter() - t1
    return _Optimised(fn, records, traced, out_tree, tail, timings, residuals, list(fused_reports))


def _attention_per_device(
    jc: JitConfig, sig: CallSignature, stats, layout, front: _Optimised
) -> _Optimised:
    """`front` with each attention op proved to follow a batch
    split run per device (`passes/attention_sharding.py`). When an op is refused and the
    rewrite fused hand-written attention, the program is traced again with the rewrite off,
    so attention the proof does not cover stays exactly as written (attention the user
    called explicitly is still run per device where proved); explain says why."""
    mesh = layout.mesh
    axes = tuple(
        tuple(ns.dims(p.type.rank)[0]) if p.type.rank else ()
        for ns, p in zip(layout.in_shardings, front.fn.params)
    )
    shard = ShardAttention(mesh.axis_names, tuple(mesh.mesh_shape), tuple(mesh.device_ids), axes)

    def run(opt: _Optimised):
        new, more = Pipeline([shard], verify_each=False).run(opt.fn)
        opt.timings["passes"] += more[-1].seconds
        return opt._replace(fn=new, records=opt.records + more[1:]), more[-1].report

    out, report = run(front)
    rewrote = any(e.get("fused") for e in front.reports) or any(
        r.name == "fuse_attention" and r.report.get("fused") for r in front.records
    )
    notes = []
    if report.get("refused") and rewrote:
        notes = [_sharding_note(e, False) for e in report["refused"]]
        notes[0]["reason"] += "; hand-written attention in this program is left as written"
        jc = replace(jc, options=replace(jc.options, fused_attention=False))
        out, report = run(_optimise(jc, sig, stats, time.perf_counter()))
    notes += [_sharding_note(e, True) for e in report.get("sharded", [])]
    notes += [_sharding_note(e, False) for e in report.get("refused", [])]
    out.reports.extend(notes)
    return out


def _sharding_note(entry: dict, split: bool) -> dict:
    """An `explain` attention entry for one op of a partitioned program."""
    note = {"where": "shardings", "fused": split, **entry}
    if not split:
        note["reason"] = (
            f"partitioned program: {entry['op']} does not run per device: " + (entry["reason"])
        )
    return note


def _layout(jc: JitConfig, sig: CallSignature, fn: Function, out_tree):
    """The SPMD layout of this program, None for one device."""
    what = f"{jc.name}: in_shardings"
    ins = spmd.leaf_shardings(jc.in_shardings, sig.tree.children[0], what)
    if ins is not None:  # keyword arguments take the default placement
        ins = ins + [None] * (len(fn.params) - len(ins))
    outs = spmd.leaf_shardings(jc.out_shardings, out_tree, f"{jc.name}: out_shardings")
    return spmd.plan_layout(fn, ins, outs)


def _donation_mask(jc: JitConfig, sig: CallSignature) -> list | None:
    """Per input leaf, whether it is donated (None when nothing is)."""
    if not jc.donate_argnums and not jc.donate_argnames:
        return None
    mask = sig.arg_mask(jc.donate_argnums, jc.donate_argnames)
    return mask if any(mask) else None


def _donation(jc: JitConfig, fn: Function, mask, paths, stacks=None):
    """The donation plan of `fn`'s parameters (None when nothing is donated); with a
    `StackPlan` `stacks`, a stacked parameter is donated when its leaves are (all or none:
    `stack_parameters` groups no others)."""
    if mask is None:
        return None
    if stacks is not None:
        groups = stacks.groups
        mask = [mask[i] if kind == "leaf" else groups[i].donated for kind, i in stacks.sources]
        paths = [
            paths[i]
            if kind == "leaf"
            else f"{paths[groups[i].leaves[0]]} (stacked with {len(groups[i].leaves) - 1} more)"
            for kind, i in stacks.sources
        ]
    plan = dn.plan_donation(fn.param_types, mask, fn.result_types)
    dn.warn_unusable(plan, fn.param_types, paths, jc.name)
    return plan
