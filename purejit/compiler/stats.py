"""Why a jitted function recompiled: cache-miss reasons, counters and the recompilation trap guard.

Every jitted function keeps a `CacheStats`: how often it was traced, compiled by XLA, loaded
from the persistent cache, how often a call hit the in-memory cache, and how many of its
compiled programs the process-wide bound evicted (`cache_info()` reports every bounded
in-memory cache of the process). Each miss after the
first compile is explained against the closest signature seen before, e.g.

    f recompiled (miss 3) at train.py:41: x: f32[32,512] -> f32[64,512]; static n: 3 -> 4

logged on the `purejit` logger (INFO; WARNING when `jit_log_compiles` is on) and kept in
`purejit.cache_stats(f).miss_reasons`.

The trap guard: a function whose shapes churn recompiles on every call, which is slower than
running eagerly. After `recompile_warn_after` recompilations (default 8; per function via
`purejit.jit(f, recompile_warn_after=...)` or globally via `purejit.config`), purejit warns
once, naming the dimension that keeps changing and suggesting `buckets=`; with
`recompile_raise=True` it raises `RecompilationError` instead of compiling again.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import logging
import threading
import warnings
from dataclasses import dataclass, field

from purejit import errors
from purejit.config import config
from purejit.ir import lru

logger = logging.getLogger("purejit")

_MAX_SIGNATURES = 64  # previous signatures kept to explain misses against


class RecompilationWarning(UserWarning):
    """A jitted function keeps recompiling because its argument shapes or statics churn."""


class RecompilationError(RuntimeError):
    """Raised instead of `RecompilationWarning` when `recompile_raise` is on."""


@dataclass(frozen=True)
class Change:
    """One difference between a new signature and the closest previous one.

    `arg` is the top-level argument name (what `buckets=` takes), `name` the leaf path
    (`params['w']`), `axes` the dimensions whose size changed (same-rank arrays only).
    """

    arg: str
    name: str
    old: str
    new: str
    static: bool = False
    axes: tuple[int, ...] = ()
    old_shape: tuple[int, ...] | None = None
    new_shape: tuple[int, ...] | None = None

    def __str__(self) -> str:
        return f"{'static ' if self.static else ''}{self.name}: {self.old} -> {self.new}"


@dataclass(frozen=True)
class MissReason:
    """Why one call missed the cache: the changes, the call site and the miss number."""

    number: int
    changes: tuple[Change, ...]
    location: str | None

    def __str__(self) -> str:
        what = "; ".join(map(str, self.changes)) or "same signature (cache cleared or evicted)"
        return what + errors.at(self.location)


class KeyedLocks:
    """One lock per cache key, so threads compiling different signatures run in parallel
    and threads asking for the same one wait for the first: each signature compiles once.

    `with locks(key):` holds the key's lock; a key's lock is dropped once no thread holds or
    waits for it. Copies (`copy.deepcopy` of the stats) start with no locks."""

    def __init__(self):
        self._guard = threading.Lock()
        self._locks: dict = {}  # key -> [lock, number of threads holding or waiting]

    @contextlib.contextmanager
    def __call__(self, key):
        with self._guard:
            entry = self._locks.get(key)
            if entry is None:
                entry = self._locks[key] = [threading.Lock(), 0]
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1] -= 1
                if not entry[1]:
                    del self._locks[key]

    def __deepcopy__(self, memo):
        return KeyedLocks()


@dataclass
class CacheStats:
    """Counters of one jitted function. `misses` counts every compile request, the first too."""

    traces: int = 0
    compiles: int = 0
    hits: int = 0
    misses: int = 0
    persistent_hits: int = 0
    # compiled programs of this function that the process-wide bound evicted
    evictions: int = 0
    miss_reasons: list[MissReason] = field(default_factory=list)
    warned: bool = False
    _signatures: list[dict] = field(default_factory=list, repr=False)
    _churn: collections.Counter = field(default_factory=collections.Counter, repr=False)
    _sizes: dict = field(default_factory=dict, repr=False)
    _churn_misses: int = field(default=0, repr=False)
    # compile_lock(key): held while one signature compiles (purejit.api.compile_signature);
    # _lock keeps the bookkeeping of misses consistent when several signatures compile at once
    compile_lock: KeyedLocks = field(default_factory=KeyedLocks, repr=False, compare=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)
    # the function's name and its trap guard settings (None: purejit.config's)
    name: str = field(default="f", repr=False)
    warn_after: int | None = field(default=None, repr=False)
    raise_on_churn: bool | None = field(default=None, repr=False)

    @property
    def recompiles(self) -> int:
        """Misses after the first one: each is a compile the user may not have wanted."""
        return max(self.misses - 1, 0)

    def snapshot(self) -> CacheStats:
        with self._lock:
            return copy.deepcopy(self)

    def __deepcopy__(self, memo):
        cls = type(self)
        out = cls.__new__(cls)
        memo[id(self)] = out
        for k, v in self.__dict__.items():
            out.__dict__[k] = threading.RLock() if k == "_lock" else copy.deepcopy(v, memo)
        return out

    # --- hooks called by purejit.api -----------------------------------------------------
    def on_miss(self, sig, expected=frozenset()) -> MissReason | None:
        """Record a miss for the call `sig` (a `CallSignature`); explain it, run the trap guard.

        `expected` holds (leaf path, axis) pairs whose changes are planned (bucketed axes):
        they are explained but do not count towards the trap guard."""
        with self._lock:
            return self._on_miss(sig, expected)

    def _on_miss(self, sig, expected):
        self.misses += 1
        sig = describe_signature(sig)
        reason = None
        if self._signatures:
            reason = MissReason(self.misses - 1, _diff(self._closest(sig), sig), _call_site())
            self.miss_reasons.append(reason)
            loud = config.read("jit_log_compiles") or config.read("explain_cache_misses")
            level = logging.WARNING if loud else logging.INFO
            logger.log(level, "%s recompiled (miss %d): %s", self.name, reason.number, reason)
            churned = self._count_churn(reason, expected)
        self._signatures.append(sig)
        del self._signatures[:-_MAX_SIGNATURES]
        if reason is not None and churned:
            self._churn_misses += 1
            self._guard()
        return reason

    def on_compiled(self, compiled) -> None:
        """Count a compile, or a load from the persistent cache."""
        with self._lock:
            self._on_compiled(compiled)

    def _on_compiled(self, compiled) -> None:
        if getattr(compiled, "cache_hit", False):
            self.persistent_hits += 1
        else:
            self.compiles += 1

    def on_evicted(self) -> None:
        """Count a compiled program of this function that the cache bound evicted."""
        with self._lock:
            self.evictions += 1

    # --- internals ------------------------------------------------------------------------
    def _closest(self, sig: dict) -> dict:
        return min(reversed(self._signatures), key=lambda s: _distance(s, sig))

    def _count_churn(self, reason: MissReason, expected) -> bool:
        """Count what changed; False when every change was an expected (bucketed) axis."""
        counted = False
        for c in reason.changes:
            if c.axes:
                for ax in c.axes:
                    if (c.name, ax) in expected:
                        continue
                    key = ("axis", c.arg, c.name, ax)
                    self._churn[key] += 1
                    seen = self._sizes.setdefault(key, [c.old_shape[ax]])
                    seen.append(c.new_shape[ax])
                    counted = True
                continue
            key = ("static" if c.static else "type", c.arg, c.name, None)
            self._churn[key] += 1
            self._sizes.setdefault(key, [c.old]).append(c.new)
            counted = True
        return counted

    def _guard(self):
        limit = self.warn_after
        limit = config.read("recompile_warn_after") if limit is None else limit
        if self.warned or limit is None or limit <= 0 or self._churn_misses < limit:
            return
        self.warned = True
        msg = trap_message(self.name, self.recompiles, self._churn, self._sizes)
        raise_ = self.raise_on_churn
        raise_ = config.read("recompile_raise") if raise_ is None else raise_
        logger.warning("%s", msg)
        if raise_:
            raise RecompilationError(msg)
        frame = errors.user_frame()
        if frame is None:
            warnings.warn(msg, RecompilationWarning, stacklevel=2)
        else:
            warnings.warn_explicit(
                msg,
                RecompilationWarning,
                frame.f_code.co_filename,
                frame.f_lineno,
                module=frame.f_globals.get("__name__", "purejit"),
                registry=frame.f_globals.setdefault("__warningregistry__", {}),
            )


def cache_stats(f) -> CacheStats:
    """The counters and miss reasons of a function wrapped by `purejit.jit` (a copy).

    Args:
        f: the result of `purejit.jit(...)`.
    Returns:
        A `CacheStats` with `traces`, `compiles` (XLA compilations), `persistent_hits`
        (executables loaded from `cache_dir`), `hits` (in-memory cache hits), `misses`,
        `recompiles` and `miss_reasons` (each with `.changes` and `.location`).
    """
    stats = getattr(f, "stats", None)
    if not isinstance(stats, CacheStats):
        raise TypeError(
            f"purejit.cache_stats expects a function wrapped by purejit.jit, got {type(f).__name__}"
        )
    return stats.snapshot()


def cache_info() -> dict[str, dict]:
    """The process-wide in-memory caches (`purejit.ir.lru`): for each, its entries, its
    bound and how many entries the bound evicted so far.

    Returns:
        {cache name: {"entries": int, "maxsize": int, "evictions": int}}.
    """
    return {t.name: t.info() for t in lru.caches()}


# --- signatures ---------------------------------------------------------------------------


def describe_signature(sig) -> dict:
    """name -> (kind, text, shape) for every leaf and static argument of one call."""
    out: dict = {}
    for (arg, name), a in zip(sig.leaf_names, sig.avals):
        out[name] = ("leaf", arg, a.str_short(), tuple(a.shape))
    for name, v in sig.static_names():
        out[name] = ("static", name, _short_repr(v), None)
    return out


def _short_repr(v) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


def _distance(a: dict, b: dict) -> int:
    return sum(a.get(k) != b.get(k) for k in set(a) | set(b))


def _diff(old: dict, new: dict) -> tuple[Change, ...]:
    changes = []
    for name in list(old) + [k for k in new if k not in old]:
        o, n = old.get(name), new.get(name)
        if o == n:
            continue
        ref = n or o
        static = ref[0] == "static"
        otext = o[2] if o else "absent"
        ntext = n[2] if n else "absent"
        axes, oshape, nshape = (), None, None
        if o and n and not static and o[3] is not None and len(o[3]) == len(n[3]):
            oshape, nshape = o[3], n[3]
            axes = tuple(i for i, (p, q) in enumerate(zip(oshape, nshape)) if p != q)
        changes.append(Change(ref[1], name, otext, ntext, static, axes, oshape, nshape))
    return tuple(changes)


def _call_site() -> str | None:
    return errors.user_location()


# --- the trap guard's message ----------------------------------------------------------------


def suggest_buckets(sizes) -> list[int]:
    """Powers of two covering the sizes seen (at most 8 of them, ending at the largest)."""
    top = max(sizes)
    hi = 1 << max(top - 1, 0).bit_length()
    lo = 1 << max(min(sizes) - 1, 0).bit_length()
    out = []
    b = hi
    while b >= lo and len(out) < 8:
        out.append(b)
        b //= 2
    return sorted(out)


def trap_message(fname: str, recompiles: int, churn: collections.Counter, sizes: dict) -> str:
    """The single warning of the trap guard: what churns and what to do about it."""
    head = (
        f"purejit: {fname} has recompiled {recompiles} times; every new signature traces and "
        "compiles again, which is slower than not compiling at all."
    )
    if not churn:
        return head + " Its cache was cleared repeatedly (clear_cache)."
    (kind, arg, name, axis), count = churn.most_common(1)[0]
    seen = sizes.get((kind, arg, name, axis), [])
    if kind in ("static", "type"):
        vals = ", ".join(dict.fromkeys(seen[:8]))
        more = ", ..." if len(seen) > 8 else ""
        if kind == "type":
            return (
                f"{head} The type of {name} changed in {count} of them ({vals}{more}). Convert "
                "it to one dtype and rank before calling."
            )
        return (
            f"{head} The static argument {name} changed in {count} of them (values {vals}"
            f"{more}). Pass it as a traced array instead of a static argument, or keep its "
            "values few."
        )
    uniq = sorted(set(seen))
    shown = ", ".join(map(str, uniq[:10])) + (", ..." if len(uniq) > 10 else "")
    sugg = suggest_buckets(uniq)
    return (
        f"{head} Dimension {axis} of {name} changed in {count} of them (sizes seen: {shown}). "
        f"Pad it to a few fixed sizes: purejit.jit({fname}, buckets={{{arg!r}: {{{axis}: "
        f"{sugg}}}}}) pads up to the next bucket and slices the results back (only where "
        "each output row depends on the same input row), or pass recompile_warn_after=0 "
        "to silence this warning."
    )
