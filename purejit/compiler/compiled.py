"""`Compiled`: an XLA executable for one signature of a jitted function, callable."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from purejit.backend import pjrt
from purejit.compiler import donation as dn
from purejit.compiler import stacked_dispatch
from purejit.runtime.array import Array, as_array, deleted_error_of
from purejit.tracing import ShapedArray, Tracer
from purejit.tree_util import flatten_one_level, tree_flatten, tree_paths, tree_unflatten


ELSEWHERE = object()  # call_fast's answer when an argument is on another device


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
        # with several devices an argument may sit elsewhere: check before executing
        self._placed = lowered.layout is None and pjrt.several_devices()
        # stacks of leaves passed as one parameter (`stacked_dispatch`): leaves' types here
        self.stacked = getattr(lowered, "stack_plan", None) is not None
        # the leaves laid into stacks (a NumPy one is copied once, into its stack)
        self.stacked_leaves: frozenset[int] = frozenset()
        self.stack_call = None  # what its stacked dispatch reads per call (made on the first)
        if self.stacked:
            self._param_key = tuple((a.shape, a.dtype) for a in lowered.in_avals)
            self.stacked_leaves = frozenset(i for g in lowered.stack_plan.groups for i in g.leaves)

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

    def fast_key_for(self, args: tuple, sig_leaves: Sequence, avals: Sequence[ShapedArray]):
        """The `fast_flatten` key under which a call with these positional `args` may skip
        the signature next time, or None when it must not.

        Each leaf must be one whose abstract value the signature kept unchanged: a purejit
        Array (its aval is the key, and the signature kept the very same object, which also
        proves both flattened in the same order), or a NumPy array of a dtype narrower than 64
        bits (never weak, never canonicalised, so its shape and dtype are the key) for a
        one-device program, at a parameter it does not donate (a training step's batch: the
        transfer may share the NumPy array's memory, which a donated parameter would hand to
        an output; the signature copies such an array first)."""
        flat = fast_flatten(args)
        if flat is None:
            return None
        key, leaves = flat
        donated = self._fast_donated()
        if donated is None or len(leaves) != len(avals):
            return None
        for i, (a, given, want) in enumerate(zip(leaves, sig_leaves, avals)):
            if type(a) is Array:
                if a is not given or a.aval != want:
                    return None
            elif (
                (i < len(donated) and donated[i])
                or self.lowered.layout is not None
                or a.dtype.itemsize >= 8
                or want.weak_type
                or (a.shape, a.dtype) != (want.shape, want.dtype)
            ):
                return None
        return key

    def _fast_donated(self) -> Sequence[bool] | None:
        """For `fast_key_for`: per leaf whether the program donates it, aliased or not
        (`donated` is per parameter; with stacks of leaves, per leaf); None when no call may
        take the fast path."""
        if self.stacked:  # (never jaxlib's C++ path: it maps one leaf to one parameter)
            return None if self._placed else self.lowered.leaf_donated
        return () if self.plain else self.lowered.donation.donated

    def call_fast(self, leaves: list):
        """Run on the leaves of positional arguments whose `fast_flatten` key was registered
        by `fast_key_for`: their shapes, dtypes and weak types are exactly this executable's
        parameters. `ELSEWHERE` when an argument sits on another device than the program's
        (the signature path then picks the program for that device)."""
        if self.stacked:
            # a NumPy leaf (never donated, never weak: `fast_key_for`) is read during the
            # call: laid into its stack, or transferred as a parameter of its own
            # (the key's hit proved each leaf's shape and dtype the parameter's, which
            # `run_arrays` would check again)
            return self._run_stacked([a if type(a) is Array else Array(host=a) for a in leaves])
        if self.plain:
            # `_buf` read directly: a buffer that C++ dispatch donated fails in `_execute`
            bufs = [
                a._buf if type(a) is Array and a._buf is not None else _to_device(a) for a in leaves
            ]
            if self._placed and _off_device(self.exe, bufs, leaves):
                return ELSEWHERE  # an argument on another device: the signature path decides
            outs = _execute(self.exe, bufs, leaves)
            if self.single_output:
                return Array.from_buffer(outs[0], self.out_avals[0])
            return self.wrap(outs)
        # donation runs on purejit Arrays: a NumPy leaf (never at a donated parameter)
        # becomes one at the parameter's type (`fast_key_for` checked its shape and dtype,
        # and that the parameter is not weak)
        if self._placed:  # as above: the program for another device is another Compiled
            on = [a._buf for a in leaves if type(a) is Array and a._buf is not None]
            if _off_device(self.exe, on, leaves):
                return ELSEWHERE
        avals = self.lowered.in_avals
        arrays = [
            a if type(a) is Array else Array.from_buffer(pjrt.to_device(a), avals[i])
            for i, a in enumerate(leaves)
        ]
        return self.run_arrays(arrays, [a.aval for a in arrays])

    def run(self, leaves: Sequence):
        """Execute on array-likes (converted here)."""
        arrays = [as_array(x) for x in leaves]
        return self.run_arrays(arrays, [a.aval for a in arrays])

    def run_arrays(self, arrays: Sequence[Array], avals: Sequence[ShapedArray], borrowed=()):
        """Execute on purejit Arrays whose avals were already checked against the signature.
        `borrowed`: `(index, array)` per leaf of `stacked_leaves` whose Array holds the
        caller's NumPy array itself (`CallSignature.borrowed`): laid into its stack, then
        rebound to a row of it.

        The hot path: purejit checks dtypes itself (PJRT would reinterpret bits silently)."""
        if self._param_key != tuple((a.shape, a.dtype) for a in avals):
            raise TypeError(
                f"{self.lowered.name}: arguments {[str(a.type) for a in avals]} do not match "
                f"the compiled parameters {[str(t) for t in self.exe.param_types]}"
            )
        if self.stacked:
            return self._run_stacked(list(arrays), {i for i, _ in borrowed})
        donation = self.lowered.donation
        if donation is not None and donation.aliases:
            return self._run_donating(arrays, donation)
        bufs = [a._buf if a._buf is not None else a.buffer for a in arrays]
        if self._placed and _off_device(self.exe, bufs, arrays):
            bufs = self.exe.on_my_device(bufs)
        return self.wrap(_execute(self.exe, bufs, arrays))

    def _run_stacked(self, arrays: list, borrowed=frozenset()):
        """Run through `stacked_dispatch` on checked Arrays (`run_arrays`)."""
        outs = stacked_dispatch.execute(self, arrays, borrowed)
        results = stacked_dispatch.outputs(self.lowered.stack_plan, outs, self.out_avals)
        return results[0] if self.single_output else tree_unflatten(self.lowered.out_tree, results)

    def wrap(self, outs):
        """purejit Arrays in the output tree, from the executable's output buffers."""
        if self.stacked:  # stacks of outputs: their leaves are lazy rows
            results = stacked_dispatch.outputs(self.lowered.stack_plan, outs, self.out_avals)
        else:
            results = [Array.from_buffer(o, a) for o, a in zip(outs, self.out_avals)]
        if self.single_output:
            return results[0]
        return tree_unflatten(self.lowered.out_tree, results)

    def _run_donating(self, arrays, donation):
        paths = self.lowered.in_paths or [f"#{i}" for i in range(len(arrays))]
        bufs = [a.buffer for a in arrays]
        if self._placed and self.exe.off_device(bufs):
            bufs = self.exe.on_my_device(bufs)
        dn.check_donated_inputs(arrays, donation, paths, self.lowered.name)
        outs = self.exe.execute_unchecked(bufs)
        dn.consume_donated(arrays, donation, paths, self.lowered.name)
        return self.wrap(outs)

    @property
    def args_info(self):
        """The arguments ((args, kwargs)), each leaf a `purejit.stages.ArgInfo`."""
        return self.lowered.args_info

    def cost_analysis(self) -> dict:
        return self.exe.cost_analysis()

    def memory_analysis(self):
        return self.exe.memory_analysis()

    def as_text(self) -> str:
        """The optimised HLO that XLA compiled."""
        return self.exe.hlo_text()


def fast_flatten(args: tuple) -> tuple[tuple, list] | None:
    """The key and the leaves of a call's positional arguments on the fast path, or None when
    some argument holds anything but purejit Arrays and NumPy arrays in plain tuples, lists,
    dicts, Nones and other registered pytree nodes with hashable aux data.

    The key holds each purejit Array's aval (a `ShapedArray` as its `(shape, dtype,
    weak_type)`: what its equality compares, hashed and compared in C where the dataclass's
    own hash and equality run in Python twice a lookup), each NumPy array's (shape, dtype)
    and, for each container, its type and length (a dict: its sorted keys), so it names the
    tree as well as the leaves; the leaves come in `tree_flatten`'s order (a dict's values by
    sorted key)."""
    key: list = []
    leaves: list = []
    for a in args:
        if not _flatten_into(a, key, leaves):
            return None
    return tuple(key), leaves


def _flatten_into(x, key: list, leaves: list) -> bool:
    t = type(x)
    if t is Array:
        a = x.aval
        # another aval class (none equals a tuple) keeps its own equality
        key.append((a.shape, a.dtype, a.weak_type) if type(a) is ShapedArray else a)
        leaves.append(x)
    elif t is np.ndarray:
        key.append((x.shape, x.dtype))
        leaves.append(x)
    elif t is tuple or t is list:
        key.append((t, len(x)))
        for c in x:
            if type(c) is Array and type(c.aval) is ShapedArray:  # the first branch, inlined
                a = c.aval
                key.append((a.shape, a.dtype, a.weak_type))
                leaves.append(c)
            elif not _flatten_into(c, key, leaves):
                return False
    elif t is dict:
        try:
            names = tuple(sorted(x))
        except TypeError:
            return False
        key.append((dict, names))
        for n in names:
            c = x[n]
            if type(c) is Array and type(c.aval) is ShapedArray:  # as above
                a = c.aval
                key.append((a.shape, a.dtype, a.weak_type))
                leaves.append(c)
            elif not _flatten_into(c, key, leaves):
                return False
    elif x is None:
        key.append(None)
    else:
        # another registered node (a typed PRNG key, a user's dataclass): its type and aux
        # data name it, as in the signature's tree; unhashable aux data takes the slow path
        try:
            children, aux = flatten_one_level(x)
        except ValueError:  # a leaf purejit does not take here (a Python scalar, ...)
            return False
        try:
            hash(aux)
        except TypeError:
            return False
        key.append((t, aux, len(children)))
        for c in children:
            if not _flatten_into(c, key, leaves):
                return False
    return True


def _to_device(a):
    """The device buffer of a purejit Array or a NumPy array (transferred)."""
    return a.buffer if type(a) is Array else pjrt.to_device(a)


def _execute(exe, bufs: list, leaves: Sequence):
    """`exe` run on `bufs` (those of `leaves`): where PJRT refuses a buffer that a call in
    jaxlib's C++ dispatch donated, purejit's `DeletedArrayError` instead of jaxlib's error."""
    try:
        return exe.execute_unchecked(bufs)
    except Exception:
        _raise_if_deleted(leaves)
        raise


def _off_device(exe, bufs: list, leaves: Sequence) -> bool:
    """`exe.off_device(bufs)`, with purejit's error for a buffer that C++ dispatch donated
    (jaxlib no longer tells its devices)."""
    try:
        return exe.off_device(bufs)
    except Exception:
        _raise_if_deleted(leaves)
        raise


def _raise_if_deleted(leaves: Sequence):
    error = deleted_error_of(leaves)
    if error is not None:
        raise error from None


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
