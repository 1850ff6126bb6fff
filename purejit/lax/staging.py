"""How code is staged into the program, as jax.lax names it:

    composite(decomposition, name, version=0)  a named function kept as one `call` op
    platform_dependent(*args, default=None, **per_platform)
    dce_sink(val, *, prevent_mlir_dce=False)

A composite's meaning is its decomposition: purejit stages it as one `call` op named `name`
(what `explain` and the emitted module show), whose derivative and batching are the
decomposition's, as JAX's. purejit compiles every program for one platform, the default
device's, so `platform_dependent` picks that platform's branch while tracing; XLA would
have compiled only that branch of JAX's staged conditional too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from purejit import errors
from purejit.backend import pjrt
from purejit.lax._lift import lift as _lift
from purejit.tracing import Tracer, aval_of, bind, trace_to_function
from purejit.tree_util import tree_flatten, tree_unflatten


def composite(decomposition: Callable, name: str, version: int = 0):
    """A function whose semantics are `decomposition`'s, staged as one op named `name`
    (as `jax.lax.composite`): positional arguments are its inputs, keyword arguments its
    static attributes (which may not be traced values).

    Args:
        decomposition: what the composite computes.
        name: the op's name (e.g. "my.tangent").
        version: the attribute's version, for backends that recognise the name.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"lax.composite: name must be a non-empty string, got {name!r}")

    @functools.wraps(decomposition)
    def staged(*args, **kwargs):
        for k, v in kwargs.items():
            if any(isinstance(leaf, Tracer) for leaf in tree_flatten(v)[0]):
                raise errors.UnexpectedTracerError(
                    f"Found a traced value as the attribute {k!r} of the composite op "
                    f"{name!r}: attributes must be known while tracing; pass the value as a "
                    "positional argument instead"
                )
        leaves, in_tree = tree_flatten(args)
        leaves = [_lift(v) for v in leaves]
        box = {}

        def flat(*xs):
            out = decomposition(*tree_unflatten(in_tree, list(xs)), **kwargs)
            outs, box["tree"] = tree_flatten(out)
            return [_lift(o) for o in outs]

        traced = trace_to_function(flat, [aval_of(v) for v in leaves], name=name)
        weak = tuple(a.weak_type for a in traced.out_avals)
        outs = bind("call", *leaves, *traced.captures, regions=[traced.fn], callee=name,
                    weak=weak)  # fmt: skip
        return tree_unflatten(box["tree"], list(outs))

    staged.composite_name, staged.composite_version = name, int(version)
    return staged


_PLATFORMS = {"cpu": "cpu", "gpu": "cuda", "cuda": "cuda", "rocm": "rocm", "tpu": "tpu"}


def _current_platform() -> str:
    plat = pjrt.platform()
    if plat == "gpu":
        version = str(getattr(pjrt.default_device().client, "platform_version", "")).lower()
        return "rocm" if "rocm" in version else "cuda"
    return _PLATFORMS.get(plat, plat)


def platform_dependent(*args, default: Callable | None = None, **per_platform: Callable):
    """`per_platform[p](*args)` for the platform `p` purejit compiles for ("cpu", "cuda",
    "rocm", "tpu"), else `default(*args)`, as `jax.lax.platform_dependent`."""
    unknown = set(per_platform) - {"cpu", "cuda", "rocm", "tpu"}
    if unknown:
        raise ValueError(
            f"Unsupported platforms {sorted(unknown)} in platform_dependent: known are "
            "cpu, cuda, rocm, tpu"
        )
    branch = per_platform.get(_current_platform(), default)
    if branch is None:
        raise NotImplementedError(
            f"platform_dependent: no branch for the platform {_current_platform()!r} and no default"
        )
    return branch(*args)


def dce_sink(val, *, prevent_mlir_dce: bool = False) -> None:
    """Mark `val` (a pytree) as used, as `jax.lax.dce_sink`. JAX's marker keeps its jaxpr
    from dropping the computation and emits nothing, after which XLA removes what nothing
    reads; purejit's passes never drop side effects (callbacks) whatever their results feed,
    and XLA treats the rest as JAX's, so the marker has nothing left to do."""
    if prevent_mlir_dce:
        raise NotImplementedError(
            "lax.dce_sink(prevent_mlir_dce=True) emits a custom call to an FFI target named "
            "'dce_sink' that only JAX's test builds register"
        )
    tree_flatten(val)
    return None
