"""`Compiled`: an XLA executable for one signature of a jitted function, callable."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from purejit.backend import pjrt
from purejit.compiler import donation as dn
from purejit.runtime.array import Array, as_array
from purejit.tracing import ShapedArray, Tracer
from purejit.tree_util import tree_flatten, tree_paths, tree_unflatten


class Compiled:
    """A compiled jitted function for one signature: callable, with XLA's analyses."""

    def __init__(self, lowered, exe):
        self.lowered = lowered
        self.exe = exe
        self.cache_hit = False
        self.bucket_plan = None  # set by buckets: which output rows follow which input rows
        self._param_key = tuple((t.shape, t.dtype) for t in exe.param_types)
        self.single_output = lowered.out_tree.kind is None
        self.out_avals = list(lowered.out_avals)
        donation = getattr(lowered, "donation", None)
        # no donation to honour: the fast path may execute directly
        self.plain = donation is None or not donation.aliases

    def __call__(self, *args, **kwargs):
        leaves, tree = tree_flatten((args, kwargs))
        if tree != self.lowered.in_tree:
            raise TypeError(
                f"{self.lowered.name}: compiled for arguments {self.lowered.in_tree}, "
                f"called with {tree}"
            )
        paths = self.lowered.in_paths or tree_paths(tree, "args")
        arrays, avals = [], []
        for path, x, want in zip(paths, leaves, self.lowered.in_avals):
            a = _leaf_array(x, path, self.lowered.name)
            if a.shape != want.shape or a.dtype != want.dtype:
                raise TypeError(
                    f"{self.lowered.name}: argument {path} is {a.aval.type}, but this "
                    f"executable was compiled for {want.type}"
                )
            arrays.append(a)
            avals.append(a.aval)
        return self.run_arrays(arrays, avals)

    def fast_key_for(self, args: tuple, avals: Sequence[ShapedArray]) -> tuple | None:
        """The `fast_key` under which a call with these positional `args` may skip the
        signature next time, or None when it must not.

        Each argument must be one leaf whose abstract value the signature kept unchanged: a
        purejit Array (its aval is the key), or a NumPy array of a dtype narrower than 64
        bits (never weak, never canonicalised, so its shape and dtype are the key) for a
        one-device program without donation."""
        key = fast_key(args)
        if key is None or len(key) != len(avals):
            return None
        for a, k, want in zip(args, key, avals):
            if type(a) is Array:
                if k != want:
                    return None
            elif (
                not self.plain
                or self.lowered.layout is not None
                or a.dtype.itemsize >= 8
                or want.weak_type
                or (a.shape, a.dtype) != (want.shape, want.dtype)
            ):
                return None
        return key

    def call_fast(self, args: tuple, key: tuple):
        """Run on positional arguments whose `fast_key` was registered by `fast_key_for`:
        their shapes, dtypes and weak types are exactly this executable's parameters."""
        if self.plain:
            bufs = [a.buffer if type(a) is Array else pjrt.to_device(a) for a in args]
            outs = self.exe.execute_unchecked(bufs)
            if self.single_output:
                return Array.from_buffer(outs[0], self.out_avals[0])
            return self.wrap(outs)
        return self.run_arrays(args, key)  # donation: only purejit Arrays get here

    def run(self, leaves: Sequence):
        """Execute on array-likes (converted here)."""
        arrays = [as_array(x) for x in leaves]
        return self.run_arrays(arrays, [a.aval for a in arrays])

    def run_arrays(self, arrays: Sequence[Array], avals: Sequence[ShapedArray]):
        """Execute on purejit Arrays whose avals were already checked against the signature.

        The hot path: purejit checks dtypes itself (PJRT would reinterpret bits silently)."""
        if self._param_key != tuple((a.shape, a.dtype) for a in avals):
            raise TypeError(
                f"{self.lowered.name}: arguments {[str(a.type) for a in avals]} do not match "
                f"the compiled parameters {[str(t) for t in self.exe.param_types]}"
            )
        donation = self.lowered.donation
        if donation is not None and donation.aliases:
            return self._run_donating(arrays, donation)
        return self.wrap(self.exe.execute_unchecked([a.buffer for a in arrays]))

    def wrap(self, outs):
        """purejit Arrays in the output tree, from the executable's output buffers."""
        results = [Array.from_buffer(o, a) for o, a in zip(outs, self.out_avals)]
        if self.single_output:
            return results[0]
        return tree_unflatten(self.lowered.out_tree, results)

    def _run_donating(self, arrays, donation):
        paths = self.lowered.in_paths or [f"#{i}" for i in range(len(arrays))]
        bufs = [a.buffer for a in arrays]
        dn.check_donated_inputs(arrays, donation, paths, self.lowered.name)
        outs = self.exe.execute_unchecked(bufs)
        dn.consume_donated(arrays, donation, paths, self.lowered.name)
        return self.wrap(outs)

    def cost_analysis(self) -> dict:
        return self.exe.cost_analysis()

    def memory_analysis(self):
        return self.exe.memory_analysis()

    def as_text(self) -> str:
        """The optimised HLO that XLA compiled."""
        return self.exe.hlo_text()


def fast_key(args: tuple) -> tuple | None:
    """The key of a call's positional arguments on the fast path: each purejit Array's aval
    and each NumPy array's (shape, dtype); None when any argument is something else."""
    key = []
    for a in args:
        t = type(a)
        if t is Array:
            key.append(a.aval)
        elif t is np.ndarray:
            key.append((a.shape, a.dtype))
        else:
            return None
    return tuple(key)


def _leaf_array(x, path: str, fname: str) -> Array:
    if isinstance(x, Tracer):
        raise TypeError(f"{fname}: argument {path} is a traced value; call the jitted function")
    try:
        return as_array(x)
    except (TypeError, OverflowError) as e:
        raise TypeError(
            f"{fname}: argument {path} of type {type(x).__name__} is not a valid array "
            f"({e}). Pass arrays or Python scalars."
        ) from None
