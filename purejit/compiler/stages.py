"""JAX's ahead-of-time stages before `Lowered`: `jit(f).trace(*args)` gives a `Traced`
(the program as purejit IR, before any pass), whose `lower()` gives the `Lowered`."""

from __future__ import annotations

from dataclasses import dataclass, field

from purejit.compiler.lower import JitConfig, Lowered, lower, trace
from purejit.compiler.signature import CallSignature
from purejit.ir import Function, print_function
from purejit.tracing import ShapedArray
from purejit.tree_util import PyTreeDef


@dataclass
class Jaxpr:
    """A traced program as purejit IR (what `make_jaxpr` and `Traced.jaxpr` show).

    `fn` is the IR function before any pass; `str()` prints it. Its parameters are the
    flattened inputs (`in_avals`), its results the flattened outputs (`out_avals`, in the
    structure `out_tree`).
    """

    fn: Function
    in_avals: list[ShapedArray]
    out_avals: list[ShapedArray]
    out_tree: PyTreeDef

    @property
    def jaxpr(self) -> Function:
        return self.fn

    @property
    def eqns(self) -> list:
        """The program's top-level ops (JAX's equations)."""
        return list(self.fn.ops)

    def __str__(self) -> str:
        return print_function(self.fn)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


@dataclass
class Traced:
    """`jit(f).trace(*args)`: the traced program for one call signature; `lower()` runs
    the passes and emits StableHLO."""

    config: JitConfig
    signature: CallSignature
    stats: object = None
    cache_slot: object = field(default=None, repr=False)  # see `Lowered.cache_slot`
    _traced: tuple | None = field(default=None, repr=False)

    def _trace(self):
        if self._traced is None:
            t, out_tree = trace(self.config, self.signature)
            self._traced = (t, out_tree)
        return self._traced

    @property
    def jaxpr(self) -> Jaxpr:
        t, out_tree = self._trace()
        return Jaxpr(t.fn, list(self.signature.avals), list(t.out_avals), out_tree)

    @property
    def out_info(self):
        """The outputs' shapes and dtypes, as `ShapedArray`s in the output structure."""
        t, out_tree = self._trace()
        return out_tree.unflatten(list(t.out_avals))

    def lower(self) -> Lowered:
        """Optimise and emit (`jit(f).lower(*args)` for this signature)."""
        lowered = lower(self.config, self.signature, self.stats)
        lowered.cache_slot = self.cache_slot
        return lowered


__all__ = ["Jaxpr", "Traced"]
