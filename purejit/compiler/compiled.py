"""`Compiled`: an XLA executable for one signature of a jitted function, callable."""

from __future__ import annotations

from typing import Sequence

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
