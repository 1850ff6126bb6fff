"""Calling a program whose entry takes stacks of the user's leaves (`stacked_params.py`).

For each group of leaves, the stack passed is, in this order:

  (a) found: every leaf is a purejit Array that is the row, at the leaf's offset, of one
      live stack of the group's type (`Array.row`; materialised or not), as the previous
      call left them: that stack, no copy, no view, no wait;
  (b) built on the host: when some leaf is host data (a NumPy array, a purejit Array not on
      a device yet), or the device is the CPU (its memory is the host's), or it is the
      group's first build: the leaves' bytes laid at their offsets in one NumPy array (a
      lazy row read from one host copy of its stack), transferred once;
  (c) built on the device (a GPU, every leaf a device buffer or a row, the group built once
      before in this process; a lazy row is materialised as its view): a zeroed stack, then
      one small cached executable per leaf shape writes each leaf at its offset in place
      (`dynamic_update_slice` at a runtime offset, the stack donated), once per leaf. Those
      executables are compiled on first use (on CPU: 5 shapes of the 48-layer transformer,
      0.25 s; then 37 ms a build against the host route's 44 ms), so a group's first build,
      on a program's first call, goes through the host (b) instead: a first call compiles
      nothing but the program.

After a call that does not donate the group, the leaves' Arrays are rebound to lazy rows of
the stack just built (same values, no view made), so that the next call finds it (a). A
donated group donates its stack: the leaves' Arrays are deleted after the call, as any
donated Array; a found stack is donated only when no view of it lives (not even one made of
a row of the group: a program reading it may still run) and no other argument reads it:
otherwise a copy is built and donated. The stacked outputs are lazy rows of their
stack (`outputs`): a donated training step makes no view and waits for nothing.

jaxlib's C++ dispatch maps one leaf to one parameter, so a program with groups always runs
here (`Compiled.fast_key_for` and `cpp_dispatch.fastpath_for` decline it).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import OrderedDict
from types import SimpleNamespace

import numpy as np

from purejit.backend import pjrt, row_views, stablehlo
from purejit.compiler import donation as dn
from purejit.compiler.stacked_params import Group, StackPlan
from purejit.ir import Builder, TensorType
from purejit.runtime.array import Array

_new = object.__new__


class _Recent:
    """A map that keeps its `size` most recently written entries, under its own lock (what
    this module remembers per group: bounded however many programs a process compiles)."""

    def __init__(self, size: int):
        self._entries: OrderedDict = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def __setitem__(self, key, value) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def __getitem__(self, key):
        with self._lock:
            return self._entries[key]

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._entries

    def pop(self, key, default=None):
        with self._lock:
            return self._entries.pop(key, default)


# how each group's last stack was made ("found", "host", "device"), for tests and benches
LAST = _Recent(256)


def stack_of(a) -> tuple | None:
    """`(stack, offset)` when `a` is a purejit Array that is a row of a live stack (lazy or
    materialised as a view), else None."""
    row = a._row if type(a) is Array else None
    if row is None or row[0].is_deleted() or a._deleted_by is not None:
        return None
    return row[0], row[1]


def _found(g: Group, arrays: list):
    """The live stack whose rows `arrays` are, at `g`'s offsets, else None."""
    first = arrays[0]._row
    if first is None:
        return None
    stack = first[0]
    if tuple(stack.shape) != g.stack_type.shape or np.dtype(stack.dtype) != g.stack_type.dtype:
        return None
    if stack.is_deleted():
        return None
    for a, off in zip(arrays, g.offsets):
        # a row of this stack at `off`, with no buffer but the view made of that row
        row = a._row
        if row is None or row[0] is not stack or row[1] != off or a._buf is not row[3]:
            return None
        if a._deleted_by is not None:
            return None
    return stack


def _host_bytes(a: Array) -> np.ndarray:
    # no `a.host`: that would keep a host copy of a device array on the Array
    if a._buf is not None:
        return np.asarray(a._buf)
    if a._host is not None:
        return a._host
    # a lazy row: its piece of the stack read on the host (jax keeps that host copy on the
    # stack, so the other rows of it read the same copy)
    stack, offset, shape, _ = a._row
    return np.asarray(stack).reshape(-1)[offset : offset + a.size]


# per group, the host array its last host build laid out, for the next build to reuse: one
# stack's bytes per group, for the 8 groups built on the host most recently
_POOL = _Recent(8)


def _aligned_empty(n: int, dtype: np.dtype) -> np.ndarray:
    """An uninitialised 1-D array of `n` elements at a 64-byte aligned address: jaxlib's CPU
    client transfers such an array without copying it (another it copies, 36 MiB in 25 ms
    at 48 layers)."""
    raw = np.empty(n * dtype.itemsize + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start : start + n * dtype.itemsize].view(dtype)


def _host_array(g: Group) -> np.ndarray:
    """The host array (of the stack's shape) to lay `g`'s stack out in: the last build's
    when nothing else holds it any more (jaxlib keeps a reference to an array a device
    buffer shares until that buffer and every program reading it are done), else a fresh
    one. Reusing it saves mapping and faulting in fresh pages (a fresh 36 MiB array took
    8 to 120 ms to fill here)."""
    shaped = _POOL.pop(g)
    # held by this frame and getrefcount's argument alone, and its memory by it alone: no
    # buffer shares it now
    if shaped is not None and sys.getrefcount(shaped) == 2 and sys.getrefcount(shaped.base) == 2:
        return shaped
    flat = _aligned_empty(g.stack_type.size, g.stack_type.dtype)
    return flat if g.stack_type.rank == 1 else flat.reshape(g.stack_type.shape)


def build_on_host(g: Group, arrays: list, device):
    """The group's stack laid out on the host and transferred once (route (b))."""
    shaped = _host_array(g)
    out = shaped.reshape(-1)  # a view of it
    for a, off in zip(arrays, g.offsets):
        src = _host_bytes(a).reshape(-1)
        out[off : off + src.size] = src
    del out
    stack = pjrt.to_device(shaped, device)  # what jaxlib holds is what the pool checks
    _POOL[g] = shaped
    return stack


@functools.lru_cache(maxsize=256)
def _updater(stack_type: TensorType, shape: tuple, device):
    """An executable writing a leaf of `shape` into a donated stack at a runtime offset."""
    b = Builder("stack_update")
    stack = b.param(stack_type)
    leaf = b.param(TensorType(shape, stack_type.dtype))
    offset = b.param(TensorType((), np.dtype(np.int32)))
    size = int(np.prod(shape, dtype=np.int64))
    (flat,) = b.op("reshape", [leaf], {"shape": [size]})
    (whole,) = b.op("reshape", [stack], {"shape": [stack_type.size]})
    (out,) = b.op("dynamic_update_slice", [whole, flat, offset])
    (out,) = b.op("reshape", [out], {"shape": list(stack_type.shape)})
    fn = b.finish([out])
    text = stablehlo.emit(fn, arg_attrs=["{tf.aliasing_output = 0 : i32}", "", ""])
    return pjrt.compile(text, fn.param_types, fn.result_types, device=device)


@functools.lru_cache(maxsize=4096)
def _offset_buffer(offset: int, device):
    return pjrt.to_device(np.asarray(offset, np.int32), device)


def build_on_device(g: Group, arrays: list, device):
    """The group's stack written on the device, one in-place update per leaf (route (c))."""
    stack = pjrt.to_device(np.zeros(g.stack_type.shape, g.stack_type.dtype), device)
    for a, off, shape in zip(arrays, g.offsets, g.shapes):
        exe = _updater(g.stack_type, tuple(shape), device)
        leaf = pjrt.on_device(a.buffer, device)  # a lazy row: its view made now
        (stack,) = exe.execute_unchecked([stack, leaf, _offset_buffer(off, device)])
    return stack


# groups built once already in this process (on a GPU, the next build is on the device); a
# group forgotten here is built on the host once more
_BUILT = _Recent(256)


def _build(g: Group, arrays: list, device):
    first = g not in _BUILT
    _BUILT[g] = True
    # host data goes through the host; a lazy row is read as its view on the device route
    if device.platform == "cpu" or first or any(a._buf is None and a._row is None for a in arrays):
        return build_on_host(g, arrays, device), "host"
    return build_on_device(g, arrays, device), "device"


def _others_view(stack, readers: dict, members: frozenset[int]) -> bool:
    """Whether an argument outside the group (`readers`: id of a stack -> the indices of the
    call's arguments that are rows of it), or any view at all, reads `stack`. A view made of
    one of the group's own rows counts too: a program reading that view may still run (PJRT
    orders a donation after the uses of the donated buffer, not of views into it), and
    donating the stack would let the call overwrite what it reads."""
    if not members.issuperset(readers.get(id(stack), ())):
        return True
    return row_views.live_views_of(stack) > 0


class _CallData:
    """What `execute` reads of a compiled program on every call, worked out on its first
    (`Compiled.stack_call`)."""

    __slots__ = ("plan", "exe", "device", "paths", "name", "aliases", "donating", "reasons")
    __slots__ += ("members", "leaf_params", "donated_leaf_params")

    def __init__(self, compiled):
        lowered = compiled.lowered
        plan: StackPlan = lowered.stack_plan
        self.plan = plan
        self.exe = compiled.exe
        self.device = compiled.exe.device or pjrt.default_device()
        self.paths = lowered.in_paths or [f"#{i}" for i in range(plan.n_leaves)]
        self.name = lowered.name
        donation = lowered.donation
        self.aliases = donation.aliases if donation is not None else {}
        donated = {i for g in plan.groups if g.donated for i in g.leaves}
        for p, (kind, i) in enumerate(plan.sources):
            if kind == "leaf" and p in self.aliases:
                donated.add(i)
        # what `donation.check_donated_inputs` takes: the donated leaves (None: none)
        self.donating = SimpleNamespace(aliases=frozenset(donated)) if donated else None
        # why a leaf is deleted after a call (donated, or in a group whose stack is), per leaf
        deleted = set(donated)
        for p, (kind, i) in enumerate(plan.sources):
            if kind == "group" and p in self.aliases:
                deleted.update(plan.groups[i].leaves)
        self.reasons = {i: dn.donated_reason(self.paths[i], self.name) for i in deleted}
        self.members = [frozenset(g.leaves) for g in plan.groups]  # per group
        # (parameter, leaf index) of each parameter that takes one leaf; those donated
        self.leaf_params = [(p, i) for p, (kind, i) in enumerate(plan.sources) if kind == "leaf"]
        self.donated_leaf_params = [i for p, i in self.leaf_params if p in self.aliases]


def _call_data(compiled) -> _CallData:
    data = compiled.stack_call
    if data is None:
        data = compiled.stack_call = _CallData(compiled)
    return data


def execute(compiled, arrays: list, borrowed: set[int] | frozenset[int] = frozenset()) -> list:
    """Run `compiled` (whose lowering has a `StackPlan`) on the user's leaves `arrays`
    (purejit Arrays, checked against the signature); returns the output buffers.
    `borrowed`: indices of group leaves whose Array holds the caller's NumPy array itself (no
    copy of its own, `CallSignature.borrowed`): copied into the stack built, then rebound to
    rows of it as device leaves are, so nothing holds the caller's memory after the call."""
    c = compiled.stack_call or _call_data(compiled)
    plan, aliases = c.plan, c.aliases
    # one pass over the arguments: `Array._check_alive` inlined (each stack asked once);
    # what each holds, for the check that a donated buffer is not passed twice; and
    # which arguments are rows of which stack (id of the stack -> indices)
    held, readers, alive = [], {}, None
    for k, a in enumerate(arrays):
        if a._deleted_by is not None:
            raise a.deleted_error()
        buf, row = a._buf, a._row
        if buf is not None:
            if buf.is_deleted():
                raise a.deleted_error()
            held.append(id(buf))
        if row is not None:
            stack = row[0]
            if stack is not alive:
                if stack.is_deleted():
                    raise a.deleted_error()
                alive = stack
            readers.setdefault(id(stack), []).append(k)
            if buf is None:  # a lazy row: the same piece of the same stack is one buffer
                held.append((id(stack), row[1]))
    # a donated buffer passed as another argument too: the same error as without groups
    if c.donating is not None and len(set(held)) != len(held):
        dn.check_donated_inputs(arrays, c.donating, c.paths, c.name)
    bufs: list = [None] * len(plan.sources)
    for p, i in c.leaf_params:
        a = arrays[i]
        # alive (checked above): its buffer, else host data transferred (or a row's view)
        bufs[p] = a._buf if a._buf is not None else a.buffer
    made = []
    for p, (kind, i) in enumerate(plan.sources):
        if kind == "leaf":
            continue
        g = plan.groups[i]
        members = [arrays[k] for k in g.leaves]
        stack, how = _found(g, members), "found"
        if stack is not None and p in aliases and _others_view(stack, readers, c.members[i]):
            stack = None  # donating it would change what other views read
        if stack is None:
            # host data is not adopted, but for the signature's borrowed wraps of NumPy
            # leaves (read before the build, which moves nothing)
            on_device = [
                a._buf is not None or a._row is not None or k in borrowed
                for a, k in zip(members, g.leaves)
            ]
            stack, how = _build(g, members, c.device)
            made.append((p in aliases, g, members, stack, on_device))
        elif p in aliases:
            made.append((True, g, members, stack, None))
        LAST[g] = how
        bufs[p] = stack
    outs = c.exe.execute_unchecked(bufs)
    reasons = c.reasons
    for i in c.donated_leaf_params:
        # XLA took the buffer over: `Array.delete(consumed=True)` inlined
        a = arrays[i]
        a._buf = a._host = a._row = None
        a._deleted_by = reasons[i]
    for donated, g, members, stack, on_device in made:
        if donated:
            # the leaves are deleted as donating them would have: a built stack's own
            # buffers freed, a found stack's rows dropped and the views made of them deleted
            # (their memory is the output's now); `Array.delete` inlined
            for a, k in zip(members, g.leaves):
                if a._buf is not None:
                    a._buf.delete()
                a._buf = a._host = a._row = None
                a._deleted_by = reasons[k]
        else:
            adopt(g, [a if d else None for a, d in zip(members, on_device)], stack)
    return outs


def adopt(g: Group, members: list, stack) -> None:
    """Rebind the group's leaves that were device arrays (purejit Arrays; `members[k]` or
    None when not rebound) to lazy rows of `stack` (same values, no view made), so that the
    next call finds it."""
    for a, off, shape in zip(members, g.offsets, g.shapes):
        if a is not None:
            a._buf = a._host = None
            a._row = (stack, off, tuple(shape), None)


def outputs(plan: StackPlan, outs: list, out_avals: list) -> list:
    """The user's output leaves (purejit Arrays) from the entry's results `outs`: a
    stacked result's leaves are lazy rows of it (`Array.row`: no view, no wait), which the
    next call finds."""
    if not plan.out_groups:
        return [Array.from_buffer(o, a) for o, a in zip(outs, out_avals)]
    results: list = [None] * len(out_avals)
    from_buffer = Array.from_buffer
    for buf, (kind, j) in zip(outs, plan.out_sources):
        if kind == "leaf":
            results[j] = from_buffer(buf, out_avals[j])
            continue
        h = plan.out_groups[j]
        for k, off in zip(h.leaves, h.offsets):
            # `Array.row` inlined
            a = results[k] = _new(Array)
            aval = out_avals[k]
            a._buf = a._host = a._deleted_by = None
            a._row = (buf, off, aval.shape, None)
            a.aval = aval
            a._weak = aval.weak_type
    return results
