"""Global options, JAX-style: `purejit.config.update("enable_x64", True)`.

An environment variable may only set a default (`PUREJIT_ENABLE_X64=1`). Modules that must
follow an option register a callback with `config.watch`; this module imports nothing of
purejit, so every layer may read it.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from typing import Any, Callable


def _number_or_text(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "0") in ("1", "true", "True")


class _Config:
    def __init__(self):
        self._values = {
            "enable_x64": os.environ.get("PUREJIT_ENABLE_X64", "0") in ("1", "true", "True"),
            "jit_log_compiles": False,
            # one line through the `purejit` logger when an XLA compile takes this long
            "slow_compile_log_s": float(os.environ.get("PUREJIT_SLOW_COMPILE_LOG_S") or 5.0),
            # the persistent compile cache and the recompilation trap guard
            "cache_dir": os.environ.get("PUREJIT_CACHE_DIR") or None,
            "cache_max_bytes": int(os.environ.get("PUREJIT_CACHE_MAX_BYTES") or 2**30),
            # in-memory caches, process-wide as JAX's (2,048 lowerings, 8,192 entries in each
            # C++ dispatch cache): compiled programs of every jitted function, and the fast
            # dispatch table's entries; the least recently used are evicted beyond them
            "jit_cache_size": int(os.environ.get("PUREJIT_JIT_CACHE_SIZE") or 2048),
            "dispatch_cache_size": int(os.environ.get("PUREJIT_DISPATCH_CACHE_SIZE") or 8192),
            # an executable that compiled faster than this is not written to the persistent
            # cache (JAX's option; eager primitives use it)
            "persistent_cache_min_compile_time_secs": 1.0,
            # how many eager primitives (op, attributes, operand weak types) keep their
            # executables; the least recently used beyond it are dropped
            "eager_cache_size": int(os.environ.get("PUREJIT_EAGER_CACHE_SIZE") or 4096),
            "recompile_warn_after": 8,
            "recompile_raise": False,
            # check the IR after every pass that changed it, not only the pipeline's result
            "verify_each_pass": os.environ.get("PUREJIT_VERIFY_EACH_PASS", "0")
            in ("1", "true", "True"),
            # "on": errors raised while tracing/compiling show only the user's frames
            "traceback_filtering": os.environ.get("PUREJIT_TRACEBACK_FILTERING", "on"),
            # sin/cos/tan of f32/bf16/f16 on CPU as vectorisable StableHLO, not XLA's calls
            "cpu_fast_transcendentals": os.environ.get("PUREJIT_CPU_FAST_TRANSCENDENTALS", "1")
            not in ("0", "false", "False"),
            # log why a jitted function missed its cache, at WARNING (JAX's option)
            "explain_cache_misses": False,
            # the `precision=` that dot, dot_general and convolutions take when given None:
            # None (XLA's default), "default", "high", "highest", "float32", ...
            "default_matmul_precision": None,
            # reverse mode under jit: recompute cheap residuals in the backward pass instead
            # of saving them (False saves everything, as JAX); remat_budget: None for the
            # automatic plan, or the fraction of the save-everything residual bytes to keep
            "remat": os.environ.get("PUREJIT_REMAT", "1") not in ("0", "false", "False"),
            "remat_budget": None,
            # attention as one fused kernel where the back end has one (cuDNN flash attention
            # on NVIDIA GPUs); False keeps the program as written (PUREJIT_FUSED_ATTENTION=0)
            "fused_attention": os.environ.get("PUREJIT_FUSED_ATTENTION", "1")
            not in ("0", "false", "False"),
            # with fused attention: a projection only sliced into q, k and v becomes one
            # product per part (passes/split_projection.py); False keeps the one product.
            # Read when a program compiles, as fused_attention is
            "attention_split_projections": True,
            # how purejit.vmap lowers: "batched" (JAX's), "loop" (a scan over the examples)
            # or "auto" (the faster, measured once per program within vmap_measure_s seconds;
            # 0 measures nothing and "auto" is "batched")
            "vmap_lowering": os.environ.get("PUREJIT_VMAP_LOWERING") or "batched",
            "vmap_measure_s": float(os.environ.get("PUREJIT_VMAP_MEASURE_S") or 1.0),
            # where uncommitted arrays and computations go: None (the first device), a device
            # or a platform name ("cpu", "gpu"); JAX's jax_default_device
            "default_device": None,
            # check every eager op's and jitted call's floating outputs for NaN / Inf and
            # raise FloatingPointError naming the op that made one (JAX's jax_debug_nans)
            "debug_nans": _env_flag("PUREJIT_DEBUG_NANS"),
            "debug_infs": _env_flag("PUREJIT_DEBUG_INFS"),
            # purejit.numpy broadcasting operands of different ranks: "allow", "warn" or
            # "raise" (JAX's jax_numpy_rank_promotion)
            "numpy_rank_promotion": os.environ.get("PUREJIT_NUMPY_RANK_PROMOTION") or "allow",
            # JAX's jax_numpy_dtype_promotion: purejit implements only the "standard" lattice
            "numpy_dtype_promotion": "standard",
        }
        self._local = threading.local()
        self._watchers: dict[str, list[Callable[[Any], None]]] = {}
        self._user_trace_options: list[str] = []  # made by purejit.make_user_context
        self.trace_context = self._trace_context()

    def update(self, name: str | None = None, value=None, **options):
        """Set an option: `update("cache_dir", path)` or `update(cache_dir=path)`.

        JAX's names work too (`update("jax_enable_x64", True)`, see `JAX_OPTIONS`); a JAX
        option purejit has no equivalent for raises `NotImplementedError` naming it.
        """
        if name is not None:
            options = {name: value, **options}
        options = {self._canonical(k): v for k, v in options.items()}
        if options.get("numpy_rank_promotion", "allow") not in ("allow", "warn", "raise"):
            raise ValueError(
                "numpy_rank_promotion must be 'allow', 'warn' or 'raise', got "
                f"{options['numpy_rank_promotion']!r}"
            )
        if options.get("numpy_dtype_promotion", "standard") != "standard":
            raise NotImplementedError(
                f"numpy_dtype_promotion={options['numpy_dtype_promotion']!r}: purejit "
                "implements only JAX's 'standard' type promotion"
            )
        if "disable_jit" in options:
            self.set_disable_jit(bool(options.pop("disable_jit")))
        self._values.update(options)
        context = self._trace_context()
        changed = context != self.trace_context
        if changed:  # jit's fast-path cache checks identity per call
            self.trace_context = context
        for k, v in options.items():
            for callback in self._watchers.get(k, ()):
                callback(v)
        if changed:
            for callback in self._watchers.get("trace_context", ()):
                callback(context)

    def parse_flags_with_absl(self, argv: list[str] | None = None) -> None:
        """Apply the command line's `--jax_<option>=value` flags (before a lone `--`;
        `--jax_<option>` alone is True, `--nojax_<option>` False), as JAX's test modules
        ask at import; other arguments are left alone. `argv`: default `sys.argv[1:]`."""
        args = sys.argv[1:] if argv is None else argv
        for arg in itertools.takewhile(lambda a: a != "--", args):
            name, eq, text = arg.removeprefix("--").partition("=")
            negated = name.startswith("nojax_") and not eq
            name = name.removeprefix("no") if negated else name
            if not arg.startswith("--") or name not in (*JAX_OPTIONS, *JAX_UNSUPPORTED):
                continue
            if not eq:
                value = not negated
            elif text.lower() in ("true", "false"):
                value = text.lower() == "true"
            else:
                value = _number_or_text(text)
            self.update(name, value)

    def _trace_context(self) -> tuple:
        # the options that change what tracing produces: jit caches are keyed on them
        return tuple(self._values[k] for k in (*TRACE_OPTIONS, *self._user_trace_options))

    def add_trace_option(self, name: str, default) -> None:
        """A new option whose value keys jit's caches, as the built-in TRACE_OPTIONS do (what
        `purejit.make_user_context` makes); `default` must be hashable."""
        hash(default)
        if name in self._values:
            raise KeyError(f"purejit option {name!r} exists already")
        self._values[name] = default
        self._user_trace_options.append(name)
        self.trace_context = self._trace_context()
        for callback in self._watchers.get("trace_context", ()):
            callback(self.trace_context)

    def watch(self, name: str, callback: Callable[[Any], None]) -> None:
        """Call `callback(value)` after every `update` of option `name` (for "disable_jit":
        after every `set_disable_jit`, in the thread that set it; for "trace_context": after
        every change of `trace_context`, with the new tuple).

        Args:
            name: a known option, "disable_jit" or "trace_context".
            callback: called with the new value, in the order callbacks were registered.
        """
        if name not in self._values and name not in ("disable_jit", "trace_context"):
            raise KeyError(f"unknown purejit option {name!r}; known: {sorted(self._values)}")
        self._watchers.setdefault(name, []).append(callback)

    def read(self, name: str):
        """The value of option `name` (purejit's or JAX's name)."""
        name = self._canonical(name)
        if name == "disable_jit":
            return self.jit_disabled
        return self._values[name]

    def _canonical(self, name: str) -> str:
        """purejit's name of option `name`; KeyError / NotImplementedError if none."""
        if name in self._values or name == "disable_jit":
            return name
        if name in JAX_OPTIONS:
            return JAX_OPTIONS[name]
        if name in JAX_UNSUPPORTED:
            raise NotImplementedError(f"purejit.config: JAX's option {name!r} is not supported "
                                      f"({JAX_UNSUPPORTED[name]})")  # fmt: skip
        known = sorted(self._values) + sorted(JAX_OPTIONS)
        raise KeyError(f"unknown purejit option {name!r}; known: {known}")

    def __getattr__(self, name: str):
        # JAX style attribute reads: `config.jax_enable_x64`, `config.cache_dir`
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.read(name)
        except (KeyError, NotImplementedError) as e:
            raise AttributeError(str(e)) from None

    @property
    def values(self) -> dict:
        """A copy of every option's current value, by purejit's names."""
        return {**self._values, "disable_jit": self.jit_disabled}

    @property
    def enable_x64(self) -> bool:
        return self._values["enable_x64"]

    @property
    def jit_disabled(self) -> bool:
        return getattr(self._local, "disable_jit", False)

    def set_disable_jit(self, flag: bool):
        """Run jitted functions op by op in this thread (what `purejit.disable_jit` sets)."""
        self._local.disable_jit = flag
        for callback in self._watchers.get("disable_jit", ()):
            callback(flag)


# options whose value changes the traced program (a new value is a new jit cache entry)
# (the NaN checks too: a checked call must miss the fast dispatch paths, which skip them)
TRACE_OPTIONS = (
    "enable_x64",
    "default_matmul_precision",
    "default_device",
    "debug_nans",
    "debug_infs",
    "numpy_rank_promotion",
)

# JAX's option names and the purejit option each sets
JAX_OPTIONS = {
    "jax_enable_x64": "enable_x64",
    "jax_log_compiles": "jit_log_compiles",
    "jax_explain_cache_misses": "explain_cache_misses",
    "jax_compilation_cache_dir": "cache_dir",
    "jax_persistent_cache_min_compile_time_secs": "persistent_cache_min_compile_time_secs",
    "jax_default_matmul_precision": "default_matmul_precision",
    "jax_disable_jit": "disable_jit",
    "jax_default_device": "default_device",
    "jax_debug_nans": "debug_nans",
    "jax_debug_infs": "debug_infs",
    "jax_numpy_rank_promotion": "numpy_rank_promotion",
    "jax_numpy_dtype_promotion": "numpy_dtype_promotion",
}
# JAX options a port may set that purejit cannot honour, and why
JAX_UNSUPPORTED = {
    "jax_platforms": "purejit uses the backend jax's PJRT client picks; set JAX_PLATFORMS "
    "in the environment before the first device call",
    "jax_platform_name": "purejit uses the backend jax's PJRT client picks",
    "jax_default_prng_impl": "purejit.random has one implementation",
}

config = _Config()
