"""The traces of a jitted function called inside another trace, kept per signature.

A deep model written as a Python loop over a jitted layer calls that layer once per layer
inside the outer trace, each call at the same abstract values. Tracing the layer's Python
again for every call is most of the outer trace's time; JAX keeps one trace per function
and signature for the same reason. `Callees.trace` traces once per signature key (the
executable cache's key: argument tree, avals, static values, the options that change
tracing and the bound axes) and hands each later call a copy of the traced function with
fresh values (`Function.copy`), so no two call ops share a region or a value and every pass
sees what a fresh trace would have made.

A trace is kept only when reusing it cannot differ from tracing again:

- it reads no value of an enclosing trace and no concrete array (no captures), and its
  inputs are not all concrete arrays (such a trace may read their values);
- nothing in it has an effect (host callbacks, collectives, ordered effects: their tokens
  and order belong to one trace);
- tracing it left nothing for the enclosing lowering to collect (differentiation records,
  a checkpoint policy's pins, transformation notes, attention-rewrite reports), which a
  reused trace would not leave again.

As with JAX, a function traced once does not run its Python again for a later call with
the same signature (a `print` in it prints once).
"""

from __future__ import annotations

import collections
import threading

from purejit.compiler.lower import trace
from purejit.passes.base import has_effect
from purejit.runtime.array import Array
from purejit.tracing import context

# signatures kept per jitted function (the least recently used is dropped)
CAPACITY = 16


class Callees:
    """One jitted function's kept traces: signature key -> (function, output tree, weak
    types of the outputs)."""

    def __init__(self):
        self._table: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def trace(self, jc, sig):
        """`(fn, captures, weak, out_tree)` of `jc.fun` at `sig`: a kept trace's copy, or
        `purejit.compiler.lower.trace(jc, sig)` run now and kept when it may be."""
        key = _key(sig)
        if key is not None:
            with self._lock:
                hit = self._table.get(key)
                if hit is not None:
                    self._table.move_to_end(key)
            if hit is not None:
                self.hits += 1
                fn, out_tree, weak = hit
                return fn.copy(), [], weak, out_tree
        traced, out_tree, clean = _traced(jc, sig)
        weak = tuple(a.weak_type for a in traced.out_avals)
        if key is not None and clean and not traced.captures and _pure(traced.fn):
            with self._lock:
                self._table[key] = (traced.fn.copy(), out_tree, weak)
                while len(self._table) > CAPACITY:
                    self._table.popitem(last=False)
        return traced.fn, traced.captures, weak, out_tree

    def clear(self):
        with self._lock:
            self._table.clear()


def _key(sig):
    """The kept trace's key, or None when this call's trace must not be kept."""
    if all(type(x) is Array for x in sig.leaves):  # concrete inputs: tracing may read them
        return None
    try:
        key = sig.key
        hash(key)
    except TypeError:  # an unhashable static value
        return None
    return key


def _traced(jc, sig):
    """`trace(jc, sig)`, and whether tracing left nothing for an enclosing collector (what
    it did leave is passed on to the enclosing collectors as if collected there)."""
    with (
        context.collecting_remat_records() as records,
        context.collecting_pins() as pins,
        context.collecting_notes() as notes,
        context.collecting_attention_reports() as reports,
    ):
        traced, out_tree = trace(jc, sig)
    # pins and notes reached every enclosing collector already; records and reports went
    # to the innermost one only, which was ours
    for r in records:
        context.remat_record(r)
    outer = context.ctx.attention_reports
    if reports and outer:
        outer[-1].extend(reports)
    return traced, out_tree, not (records or pins or notes or reports)


def _pure(fn) -> bool:
    return not any(has_effect(op) for op in fn.ops)
