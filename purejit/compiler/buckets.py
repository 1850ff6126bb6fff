"""Shape buckets: `purejit.jit(f, buckets={"x": {0: [64, 128, 256, 512]}})`.

A call pads each bucketed axis (argument name or position -> axis -> sizes) with zeros up to
the next bucket size, runs that bucket's executable and slices the outputs back, so a stream
of batch sizes costs one compile per bucket instead of one per size.

This is only done where it is correct: the first time a bucket is compiled,
`purejit.passes.batch_axes.analyze` proves on the traced IR that the axis is a batch axis (every
output row depends only on the same input row and never on the number of rows) and finds the
output axes it maps to; otherwise `BucketError` names the op that mixes along it and its
source line. Every array leaf of a bucketed argument is padded along the axis (a dict batch
pads all its arrays); arguments whose rows meet must have the same true length.

A size above the largest bucket raises `BucketOverflowError`, or with
`bucket_overflow="exact"` compiles that exact size (no padding).

Padding and slicing happen on the host (NumPy): results that were sliced come back as
host-backed `purejit.Array`s, which cost a device copy on their next device use.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from purejit.compiler.signature import CallSignature
from purejit.passes.batch_axes import BatchPlan, BucketError, analyze
from purejit.runtime.array import Array
from purejit.tracing import ShapedArray
from purejit.tree_util import tree_flatten, tree_unflatten

__all__ = ["BucketError", "BucketOverflowError", "Buckets"]


class BucketOverflowError(ValueError):
    """An input is longer than the largest bucket of its axis."""


@dataclass(frozen=True)
class _Target:
    leaf: int  # index among the dynamic leaves
    axis: int
    sizes: tuple[int, ...]
    name: str  # "x axis 0"
    path: str  # "x"


class Buckets:
    """The parsed `buckets=` option of one jitted function, and its call path."""

    def __init__(self, spec, overflow: str = "error", argspec=None):
        """Args:
        spec: the user's `buckets=` dict.
        overflow: "error" or "exact" (`bucket_overflow=`).
        argspec: the jitted function's `ArgSpec`, to check the names in `spec`.
        """
        fname = argspec.name if argspec is not None else "f"
        sig = argspec.signature_of_fun if argspec is not None else None
        if overflow not in ("error", "exact"):
            raise ValueError(f"bucket_overflow must be 'error' or 'exact', got {overflow!r}")
        if not isinstance(spec, dict) or not spec:
            raise TypeError(
                "buckets must be a dict {argument name or position: {axis: [sizes...]}}, e.g. "
                f"{{'x': {{0: [64, 128, 256]}}}}; got {spec!r}"
            )
        self.spec: dict = {}
        for key, axes in spec.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise TypeError(f"buckets: key {key!r} must be an argument name or position")
            if not isinstance(axes, dict) or not axes:
                raise TypeError(f"buckets[{key!r}] must be a dict {{axis: [sizes...]}}")
            parsed = {}
            for axis, sizes in axes.items():
                sizes = sorted({int(n) for n in sizes})
                if not isinstance(axis, int) or not sizes or sizes[0] < 1:
                    raise ValueError(
                        f"buckets[{key!r}][{axis!r}]: needs an integer axis and positive sizes"
                    )
                parsed[axis] = tuple(sizes)
            self.spec[key] = parsed
        if sig is not None:
            names = list(sig.parameters)
            has_var = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
            for key in self.spec:
                if isinstance(key, str) and key not in names:
                    raise ValueError(
                        f"buckets: {fname} has no argument {key!r} (its arguments: "
                        f"{', '.join(names)})"
                    )
                if isinstance(key, int) and key >= len(names) and not has_var:
                    raise ValueError(f"buckets: {fname} has no positional argument {key}")
        self.overflow = overflow
        self._targets: dict = {}

    # --- which leaves and axes ------------------------------------------------------------
    def _resolve(self, sig: CallSignature) -> list[_Target]:
        ck = (sig.tree, tuple(k for k, _ in sig.static))
        hit = self._targets.get(ck)
        if hit is not None:
            return hit
        static_names = {name for name, _ in sig.static_names()}
        keys = {}
        for key, axes in self.spec.items():
            name = sig.spec.param_name(key) if isinstance(key, int) else key
            if name in static_names:
                raise ValueError(f"buckets: argument {name!r} of {sig.spec.name} is static")
            keys[name] = axes
        out = []
        for j, (arg, path) in enumerate(sig.leaf_names):
            for axis, sizes in keys.get(arg, {}).items():
                out.append(_Target(j, axis, sizes, f"{path} axis {axis}", path))
        self._targets[ck] = out
        return out

    # --- the call ---------------------------------------------------------------------------
    def call(self, jitted, sig: CallSignature):
        """Pad, run the bucket's executable (compiling it on a miss), slice the outputs.

        `jitted` provides `cache`, `stats`, `lower_signature` and `trace_signature`."""
        targets = self._resolve(sig)
        avals, leaves = sig.avals, sig.leaves
        padded_avals = list(avals)
        lengths, widths = [], {}
        for t in targets:
            a = padded_avals[t.leaf]
            if not -len(a.shape) <= t.axis < len(a.shape):
                raise BucketError(f"buckets: {t.name} does not exist, {t.path} is {a.str_short()}")
            axis = t.axis % len(a.shape)
            n = a.shape[axis]
            b = self._bucket(sig.spec.name, t, n)
            lengths.append(n)
            if b != n:
                widths.setdefault(t.leaf, [(0, 0)] * len(a.shape))[axis] = (0, b - n)
            shape = a.shape[:axis] + (b,) + a.shape[axis + 1 :]
            padded_avals[t.leaf] = ShapedArray(shape, a.dtype, a.weak_type)
        padded = sig.with_avals(padded_avals)
        key = ("buckets", *padded.key)
        compiled = jitted.cache.get(key)
        if compiled is None:
            planned = {(t.path, t.axis % len(avals[t.leaf].shape)) for t in targets}
            jitted.stats.on_miss(padded, planned)
            compiled = self._build(jitted, padded, targets)
            jitted.stats.on_compiled(compiled)
            jitted.cache[key] = compiled
        else:
            jitted.stats.hits += 1
        plan: BatchPlan | None = compiled.bucket_plan
        if plan is not None:
            for cls in plan.classes:
                if len({lengths[i] for i in cls}) > 1:
                    desc = ", ".join(f"{targets[i].name} = {lengths[i]}" for i in cls)
                    raise BucketError(
                        f"{sig.spec.name}: bucketed axes whose rows are combined have "
                        f"different lengths ({desc})"
                    )
        if not widths:
            return compiled.run_arrays(leaves, avals)
        args = list(leaves)
        for j, w in widths.items():
            args[j] = np.pad(np.asarray(args[j]), w)
        out = compiled.run(args)
        return _slice_outputs(out, plan, lengths)

    def _bucket(self, fname: str, t: _Target, n: int) -> int:
        i = bisect.bisect_left(t.sizes, n)
        if i < len(t.sizes):
            return t.sizes[i]
        if self.overflow == "exact":
            return n
        raise BucketOverflowError(
            f"{fname}: {t.name} has length {n}, above the largest bucket "
            f"{t.sizes[-1]} (buckets {list(t.sizes)}). Add a larger bucket, or pass "
            "bucket_overflow='exact' to compile this size as it is."
        )

    def _build(self, jitted, sig: CallSignature, targets):
        """Lower at the bucket lengths, prove padding safe, compile."""
        padded_avals, fname = sig.avals, sig.spec.name
        padded = ", ".join(
            f"{t.name} padded to {padded_avals[t.leaf].shape[t.axis]}" for t in targets
        )
        try:
            lowered = jitted.lower_signature(sig)
        except Exception as e:
            raise BucketError(
                f"purejit.jit({fname}, buckets=...): tracing it with {padded} failed: "
                f"{type(e).__name__}: {str(e).rstrip('.')}. (An argument whose rows meet a "
                "bucketed argument's rows must be bucketed too.)"
            ) from e
        exact = all(padded_avals[t.leaf].shape[t.axis] not in t.sizes for t in targets)
        plan = None
        if not exact:  # an exact-size compile (bucket_overflow="exact") pads nothing
            in_axes: dict[int, dict[int, int]] = {}
            for label, t in enumerate(targets):
                in_axes.setdefault(t.leaf, {})[t.axis % len(padded_avals[t.leaf].shape)] = label
            probes = []
            for which in ("low", "high"):
                avals = _probe_avals(padded_avals, targets, which)
                if avals is None:
                    continue
                try:
                    probes.append(jitted.trace_signature(sig.with_avals(avals)))
                except Exception as e:
                    raise BucketError(
                        f"purejit.jit({fname}, buckets=...): tracing it with other "
                        f"lengths of the bucketed axes (to prove that the program does not "
                        f"depend on them) failed: {type(e).__name__}: {e}"
                    ) from e
            names = [t.name for t in targets]
            plan = analyze(lowered.traced, probes, in_axes, names, fname)
        compiled = lowered.compile()
        compiled.bucket_plan = plan
        return compiled


def _probe_avals(padded_avals, targets, which: str):
    """Avals with every bucketed length moved: "low" to the smallest length this bucket
    serves (at least 2: size-1 axes broadcast differently), "high" to one above the bucket.
    None when some axis has no such length."""
    out = list(padded_avals)
    for t in targets:
        a = out[t.leaf]
        axis = t.axis % len(a.shape)
        b = padded_avals[t.leaf].shape[axis]
        if which == "high":
            n = b + 1
        else:
            i = bisect.bisect_left(t.sizes, b)
            n = max((t.sizes[i - 1] + 1) if i > 0 else 1, 2)
            if n >= b:
                return None
        shape = a.shape[:axis] + (n,) + a.shape[axis + 1 :]
        out[t.leaf] = ShapedArray(shape, a.dtype, a.weak_type)
    return out


def _slice_outputs(out, plan: BatchPlan, lengths: list[int]):

    leaves, tree = tree_flatten(out)
    cuts: dict[int, list] = {}
    for s in plan.slices:
        ns = {lengths[i] for i in s.labels}
        if len(ns) > 1:
            raise BucketError(
                f"output {s.index} axis {s.axis} follows the bucketed length, but the bucketed "
                f"axes it could follow have different true lengths {sorted(ns)}"
            )
        n = ns.pop()
        cut = cuts.setdefault(s.index, [slice(None)] * leaves[s.index].ndim)
        cut[s.axis] = slice(0, n)
    for k, cut in cuts.items():
        a = leaves[k]
        leaves[k] = Array(host=np.asarray(a)[tuple(cut)], weak_type=a.weak_type)
    return tree_unflatten(tree, leaves)
