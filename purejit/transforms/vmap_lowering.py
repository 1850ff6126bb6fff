"""How a vmapped function becomes a program: one batched program, or a loop over the batch.

    purejit.config.update("vmap_lowering", "auto")   # or "batched" (default), "loop"
    purejit.vmap(f, lowering="loop")                 # per vmap, overriding the option

- "batched": every op gains a batch dimension through its batching rule (JAX's `vmap`).
- "loop": the function of one example runs once per example, as the body of a `scan` over
  the mapped axis (what `lax.map(f, xs)` does), its results stacked. This wins where the
  batched program is slower than the loop (jax-ml/jax model ensembles: vmap 4.92 ms,
  lax.map 1.71 ms) or where a batched `cond` must run every branch for everyone.
- "auto": the faster of the two, measured once per traced program, argument shapes and
  device kind: both forms are compiled on their own and timed in interleaved rounds within
  about `config.vmap_measure_s` seconds (at least a warm-up and a few calls each, however
  slow); the choice is cached and `explain` reports it with both times. With
  `vmap_measure_s = 0` nothing is measured and "auto" is "batched".

The measurement runs on the call's own arguments: the arrays vmap is called on, or under
`jit(vmap(f))` the arrays of the jit call being compiled. Where an input has no value yet
(an intermediate of a larger jitted program, `lower()` on shapes) it runs on made-up inputs
of the same shapes: normal floats, zero integers and booleans. A program whose cost
depends on its data (a `while_loop`'s trip count, which branch of a `cond` runs) is judged
on that data; `lowering="batched"` or `"loop"` fixes the choice where made-up data would
mislead. A function with a collective over the vmapped axis (`psum(x, axis_name)`) needs
every example at once and is always batched.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable, Sequence

import numpy as np

from purejit.backend import pjrt
from purejit.compiler import ArgSpec, JitConfig, lower
from purejit.compiler.lower import concrete_input
from purejit.config import config
from purejit.ir import Function, print_function
from purejit.runtime import Array, as_array
from purejit.tracing import ShapedArray, aval_of, bind
from purejit.transforms.batching import moveaxis, notes
from purejit.transforms.batching.core import op_uses_axis
from purejit.tree_util import tree_leaves

LOWERINGS = ("batched", "loop", "auto")


def check_lowering(lowering) -> str:
    """`lowering` (None: `config.vmap_lowering`) checked against `LOWERINGS`."""
    mode = config.read("vmap_lowering") if lowering is None else lowering
    if mode not in LOWERINGS:
        raise ValueError(
            f"vmap: lowering must be one of {', '.join(map(repr, LOWERINGS))}, got {mode!r} "
            "(the `lowering=` argument or purejit.config.update('vmap_lowering', ...))"
        )
    return mode


def uses_axis(fn: Function, axis_name) -> bool:
    """Whether `fn` holds a collective over the vmapped axis `axis_name`."""
    return axis_name is not None and any(op_uses_axis(op, axis_name) for op in fn.ops)


def varying_results(fn: Function, dims: Sequence) -> list[bool]:
    """Which results of `fn` depend on a parameter batched in `dims` (not None)."""
    vary = {p for p, d in zip(fn.params, dims) if d is not None}
    for op in fn.ops:
        if any(v in vary for v in op.operands):
            vary.update(op.results)
    return [v in vary for v in fn.results]


def loop_over_batch(fn: Function, args: Sequence, dims: Sequence, size: int) -> list:
    """`fn` run once per example as the body of a `scan` over the batch.

    Args:
        fn: the function of one example.
        args: one value per parameter of `fn`.
        dims: the mapped axis of each arg, or None (passed to every example as it is).
        size: the number of examples.
    Returns:
        `fn`'s results, each stacked over the examples along a new leading axis.
    """
    mapped = [i for i, d in enumerate(dims) if d is not None]
    shared = [i for i, d in enumerate(dims) if d is None]
    xs = [moveaxis(args[i], dims[i], 0) for i in mapped]
    # scan's region takes its constants first, then one slice of each mapped input
    order = [fn.params[i] for i in shared] + [fn.params[i] for i in mapped]
    body = Function(fn.name, order, fn.ops, fn.results)
    return bind(
        "scan",
        *[args[i] for i in shared],
        *xs,
        regions=[body],
        length=size,
        reverse=False,
        unroll=1,
        num_consts=len(shared),
        num_carry=0,
    )


def first_example(x):
    """Example 0 of `x` stacked along its leading axis (for results that do not vary)."""
    s = aval_of(x).shape
    one = bind(
        "slice",
        x,
        start_indices=(0,) * len(s),
        limit_indices=(1, *s[1:]),
        strides=(1,) * len(s),
    )[0]
    return bind("reshape", one, shape=tuple(s[1:]))[0]


# ---- "auto": measure both forms once --------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Choice:
    """What "auto" picked for one program and why (seconds per call of each form)."""

    lowering: str
    batched_s: float | None = None
    loop_s: float | None = None
    reason: str = ""

    def describe(self) -> str:
        if self.batched_s is None:
            return f"{self.lowering} ({self.reason})"
        return (
            f"{self.lowering} (measured on {self.reason}: batched {_ms(self.batched_s)}, "
            f"loop {_ms(self.loop_s)} per call)"
        )


def _ms(t: float) -> str:
    return f"{t * 1e3:.3g} ms"


# the measured choices by `choice_key`, oldest first: at most CHOICES_MAX, written under a
# lock (threads measuring one program at once each measure, the last one's choice stays)
CHOICES: dict[tuple, Choice] = {}
CHOICES_MAX = 256
_choices_lock = threading.Lock()


def choice_key(fn: Function, dims: Sequence, dests: Sequence, size: int, extra=()) -> tuple:
    """The cache key of a choice: the program, its batching, the device kind."""
    dev = pjrt.default_device()
    return (print_function(fn), tuple(dims), tuple(dests), size, extra, dev.device_kind)


def made_up(aval: ShapedArray, rng: np.random.Generator) -> Array:
    """An input of `aval`'s shape and dtype: normal floats, zeros otherwise."""
    dt = np.dtype(aval.dtype)
    if dt.kind in "fc":
        x = rng.standard_normal(aval.shape).astype(dt)
    else:
        x = np.zeros(aval.shape, dt)
    return as_array(x)


def _standalone(fun: Callable, avals: Sequence[ShapedArray], name: str):
    """`fun` of flat arrays compiled on its own for `avals`."""
    spec = ArgSpec(fun, name)
    sig = spec.signature(tuple(avals), {}, shapes_only=True)
    return lower(JitConfig(fun, name), sig).compile()


def _block(out):
    for leaf in tree_leaves(out):
        leaf.block_until_ready()


def _calls(compiled, inputs, n: int) -> float:
    """Seconds per call over `n` calls, each waited for before the next starts: calls
    queued without waiting each hold their own outputs until they run, which on a GPU ran
    the allocator out of memory (512 MiB outputs, hundreds of calls in flight)."""
    t0 = time.perf_counter()
    for _ in range(n):
        _block(compiled.run(inputs))
    return (time.perf_counter() - t0) / n


ROUNDS = 5


def measure(forms: dict[str, Callable], avals, inputs, budget: float, what: str) -> Choice:
    """Compile each of `forms` (name -> function of flat arrays) for `avals`, time it on
    `inputs` and pick the fastest ("batched" unless "loop" is faster).

    Each form is warmed up and timed once, then `ROUNDS` rounds time every form in turn
    (so a busy machine slows them alike), each over as many calls as fit in its share of
    `budget` (at least one); the best round counts."""
    with notes.paused():  # the measured copies must not report into explain
        compiled = {k: _standalone(f, avals, f"vmap_{k}") for k, f in forms.items()}
    one = {}
    for k, c in compiled.items():
        _block(c.run(inputs))
        one[k] = max(_calls(c, inputs, 1), 1e-7)
    share = budget / (ROUNDS * len(forms))
    times = dict.fromkeys(compiled, float("inf"))
    for _ in range(ROUNDS):
        for k, c in compiled.items():
            n = int(min(max(share / one[k], 1), 1000))
            times[k] = min(times[k], _calls(c, inputs, n))
    pick = "loop" if times["loop"] < times["batched"] else "batched"
    return Choice(pick, times["batched"], times["loop"], what)


def _known(x) -> Array | None:
    """The array `x` is, or stands for as an input of the jit call being compiled."""
    if type(x) is Array or isinstance(x, (np.ndarray, np.generic)):
        return as_array(x)
    return concrete_input(x)


def choose(key: tuple, forms: dict[str, Callable], args: Sequence) -> Choice:
    """The cached choice for `key`, measuring `forms` on `args` (or on made-up inputs of
    their shapes where they are traced values) the first time."""
    hit = CHOICES.get(key)
    if hit is not None:
        return hit
    budget = float(config.read("vmap_measure_s"))
    if budget <= 0:
        return Choice("batched", reason="measurement disabled: vmap_measure_s is 0")
    avals = [aval_of(a) for a in args]
    known = [_known(a) for a in args]
    if all(k is not None for k in known):
        inputs, what = known, "the call's arguments"
    else:
        rng = np.random.default_rng(0)
        inputs, what = [made_up(a, rng) for a in avals], "made-up inputs of the same shapes"
    choice = measure(forms, avals, inputs, budget, what)
    with _choices_lock:
        CHOICES[key] = choice
        while len(CHOICES) > CHOICES_MAX:
            del CHOICES[next(iter(CHOICES))]
    return choice


__all__ = [
    "CHOICES",
    "LOWERINGS",
    "Choice",
    "check_lowering",
    "choice_key",
    "choose",
    "first_example",
    "loop_over_batch",
    "made_up",
    "measure",
    "uses_axis",
    "varying_results",
]
