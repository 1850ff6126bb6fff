"""`compiler_options` of `purejit.jit`: which passes run, where stages are dumped, and who
decides the kernels.

    purejit.jit(f, compiler_options={"disable_passes": ["fusion"], "dump_dir": "/tmp/ir"})
    purejit.jit(f, compiler_options={"fusion": "purejit"})

Keys:
    disable_passes  pass names to skip (see `purejit.passes.Pipeline().names()`)
    dump_dir        a folder that receives the IR after every pass (`NN_pass.pjir`)
    fusion          "xla" (default): purejit's groups are inlined and XLA fuses the flat
                    program. "purejit": purejit's groups are handed to XLA as its kernels
                    where a capability probe finds a way (`purejit/backend/fusion.py`), with
                    XLA's own fusion pass off; elsewhere the flat program, with one warning.
    remat           reverse mode inside this function: True (default, or
                    `purejit.config.remat`) recomputes cheap residuals in the backward pass
                    instead of saving them; False saves every residual, as JAX does
    remat_budget    None (default, or `purejit.config.remat_budget`): the automatic plan;
                    a fraction in [0, 1] of the save-everything residual bytes to keep at
                    most, recomputing expensive ops too where needed
                    (`purejit/transforms/autodiff/remat.py`)
    fused_attention True (default, or `purejit.config.fused_attention`): attention written
                    by hand becomes one fused kernel where the target has one (cuDNN on
                    NVIDIA GPUs; `purejit/fused_attention.py`); False keeps it as written
    roll_layers     False (default): every call is inlined. True: chains of calls of one
                    jitted layer become one `scan` over the stacked per-layer parameters,
                    so XLA compiles the layer once (`passes/roll_layers.py`). "host": rolled
                    likewise, then run from the host (`purejit/compiler/host_loop.py`): the
                    program is split at its rolled scans, each scan's body is one program
                    run once per trip and the stretches between scans programs of their
                    own, so each saved value stays a buffer of its own (no stacks: stacked
                    outputs are per-trip buffers, per-layer parameters are passed per trip).
                    A program the split cannot prove (a stack read whole, effects, several
                    devices) runs as the rolled program, with the reason in `explain`
    host_layers_per_run
                    with roll_layers="host": 1 (default): a loop body's program runs one
                    trip (one layer) per launch; k: k consecutive trips per launch (the
                    body composed k times in one program, `passes/_compose.py`; a remainder
                    of n mod k trips runs as a program of its own): k times fewer launches,
                    a larger program to compile
    stacked_params  with roll_layers: True (default) the program takes each stack of
                    per-layer parameters as one argument, which dispatch builds (or finds
                    already built: the row views of a previous call's stack), and returns
                    per-layer outputs as row views of one stack
                    (`purejit/compiler/stacked_params.py`); False: the stacks are built
                    inside the program on every call (on CPU: read per trip by a `case`)
    collective_matmul
                    None (default): the collective-matmul pass does not run (it is opt-in).
                    "auto": it runs first and times each timing unit of a shard_map body
                    (a candidate with its elementwise neighbourhood, the MLP's two as one)
                    in every form of `auto_forms` against the plain program
                    (`passes/collective_matmul.py`);
                    "ring", "chunkedK" or "chunkedK_free" (K >= 2 pieces, chained or
                    independent): every candidate in that form; "pipelinedK": each
                    proved all-gather -> matmul -> elementwise -> matmul -> reduce-scatter
                    layer in K row pieces, the other candidates chunkedK;
                    "off": no pass. With a `passes=` pipeline that holds the pass, refused
    optimization_level, memory_fitting_level
                    JAX's XLA effort levels (a `CompilerEffortLevel` or its name): UNKNOWN,
                    XLA's default, is what purejit compiles with; another level raises
                    NotImplementedError naming it (purejit's compiles do not carry one yet)

Also here: jax 0.11's option enums `Inline` (what `jit(inline=...)` takes) and
`CompilerEffortLevel`.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from purejit.backend import fusion, pjrt, stablehlo
from purejit.backend.lowering import random as lowering_random
from purejit.config import config
from purejit.passes import Pipeline
from purejit.passes._chunked import chunks_of
from purejit.passes.collective_matmul import CollectiveMatmul
from purejit.passes.pipeline import default_passes
from purejit.passes.remat import over_devices, Settings, check_budget


class CompilerEffortLevel(enum.Enum):
    """XLA's effort levels (https://openxla.org/xla/effort_levels), as jax 0.11's
    `jax.CompilerEffortLevel`: higher levels spend more compile time for a faster program
    (optimization_level) or for fitting memory (memory_fitting_level). A level's name
    (`CompilerEffortLevel("O1")`) gives the level."""

    UNKNOWN = 0
    O0 = 9
    O1 = 19
    O2 = 29
    O3 = 39

    @classmethod
    def _missing_(cls, value: object):
        return cls.__members__.get(value) if isinstance(value, str) else None


class Inline(enum.Enum):
    """How a jitted function called inside another is inlined, as jax 0.11's `jax.Inline`.
    purejit inlines every nested jit into the enclosing program before emitting it, which
    is what JAX_EARLY, JAX_LATE and AUTO ask for (and `inline=True` / `False`); XLA_EARLY and
    XLA_LATE ask for a call kept in the StableHLO module for XLA to inline, which purejit
    does not emit, so `jit` refuses them."""

    JAX_EARLY = "jax_early"
    JAX_LATE = "jax_late"
    XLA_EARLY = "xla_early"
    XLA_LATE = "xla_late"
    AUTO = "auto"


def check_inline(inline) -> None:
    """Accept jit's `inline=` values purejit honours (bools, JAX_EARLY, JAX_LATE, AUTO)."""
    if isinstance(inline, bool):
        return
    if not isinstance(inline, Inline):
        raise TypeError(f"jit(inline=...) takes a bool or a purejit.Inline, got {inline!r}")
    if inline in (Inline.XLA_EARLY, Inline.XLA_LATE):
        raise NotImplementedError(
            f"jit(inline={inline}): purejit inlines nested jits into one flat StableHLO "
            "program and does not keep a call for XLA to inline; use inline=True, "
            "Inline.JAX_EARLY, Inline.JAX_LATE or Inline.AUTO (XLA's executable is the same)"
        )


def _effort(options: Mapping[str, Any], key: str) -> None:
    value = options.get(key)
    if value is None:
        return
    level = CompilerEffortLevel(value)  # a bad name raises ValueError, as JAX's
    if level is not CompilerEffortLevel.UNKNOWN:
        raise NotImplementedError(
            f"compiler_options: {key}={level}: purejit compiles at XLA's default effort "
            "(CompilerEffortLevel.UNKNOWN) and does not pass a level to XLA yet; drop the "
            "option or set it to UNKNOWN"
        )


FUSION_MODES = ("xla", "purejit")
KNOWN_KEYS = (
    "disable_passes",
    "dump_dir",
    "fusion",
    "remat",
    "remat_budget",
    "fused_attention",
    "roll_layers",
    "stacked_params",
    "host_layers_per_run",
    "collective_matmul",
    "optimization_level",
    "memory_fitting_level",
)


def _merge_barrier() -> bool:
    """Whether merged threefry hashes sit behind an `optimization_barrier` (so XLA cannot
    fuse the merged hash back into every slice of it): on GPU by default; the environment
    variable `PUREJIT_THREEFRY_MERGE_BARRIER` (0 or 1) overrides, and a `passes=` pipeline
    sets `MergeThreefry(barrier=...)` itself."""
    env = os.environ.get("PUREJIT_THREEFRY_MERGE_BARRIER")
    return pjrt.is_gpu() if env is None else env not in ("0", "false", "False", "")


def _collective_matmul_pass(value) -> CollectiveMatmul | None:
    """The collective-matmul pass the `collective_matmul` option names (None for None and
    "off"): "auto", or "ring" / "chunkedK" / "pipelinedK" (either with "_free") forced on
    every candidate; another value raises ValueError."""
    if value is None or value == "off":
        return None
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        cm = CollectiveMatmul() if value == "auto" else CollectiveMatmul(mode="on", form=value)
        cm.check()  # a name that is no form raises
        if (chunks_of(cm.form) or 2) < 2:
            raise ValueError(value)
    except ValueError:
        raise ValueError(
            f"compiler_options: collective_matmul={value!r} must be None, 'off', 'auto', 'ring' "
            "or 'chunkedK' / 'pipelinedK' (either with '_free') with K >= 2 (e.g. 'chunked4')"
        ) from None
    return cm


@dataclass(frozen=True)
class CompilerOptions:
    """Validated compiler options (see the module docstring)."""

    disable_passes: tuple[str, ...] = ()
    dump_dir: str | None = None
    fusion: str = "xla"
    remat: bool | None = None  # None: purejit.config's
    remat_budget: float | None = None
    fused_attention: bool | None = None  # None: purejit.config's
    roll_layers: bool | str = False  # False, True or "host"
    collective_matmul: str | None = None
    # set by lowering for a jit with shardings: the program runs over several devices
    partitioned: bool = False
    stacked_params: bool = True  # with roll_layers: stacks are arguments (see above)
    host_layers_per_run: int = 1  # with roll_layers="host": trips per launch (see above)

    @classmethod
    def parse(cls, options: Mapping[str, Any] | CompilerOptions | None) -> CompilerOptions:
        """Check a user's `compiler_options` dict and return the options it names."""
        if options is None:
            return cls()
        if isinstance(options, CompilerOptions):
            return options
        if not isinstance(options, Mapping):
            raise TypeError(
                f"compiler_options must be a dict, got {type(options).__name__}; keys: "
                f"{list(KNOWN_KEYS)}"
            )
        unknown = set(options) - set(KNOWN_KEYS)
        if unknown:
            raise ValueError(
                f"compiler_options: unknown keys {sorted(unknown)}; known: {list(KNOWN_KEYS)}"
            )
        _effort(options, "optimization_level")
        _effort(options, "memory_fitting_level")
        disable = options.get("disable_passes", ())
        if isinstance(disable, str):
            disable = (disable,)
        fusion = options.get("fusion", "xla")
        if fusion not in FUSION_MODES:
            raise ValueError(
                f"compiler_options: fusion={fusion!r} must be one of {list(FUSION_MODES)}"
            )
        dump_dir = options.get("dump_dir")
        remat = options.get("remat")
        if remat is not None and not isinstance(remat, bool):
            raise ValueError(f"compiler_options: remat={remat!r} must be True or False")
        budget = check_budget(options.get("remat_budget"), "compiler_options")
        dump = None if dump_dir is None else str(dump_dir)
        fused = options.get("fused_attention")
        if fused is not None and not isinstance(fused, bool):
            raise ValueError(f"compiler_options: fused_attention={fused!r} must be True or False")
        roll = options.get("roll_layers", False)
        if not isinstance(roll, bool) and roll != "host":
            raise ValueError(
                f"compiler_options: roll_layers={roll!r} must be True, False or 'host'"
            )
        cm = options.get("collective_matmul")
        _collective_matmul_pass(cm)  # checked here, made where the pipeline is
        stacked = options.get("stacked_params", True)
        if not isinstance(stacked, bool):
            raise ValueError(f"compiler_options: stacked_params={stacked!r} must be True or False")
        per_run = options.get("host_layers_per_run", 1)
        if isinstance(per_run, bool) or not isinstance(per_run, int) or per_run < 1:
            raise ValueError(
                f"compiler_options: host_layers_per_run={per_run!r} must be an int >= 1"
            )
        return cls(
            tuple(disable), dump, fusion, remat, budget, fused, roll, cm,
            stacked_params=stacked, host_layers_per_run=per_run,
        )  # fmt: skip

    def stacks_params(self) -> bool:
        """Whether rolled programs take their stacks of parameters as arguments: roll_layers
        and stacked_params on, one device, XLA's own fusion."""
        return (
            self.roll_layers is True
            and self.stacked_params
            and not self.partitioned
            and (self.fusion == "xla")
        )

    def host_loop(self) -> bool:
        """Whether a rolled program runs from the host (`roll_layers="host"`, one device)."""
        return self.roll_layers == "host" and not self.partitioned

    def _roll_options(self) -> dict:
        """The roll pass's options. For the host loop (`host_loop`), every stack a plain
        stack of its own (no packed rows, no case), which the split takes apart."""
        if self.roll_layers == "host":
            return {"pack_ys": False, "select_xs": False, "pack_xs": False}
        # a rolled loop's saved values packed into one stacked output: fewer launches per
        # trip on GPU; on CPU the unfused concatenate costs more, and the layers' parameters
        # are read per trip by a case, unstacked, unless the stacks are the program's
        # arguments (`stacked_params`: one per parameter, as `lax.scan` takes them, so that
        # an update over a whole stack is the output, in place)
        return {
            "pack_ys": pjrt.is_gpu(),
            "select_xs": not pjrt.is_gpu() and not self.stacks_params(),
            "pack_xs": not self.stacks_params(),
        }

    def attention_enabled(self) -> bool:
        """Whether hand-written attention may be fused (the option, else purejit.config)."""
        if self.fused_attention is not None:
            return self.fused_attention
        return bool(config.read("fused_attention"))

    def remat_settings(self) -> Settings:
        """What reverse mode traced under these options saves (`passes/remat.py`)."""
        enabled = config.read("remat") if self.remat is None else self.remat
        budget = self.remat_budget
        if budget is None:
            budget = check_budget(config.read("remat_budget"), "purejit.config")
        # XLA's CPU compiler drops optimization barriers before its last CSE (unless its
        # cse_barrier_expander pass is switched off)
        flags = os.environ.get("XLA_FLAGS", "")
        barriers = pjrt.platform() != "cpu" or "cse_barrier_expander" in flags
        forced = self.remat is True or self.remat_budget is not None
        s = Settings(
            bool(enabled),
            budget,
            self.attention_enabled(),
            barriers,
            bool(self.roll_layers),
            forced,
        )
        return replace(over_devices(s), partitioned=True) if self.partitioned else s

    def capability(self):
        """The back end's fusion capability when `fusion="purejit"`, else None."""
        if self.fusion != "purejit":
            return None

        cap = fusion.probe_route()
        if not cap.realised:
            fusion.warn_not_realised(cap)
        return cap

    def pipeline(self, passes=None, first=None):
        """The pass pipeline: the user's `passes=` (or the default) with these options;
        `first`, a pass the default pipeline starts with (the attention rewrite)."""

        cap = self.capability()
        if passes is None:
            # groups realised as kernels must stay within what the route can take; on GPU
            # the layout pass hands XLA a dot's unavoidable operand copies explicitly

            layout = {"explicit_copies": pjrt.is_gpu()}
            threefry = {
                "rolled_max_size": lowering_random.rolled_max_size(),
                "merge_barrier": _merge_barrier(),
            }
            fusion_options = cap.fusion_options() if cap else {}
            passes = Pipeline(
                default_passes(
                    layout_options=layout,
                    threefry_options=threefry,
                    roll_layers=bool(self.roll_layers),
                    roll_options=self._roll_options(),
                    **fusion_options,
                )
            )
            if first is not None:
                passes = Pipeline([first, *passes.passes])
        passes = self._with_collective_matmul(passes)
        disable = tuple(passes.disable) + tuple(d for d in self.disable_passes)
        each = passes.verify_each
        if each is None:  # the pass manager knows no config: hand it purejit.config's choice
            each = bool(config.read("verify_each_pass"))
        if not self.disable_passes and self.dump_dir is None and each is passes.verify_each:
            return passes
        dump_dir = self.dump_dir or passes.dump_dir
        return Pipeline(passes.passes, disable, dump_dir, passes.keep_ir, each)

    def _with_collective_matmul(self, passes):
        """`passes` with the collective-matmul pass first, as the option asks."""
        cm = _collective_matmul_pass(self.collective_matmul)
        if cm is None:
            return passes
        if "collective_matmul" in passes.names():
            raise ValueError(
                f"compiler_options: collective_matmul={self.collective_matmul!r} and a passes= "
                "pipeline that holds a collective_matmul pass: set it in one place"
            )
        return Pipeline(
            [cm, *passes.passes],
            passes.disable,
            passes.dump_dir,
            passes.keep_ir,
            passes.verify_each,
        )

    def emit(self, fn, **emit_kwargs) -> tuple[str, tuple[str, ...]]:
        """The StableHLO module for `fn` and the XLA passes to switch off when compiling.

        Args:
            fn: the optimised IR function.
            **emit_kwargs: passed on to `purejit.backend.stablehlo.emit` (`arg_attrs`, ...).
        """

        cap = self.capability()
        if cap is None:
            return stablehlo.emit(fn, **emit_kwargs), ()
        return fusion.emit(fn, cap, **emit_kwargs)
