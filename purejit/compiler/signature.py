"""The abstract signature of one call of a jitted function.

`ArgSpec` is made once per jitted function: its parameter names and which arguments are
static. `ArgSpec.signature(args, kwargs)` is made once per call: the static arguments, the
tree of the dynamic ones, each dynamic leaf converted to an array once (a NumPy input is
converted and checked here and nowhere else), and its abstract value. Everything downstream
— the executable cache, miss reasons, donation, buckets, export — reads this one object;
the input leaf -> argument mapping (`leaf_names`) is derived here and nowhere else.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np

from purejit import errors
from purejit.config import config
from purejit.backend import pjrt
from purejit.runtime.array import Array, as_array
from purejit.tracing import ShapedArray, Tracer, host_value
from purejit.tracing.context import dispatch_key
from purejit.tree_util import PyTreeDef, tree_flatten, tree_paths, tree_unflatten

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class ArgSpec:
    """How one function takes its arguments: parameter names and static arguments."""

    def __init__(
        self,
        fun: Callable,
        name: str,
        static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (),
    ):
        self.name = name
        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        try:
            self.signature_of_fun = inspect.signature(fun)
        except (TypeError, ValueError):
            self.signature_of_fun = None
        self.params = (
            list(self.signature_of_fun.parameters.values()) if self.signature_of_fun else []
        )
        errors.check_argnums(name, self.signature_of_fun, "static_argnums", nums, ())
        errors.check_argnums(name, self.signature_of_fun, "static_argnames", (), names)
        pnames = [p.name for p in self.params]
        # as in JAX, static_argnums and static_argnames imply each other where possible
        nums = set(nums) | {pnames.index(n) for n in names if n in pnames}
        names = set(names) | {pnames[i] for i in nums if 0 <= i < len(pnames)}
        self.static_argnums = frozenset(nums)
        self.static_argnames = frozenset(names)
        self._var = next((k for k, p in enumerate(self.params) if p.kind == p.VAR_POSITIONAL), None)

    @property
    def has_static(self) -> bool:
        return bool(self.static_argnums or self.static_argnames)

    def param_name(self, i: int) -> str:
        """The parameter name positional argument `i` binds to: `x`, `rest[0]` or `args[i]`."""
        if self._var is not None and i >= self._var:  # def f(x, *rest): rest[0], rest[1], ...
            return f"{self.params[self._var].name}[{i - self._var}]"
        if i < len(self.params) and self.params[i].kind in _POSITIONAL:
            return self.params[i].name
        return f"args[{i}]"

    def split(self, args, kwargs):
        """`(static, dyn_args, dyn_kwargs)`; `static` holds (position or name, value) pairs."""
        n = len(args)
        nums = {i + n if i < 0 else i for i in self.static_argnums}
        static, dyn_args, dyn_kwargs = [], [], {}
        for i, a in enumerate(args):
            if i in nums:
                static.append((i, a))
            else:
                dyn_args.append(a)
        for k, v in kwargs.items():
            if k in self.static_argnames:
                static.append((k, v))
            else:
                dyn_kwargs[k] = v
        for where, v in static:
            try:
                hash(v)
            except TypeError as e:
                raise ValueError(
                    f"{self.name}: static argument {where!r} has unhashable type "
                    f"{type(v).__name__} ({e}). Static arguments must be hashable: use a "
                    "tuple instead of a list, or pass arrays as non-static arguments."
                ) from None
        return tuple(static), dyn_args, dyn_kwargs

    def signature(
        self, args, kwargs, *, shapes_only: bool = False, borrow: bool = False
    ) -> CallSignature:
        """The signature of one call.

        Args:
            args, kwargs: the call's arguments.
            shapes_only: leaves may be shape specs (anything with `.shape` and `.dtype`
                but no data, or a `ShapedArray`); used by `export` and ahead-of-time lowering.
            borrow: a writeable NumPy leaf that needs no conversion is wrapped without the
                private copy (`CallSignature.borrowed`); the caller must call
                `CallSignature.own` before the call returns (purejit's dispatch, which lays
                such a leaf into a stack with one copy).
        Returns:
            A `CallSignature` whose `leaves` are Tracers or `purejit.Array`s (converted once).
        """
        static, dyn_args, dyn_kwargs = self.split(args, kwargs)
        leaves, tree = tree_flatten((tuple(dyn_args), dyn_kwargs))
        sig = CallSignature(self, static, tree, leaves, [], len(args))
        try:
            sig.leaves, sig.avals = _convert(leaves, shapes_only, sig.borrowed if borrow else None)
        except (TypeError, OverflowError):
            _raise_bad_leaf(sig, shapes_only)
        return sig


def _convert(leaves, shapes_only: bool, borrowed: list | None = None):
    """Each leaf as a Tracer, a purejit Array (None for a shape spec) and its abstract value.
    With `borrowed` (a list), a writeable NumPy array that `as_array` would copy unchanged is
    wrapped as it is, and `(index, array)` appended to `borrowed`: same abstract value, no
    copy yet."""
    out, avals = [], []
    for x in leaves:
        if type(x) is Array or isinstance(x, Tracer):
            out.append(x)
            avals.append(x.aval)
        elif shapes_only and _is_shape_spec(x):
            out.append(None)
            avals.append(ShapedArray(tuple(x.shape), np.dtype(x.dtype), False))
        else:
            if borrowed is not None and type(x) is np.ndarray and x.flags.writeable:
                v, weak = host_value(x)
                if v is x:  # what `as_array` copies: the caller's array, as it is
                    borrowed.append((len(out), x))
                    a = Array(host=x, weak_type=weak)
                else:  # converted (a copy of its own already)
                    a = Array(host=v, weak_type=weak)
            else:
                a = as_array(x)
            out.append(a)
            avals.append(a.aval)
    return out, avals


def _is_shape_spec(x) -> bool:
    if isinstance(x, ShapedArray):
        return True
    return hasattr(x, "shape") and hasattr(x, "dtype") and not hasattr(x, "__array__")


def _raise_bad_leaf(sig: CallSignature, shapes_only: bool):
    """Name the offending leaf by the user's parameter names: `params['w'][0]`."""
    for x, path in zip(sig.leaves, sig.paths):  # the leaves as the user passed them
        try:
            _convert([x], shapes_only)
        except (TypeError, OverflowError) as e:
            raise TypeError(
                f"{sig.spec.name}: argument {path} of type {type(x).__name__} is not a valid "
                f"array ({e}). Pass arrays or Python scalars, or mark it static with "
                "static_argnums / static_argnames."
            ) from None
    raise AssertionError("unreachable: some leaf failed to convert")


@dataclass
class CallSignature:
    """One call's arguments as the compiler sees them.

    Attributes:
        spec: the function's `ArgSpec`.
        static: (position or name, value) pairs of the static arguments.
        tree: the PyTreeDef of `((dynamic positional...), {dynamic keyword...})`.
        leaves: the dynamic leaves as Tracers or `purejit.Array`s (None for shape specs).
        avals: one abstract value per leaf.
        nargs: the number of positional arguments of the call, static ones included.
        borrowed: `(index, array)` per leaf whose Array holds the caller's writeable NumPy
            array itself, not a copy (`ArgSpec.signature(borrow=True)`); `own` ends that.
    """

    spec: ArgSpec
    static: tuple
    tree: PyTreeDef
    leaves: list
    avals: list
    nargs: int
    borrowed: list = field(default_factory=list)

    def own(self, keep: frozenset[int] | set[int] = frozenset()) -> None:
        """Give every borrowed leaf but those in `keep` a copy of its own, as `as_array`
        would have (a buffer made from the caller's memory meanwhile is dropped: jaxlib's CPU
        client may share that memory). A leaf whose Array no longer holds the caller's
        array (a stacked dispatch rebound it to a row of the stack it copied it into) needs
        nothing. With `keep` empty nothing is borrowed after it: a call must end with that,
        so that a caller's array mutated after the call changes nothing purejit holds."""
        left = []
        for i, x in self.borrowed:
            a = self.leaves[i]
            if a._host is not x:
                continue
            if i in keep:
                left.append((i, x))
                continue
            a._buf = None
            a._host = x.copy()
        self.borrowed = left

    @property
    def key(self) -> tuple:
        """What the in-memory executable cache is keyed on."""
        # this thread's bound axes change what tracing produces, as the global options do
        return (self.tree, tuple(self.avals), self.static, config.trace_context, dispatch_key())

    @functools.cached_property
    def leaf_names(self) -> list[tuple[str, str]]:
        """(argument name, leaf path) per dynamic leaf: `("params", "params['w'][0]")`."""
        static_pos = {k for k, _ in self.static if isinstance(k, int)}
        dyn_pos = [i for i in range(self.nargs) if i not in static_pos]
        args_td, kwargs_td = self.tree.children
        out: list[tuple[str, str]] = []
        for j, td in enumerate(args_td.children):
            arg = self.spec.param_name(dyn_pos[j])
            out += [(arg, p) for p in tree_paths(td, arg)]
        for k, td in zip(kwargs_td.aux, kwargs_td.children):
            out += [(k, p) for p in tree_paths(td, k)]
        return out

    @property
    def paths(self) -> list[str]:
        """A readable path per dynamic leaf, rooted at the parameter names."""
        return [p for _, p in self.leaf_names]

    def static_names(self) -> list[tuple[str, object]]:
        """(parameter name, value) per static argument."""
        return [(self.spec.param_name(k) if isinstance(k, int) else k, v) for k, v in self.static]

    def rebuild(self, leaves: Sequence) -> tuple[list, dict]:
        """The call's `(args, kwargs)` with `leaves` in place of the dynamic leaves."""
        dyn_args, dyn_kwargs = tree_unflatten(self.tree, list(leaves))
        args, it = [], iter(dyn_args)
        pos = dict((k, v) for k, v in self.static if isinstance(k, int))
        for i in range(len(dyn_args) + len(pos)):
            args.append(pos[i] if i in pos else next(it))
        kwargs = dict(dyn_kwargs)
        kwargs.update((k, v) for k, v in self.static if isinstance(k, str))
        return args, kwargs

    def with_avals(self, avals: Sequence[ShapedArray]) -> CallSignature:
        """The same call at other abstract values (bucket padding, probes)."""
        return replace(self, avals=list(avals))

    def arg_mask(self, nums: frozenset[int], names: frozenset[str]) -> tuple[bool, ...]:
        """One bool per dynamic leaf: does it belong to a positional argument in `nums`
        (negative positions count from the end of the call) or a keyword in `names`?"""
        n = self.nargs
        static_pos = {k for k, _ in self.static if isinstance(k, int)}
        dyn_pos = [i for i in range(n) if i not in static_pos]
        want = {i % n for i in nums if -n <= i < n} if n else set()
        args_td, kwargs_td = self.tree.children
        mask: list[bool] = []
        for j, td in enumerate(args_td.children):
            mask += [dyn_pos[j] in want] * td.num_leaves
        for k, td in zip(kwargs_td.aux, kwargs_td.children):
            mask += [k in names] * td.num_leaves
        return tuple(mask)


def committed_device(sig: CallSignature, fname: str):
    """The device other than the default one that the call's arguments are committed to,
    else None. Arguments on the default device or over several devices do not count (the
    executable's device gets a copy of them), so `f(device_put(x, d3), jnp.ones(3))` runs
    on d3 as in JAX.

    Raises:
        ValueError: arguments committed to two devices other than the default, naming them.
    """
    if not pjrt.several_devices():  # one device: nothing to choose (and no per-call cost)
        return None
    found = None  # (device, leaf index)
    default = None
    for i, a in enumerate(sig.leaves):
        buf = getattr(a, "_buf", None)
        if buf is None or not pjrt.is_committed_to_one_device(buf):
            continue
        (dev,) = buf.devices()
        default = pjrt.default_device() if default is None else default
        if dev == default:
            continue
        if found is None:
            found = (dev, i)
        elif dev != found[0]:
            paths = sig.paths
            raise ValueError(
                f"{fname}: argument {paths[found[1]]} is committed to {found[0]} but argument "
                f"{paths[i]} to {dev}; a jitted computation runs on one device. Move them to "
                "one device first (purejit.device_put(x, device))."
            )
    return None if found is None else found[0]
