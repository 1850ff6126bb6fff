"""The host loop: a rolled program run as programs chained from the host
(`compiler_options={"roll_layers": "host"}`).

A rolled loop keeps each layer's saved values in stacks, and XLA copies every one into its
row and back out (on a GPU a library call takes whole buffers: 459 copies, 3.5 ms of a 24 ms
step on an H200; docs/benchmarks/roll_layers_cpu.md, session 19). Here the rolled program
is split at its top-level scans (`passes/_segments.py`): each scan's body is one program,
compiled once and launched once per trip; the stretches between scans are programs of their
own. What a trip saves is a buffer of its own, as in the unrolled program, and the layers'
parameters are passed per trip as the caller's buffers: nothing is stacked.

A call runs the launches in order over a list of slots (the entry's arguments, constants
transferred at compile time, each launch's outputs), dropping each slot after its last
reader. Each layer's update after the backward loop runs in that layer's backward trip
where proved (`passes/_fold_rows.py`): its gradients die there. A donated argument is given
to the last program that reads it (that trip, or the update's glue program), so the new
parameters are written in place; the caller's Arrays are deleted after the call as
after any donating call. Calls take purejit's Python dispatch (jaxlib's C++ path runs one
executable).

A program the split cannot take (`Refused`) is emitted and run as the rolled program; the
reason is in the roll report `explain` prints (`HostRoute.report`).
"""

from __future__ import annotations

import operator
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from purejit.backend import cudnn_fmha, pjrt, stablehlo
from purejit.compiler import cache as compile_cache
from purejit.compiler import donation as dn
from purejit.compiler.compiled import Compiled
from purejit.passes._segments import Refused, Split, split
from purejit.runtime.array import Array, deleted_error_of
from purejit.tree_util import tree_unflatten


@dataclass
class HostRoute:
    """The host loop's plan for one program: the split (None when refused) and the report
    (`{"split": ...}` or `{"refused": reason}`); `modules`: each program's StableHLO."""

    split: Split | None
    report: dict
    modules: list[str] = field(default_factory=list)

    def emit(self) -> str:
        """Each program's module (donated parameters aliased to its outputs), kept in
        `modules`; returns them joined, for `Lowered.as_text`."""
        s = self.split
        donate = {L.program: L.donate for L in s.launches}
        self.modules = []
        for k, fn in enumerate(s.programs):
            attrs = None
            if donate.get(k):
                mask = [i in donate[k] for i in range(len(fn.params))]
                attrs = dn.plan_donation(fn.param_types, mask, fn.result_types).arg_attrs()
            self.modules.append(stablehlo.emit(fn, arg_attrs=attrs))
        return "\n".join(
            f"// host loop program {k} ({kind}, launched {self.launches_of(k)}x)\n{m}"
            for k, (kind, m) in enumerate(zip(s.kinds, self.modules))
        )

    def launches_of(self, k: int) -> int:
        return sum(L.program == k for L in self.split.launches)


def plan(fn, donation, options) -> HostRoute:
    """The host loop for `fn` (the optimised program), or its refusal with the reason."""
    if options.fusion != "xla":
        return HostRoute(None, {"refused": f"fusion={options.fusion!r} (the host loop "
                                           "takes XLA's own fusion only)"})  # fmt: skip
    aliased = set(donation.aliases) if donation is not None else set()
    try:
        s = split(fn, [i in aliased for i in range(len(fn.params))], options.host_layers_per_run)
    except Refused as e:
        return HostRoute(None, {"refused": str(e)})
    return HostRoute(s, {"split": s.report})


def compile(lowered, device) -> HostLoopCompiled | None:
    """Compile each program of `lowered.host_route` (in threads: XLA releases the GIL
    while it compiles) and return the callable. When XLA refuses a program that holds
    cuDNN attention calls (which the whole program's compile recovers from by decomposing
    them: `Lowered._recovering`), the route is refused with the reason, `lowered.module` is
    the whole rolled program again, and None is returned: the caller compiles that."""
    try:
        return _compile(lowered, device)
    except Exception as e:  # noqa: BLE001 - XLA's refusal, whatever its type
        calls = getattr(lowered, "attention_calls", None)
        if calls is None or not calls.calls:
            raise
        why = f"XLA refused a program of the split with cuDNN attention ({type(e).__name__})"
        lowered.host_route = HostRoute(None, {"refused": why})
        # the whole program, emitted as its first emission was (its compile then decomposes
        # the kinds of call XLA refuses: `Lowered._recovering`)
        settings = {"enabled": calls.enabled, "manual": calls.manual,
                    "platform": calls.platform, "target": calls.target}  # fmt: skip
        with cudnn_fmha.emission(**settings) as again:
            lowered.module = lowered.reemit()
        lowered.attention_calls = again
        return None


def _compile(lowered, device) -> HostLoopCompiled:
    route = lowered.host_route
    s = route.split
    # one compile per distinct module: two loops over one layer (two chains, or a model's
    # encoder and decoder of one shape) share their bodies' executables
    first: dict[str, int] = {}
    for k, text in enumerate(route.modules):
        first.setdefault(text, k)
    unique = sorted(set(first.values()))

    def one(k: int):
        fn = s.programs[k]
        return compile_cache.compile(
            route.modules[k], fn.param_types, fn.result_types, device=device, write_behind=True
        )

    workers = max(1, min(len(unique), os.cpu_count() or 1))
    if workers == 1:
        done = dict(zip(unique, map(one, unique)))
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="purejit-host-loop") as pool:
            done = dict(zip(unique, pool.map(one, unique)))
    exes = [done[first[text]][0] for text in route.modules]
    compiled = HostLoopCompiled(lowered, exes, device)
    compiled.cache_hit = all(h for _, h in done.values())
    return compiled


def _gatherer(ins: list[int]):
    """A function of the slots returning the list of those at `ins` (in C for two or more)."""
    if len(ins) >= 2:
        get = operator.itemgetter(*ins)
        return lambda slots: list(get(slots))
    return lambda slots: [slots[i] for i in ins]


class HostLoopCompiled(Compiled):
    """A rolled program run as its split's launches (module docstring). Like `Compiled`,
    callable on checked Arrays (`run_arrays`, `call_fast`); always on Python's dispatch
    (`stacked`: jaxlib's C++ dispatch runs one executable)."""

    def __init__(self, lowered, exes: list, device=None):
        s: Split = lowered.host_route.split
        self.lowered = lowered
        self.exes = exes
        # the program launched most (a loop's body): what `exe` names for code that reads one
        counts = [lowered.host_route.launches_of(k) for k in range(len(exes))]
        self.exe = exes[counts.index(max(counts))]
        self.cache_hit = False
        self.bucket_plan = None
        self._param_key = tuple((a.shape, a.dtype) for a in lowered.in_avals)
        self.single_output = lowered.out_tree.kind is None
        self.out_avals = list(lowered.out_avals)
        self.plain = False
        self.stacked = True  # purejit's Python dispatch only (see the class docstring)
        self.stacked_leaves = frozenset()
        self.stack_call = None
        self._placed = pjrt.several_devices()
        dev = exes[0].device if exes else device
        template: list[Any] = [None] * s.n_slots
        for slot, value in s.constants.items():
            template[slot] = pjrt.to_device(value, dev)
        self._template = template
        self._n_params = s.n_params
        self._results = list(s.results)
        # per launch: the executable, its arguments' gatherer, where its outputs go (one
        # slice: `split` numbers each launch's outputs consecutively) and what it frees
        self._launches = [
            (exes[L.program], _gatherer(L.ins), L.outs[0] if L.outs else 0,
             L.outs[-1] + 1 if L.outs else 0, L.free)
            for L in s.launches
        ]  # fmt: skip
        donation = lowered.donation
        self._donation = donation if donation is not None and donation.aliases else None

    def _fast_donated(self):
        """As `Compiled._fast_donated`: the entry's donated parameters (one leaf each)."""
        if self._placed:
            return None
        return self.lowered.donation.donated if self._donation is not None else ()

    def call_fast(self, leaves: list):
        return self._run([a if type(a) is Array else Array(host=a) for a in leaves])

    def run_arrays(self, arrays, avals, borrowed=()):
        if self._param_key != tuple((a.shape, a.dtype) for a in avals):
            raise TypeError(
                f"{self.lowered.name}: arguments {[str(a.type) for a in avals]} do not match "
                f"the compiled parameters {[str(a.type) for a in self.lowered.in_avals]}"
            )
        return self._run(list(arrays))

    def _run(self, arrays: list):
        lowered = self.lowered
        paths = lowered.in_paths or [f"#{i}" for i in range(len(arrays))]
        if self._donation is not None:
            dn.check_donated_inputs(arrays, self._donation, paths, lowered.name)
        slots = self._template.copy()
        bufs = [a.buffer for a in arrays]
        if self._placed:
            bufs = self.exes[0].on_my_device(bufs)
        slots[: self._n_params] = bufs
        del bufs
        try:
            for exe, gather, start, stop, free in self._launches:
                slots[start:stop] = exe.execute_unchecked(gather(slots))
                for s in free:
                    slots[s] = None
        except Exception:
            error = deleted_error_of(arrays)
            if error is not None:
                raise error from None
            raise
        if self._donation is not None:
            dn.consume_donated(arrays, self._donation, paths, lowered.name)
        out = [Array.from_buffer(slots[s], a) for s, a in zip(self._results, self.out_avals)]
        return out[0] if self.single_output else tree_unflatten(lowered.out_tree, out)

    def wrap(self, outs):
        raise NotImplementedError("a host loop's outputs come from several programs")

    def as_text(self) -> str:
        """Each program's optimised HLO, in launch order of first use."""
        kinds = self.lowered.host_route.split.kinds
        return "\n".join(
            f"// host loop program {k} ({kind})\n{e.hlo_text()}"
            for k, (kind, e) in enumerate(zip(kinds, self.exes))
        )

    def cost_analysis(self) -> dict:
        """XLA's figures summed over the launches of one call."""
        total: dict = {}
        route = self.lowered.host_route
        for k, e in enumerate(self.exes):
            n = route.launches_of(k)
            for key, v in (e.cost_analysis() or {}).items():
                if isinstance(v, (int, float)):
                    total[key] = total.get(key, 0.0) + n * v
        return total

    def memory_plan(self) -> dict:
        """The bytes the launches hold on the device, from each slot's type and XLA's figures
        for each program (what the allocator is asked for, before its own rounding).

        `live`: after each launch, the entry's arguments (a donated one until the launch
        that takes it), the constants (`constants`) and every slot not yet dropped. `peak`:
        the most at one time, what is live when a launch starts plus its temporaries and
        its outputs (less those written into its donated arguments). `programs`: per
        program, its launches and XLA's argument, output, temporary and aliased bytes."""
        s: Split = self.lowered.host_route.split
        stats = [e.memory_analysis() for e in self.exes]
        size = {slot: int(np.asarray(v).nbytes) for slot, v in s.constants.items()}
        for L in s.launches:
            fn = s.programs[L.program]
            for slot, p in zip(L.ins, fn.params):
                size.setdefault(slot, p.type.nbytes)
            for slot, r in zip(L.outs, fn.results):
                size[slot] = r.type.nbytes
        constants = sum(size[slot] for slot in s.constants)
        live = sum(size.get(i, 0) for i in range(s.n_params)) + constants
        peak, after = live, []
        for L in s.launches:
            m = stats[L.program]
            out = sum(size[o] for o in L.outs)
            peak = max(peak, live + m.temp_size_in_bytes + out - m.alias_size_in_bytes)
            # an entry argument's buffer is the caller's until a launch takes it (donated)
            taken = {L.ins[i] for i in L.donate}
            dropped = sum(size[x] for x in L.free if x >= s.n_params and x not in s.constants)
            live += out - dropped - sum(size[x] for x in taken)
            after.append(live)
        programs = [
            {"kind": kind, "launches": self.lowered.host_route.launches_of(k),
             "argument": m.argument_size_in_bytes, "output": m.output_size_in_bytes,
             "temp": m.temp_size_in_bytes, "alias": m.alias_size_in_bytes}
            for k, (kind, m) in enumerate(zip(s.kinds, stats))
        ]  # fmt: skip
        return {"peak": peak, "live": after, "constants": constants, "programs": programs}

    def memory_analysis(self):
        """XLA's memory figures as one: each `*_size_in_bytes` the largest of the programs'
        (one program runs at a time; what the launches keep between them is not counted),
        the generated code's summed over distinct programs; `programs`, each one's own."""
        stats = [e.memory_analysis() for e in self.exes]
        out = SimpleNamespace(programs=stats)
        names = [n for n in dir(stats[0]) if n.endswith("_in_bytes")] if stats else []
        for n in names:
            values = [getattr(m, n) for m in stats]
            if n.startswith("generated_code"):
                distinct = {id(e): v for e, v in zip(self.exes, values)}
                setattr(out, n, sum(distinct.values()))
            else:
                setattr(out, n, max(values))
        return out
