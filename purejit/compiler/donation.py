"""Buffer donation: `jit(f, donate_argnums=..., donate_argnames=...)`, as in JAX.

A donated argument tells XLA it may write an output into that argument's memory. purejit
pairs every donated input leaf with an output of the same shape and dtype (in order, as JAX
does), marks the pair with `tf.aliasing_output = N` on the parameter of `@main`, and after
the call deletes the donated `purejit.Array`, so that using it again raises an error naming
the argument and the function. A donated leaf that no output can reuse is not donated and
gives a warning (once, when the function is compiled for that signature).

Host values (NumPy arrays, Python scalars) may be donated: they are copied to the device
first, and only that copy is given to XLA; the caller's NumPy array is untouched.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from purejit import errors
from purejit.ir import TensorType
from purejit.passes.liveness import pair_aliases


def normalize_donation(
    donate_argnums,
    donate_argnames,
    sig: inspect.Signature | None,
    static_argnums,
    static_argnames,
    fname: str = "f",
) -> tuple[frozenset[int], frozenset[str]]:
    """Positions and names of donated arguments; each implies the other through `sig`.

    Raises ValueError when a donated argument is also static (a static value has no buffer).
    """
    nums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    names = (donate_argnames,) if isinstance(donate_argnames, str) else tuple(donate_argnames)
    errors.check_argnums(fname, sig, "donate_argnums", nums, ())
    errors.check_argnums(fname, sig, "donate_argnames", (), names)
    params = list(sig.parameters.values()) if sig else []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    pos_names = [p.name for p in params if p.kind in positional]
    nums_set = {int(i) for i in nums}
    nums_set |= {pos_names.index(n) for n in names if n in pos_names}
    names_set = set(names) | {pos_names[i] for i in nums_set if 0 <= i < len(pos_names)}
    clash = sorted(set(nums_set) & set(static_argnums)) or sorted(names_set & set(static_argnames))
    if clash:
        raise ValueError(
            f"donate_argnums/donate_argnames and static_argnums/static_argnames overlap at "
            f"{clash}: a static argument has no buffer to donate"
        )
    return frozenset(nums_set), frozenset(names_set)


@dataclass(frozen=True)
class DonationPlan:
    """Which parameter of `@main` aliases which output, and which donations were unusable."""

    donated: tuple[bool, ...]  # per parameter
    aliases: dict[int, int]  # parameter index -> output index
    unusable: tuple[int, ...]  # donated parameters that no output could reuse
    param_types: tuple[TensorType, ...] = ()

    def arg_attrs(self) -> list[str] | None:
        """MLIR attribute dictionaries for `stablehlo.emit(fn, arg_attrs=...)`."""
        if not self.aliases:
            return None
        return [
            f"{{tf.aliasing_output = {self.aliases[i]} : i32}}" if i in self.aliases else ""
            for i in range(len(self.donated))
        ]

    @property
    def alias_bytes(self) -> int:
        """Bytes written in place (what XLA reports as `alias_size_in_bytes`)."""
        return sum(self.param_types[i].nbytes for i in self.aliases)


def plan_donation(
    param_types: Sequence[TensorType], donated: Sequence[bool], result_types: Sequence[TensorType]
) -> DonationPlan:
    """Pair each donated parameter with the first unclaimed output of the same type.

    Args:
        param_types: the types of `@main`'s parameters.
        donated: one bool per parameter.
        result_types: the types of `@main`'s results.
    Returns:
        A DonationPlan; `unusable` lists donated parameters left without an output.
    """
    aliases, unusable = pair_aliases(param_types, donated, result_types)
    return DonationPlan(
        tuple(bool(d) for d in donated), aliases, tuple(unusable), tuple(param_types)
    )


def warn_unusable(plan: DonationPlan, param_types: Sequence[TensorType], paths, fname: str):
    """Warn, as JAX does, about donated arguments that no output can reuse."""
    if not plan.unusable:
        return
    what = ", ".join(f"{paths[i]}: {param_types[i]}" for i in plan.unusable)
    warnings.warn(
        f"Some donated buffers were not usable by {fname}: {what}. No output has the same "
        "shape and dtype, so these arguments are not donated (and not deleted).",
        UserWarning,
        stacklevel=errors.user_stacklevel(),
    )


def check_donated_inputs(arrays, plan: DonationPlan, paths, fname: str):
    """Before a call: a donated buffer may not also be passed as another argument."""
    if not plan.aliases:
        return
    seen: dict[int, int] = {}
    for i, a in enumerate(arrays):
        buf = a._buf
        if buf is None:
            row = a._row  # a lazy row: the same piece of the same stack is the same buffer
            if row is None:
                continue
            key = (id(row[0]), row[1])
        else:
            key = id(buf)
        j = seen.setdefault(key, i)
        if j != i and (i in plan.aliases or j in plan.aliases):
            raise ValueError(
                f"{fname}: argument {paths[i]} and argument {paths[j]} are the same buffer, "
                "and one of them is donated; XLA cannot read a buffer it is writing in "
                "place. Pass a copy, or do not donate it."
            )


def donated_reason(path: str, fname: str) -> str:
    """Why an Array donated as argument `path` of the jitted function `fname` is deleted."""
    return (
        f"it was donated as argument {path} of the jitted function {fname}; "
        "a donated array cannot be used after the call"
    )


def consume_donated(arrays, plan: DonationPlan, paths, fname: str):
    """After a call: delete every donated Array whose buffer XLA took over."""
    for i in plan.aliases:
        # XLA took the buffer over (PJRT deleted it at execute): drop the reference only,
        # a jax.Array's delete() would walk its shards again in Python
        arrays[i].delete(donated_reason(paths[i], fname), consumed=True)
