"""Compare `purejit.vmap` with `jax.vmap` on many small programs in one compile per side.

A case is `Case(name, make, args)`: `make(np_like, lax_like)` returns the per-example
function (written once against `purejit.numpy`/`purejit.lax` or `jax.numpy`/`jax.lax`),
`args` says how to draw each per-example argument. Every case is run with each non-empty
set of its arguments mapped (in_axes drawn at random positions, negative ones included)
and a random out_axes; all of a group's variants go into one jitted program per side.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable

import jax
import jax.numpy as jjnp
import numpy as np

import purejit
import purejit.numpy as pjnp
from purejit import lax as pjlax

B = 3  # the batch size of every case


@dataclass
class Arg:
    """How to draw one per-example argument: `draw(rng) -> np.ndarray`."""

    draw: Callable
    mappable: bool = True  # False: always unmapped (e.g. a static-shaped index table)


def F(*shape, dtype=np.float32, lo=-2.0, hi=2.0) -> Arg:
    return Arg(lambda r: r.uniform(lo, hi, shape).astype(dtype))


def P(*shape, dtype=np.float32) -> Arg:  # positive floats
    return Arg(lambda r: r.uniform(0.5, 2.0, shape).astype(dtype))


def I(*shape, lo=0, hi=5, dtype=np.int32) -> Arg:  # noqa: E743
    return Arg(lambda r: r.integers(lo, hi, shape).astype(dtype))


def Bo(*shape) -> Arg:
    return Arg(lambda r: r.uniform(size=shape) < 0.5)


@dataclass
class Case:
    name: str
    make: Callable  # (np_like, lax_like) -> per-example function
    args: list
    subsets: list | None = None  # which sets of argument indices to map (default: all)
    out_none: bool = False  # map no output axis (out_axes=None): the output must not vary
    rtol: float = 1e-5
    kw: dict = field(default_factory=dict)  # extra vmap arguments (axis_name, ...)


def _variants(case: Case, rng, one: bool = False):
    n = len(case.args)
    mappable = [i for i in range(n) if case.args[i].mappable]
    subsets = case.subsets
    if subsets is None:
        subsets = [
            s for k in range(1, len(mappable) + 1) for s in itertools.combinations(mappable, k)
        ]
        if one:  # one random set of mapped arguments
            subsets = [subsets[int(rng.integers(len(subsets)))]]
    for subset in subsets:
        per = [a.draw(rng) for a in case.args]
        in_axes, args = [], []
        for i, x in enumerate(per):
            if i not in subset:
                in_axes.append(None)
                args.append(x)
                continue
            examples = [x] + [case.args[i].draw(rng) for _ in range(B - 1)]
            ax = int(rng.integers(0, x.ndim + 1))
            stacked = np.stack(examples, axis=ax)
            if rng.uniform() < 0.3:
                ax -= x.ndim + 1  # the same axis, counted from the end
            in_axes.append(ax)
            args.append(stacked)
        out_axes = None if case.out_none else int(rng.choice([0, -1, 1]))
        yield tuple(in_axes), out_axes, args


def _fix_out_axes(fn_jax, in_axes, out_axes, args, kw):
    """out_axes valid for every output (1 needs rank >= 1 per example)."""
    if out_axes != 1:
        return out_axes
    shapes = jax.eval_shape(jax.vmap(fn_jax, in_axes, 0, **kw), *args)
    ok = all(len(s.shape) >= 2 for s in jax.tree_util.tree_leaves(shapes))
    return 1 if ok else 0


def run_group(cases: list[Case], seed: int = 0, eager: bool = False, one: bool = False):
    """Run every variant of `cases` under jit on both sides and compare leaf by leaf (with
    `one`, a single random set of mapped arguments per case)."""
    rng = np.random.default_rng(seed)
    plan = []  # (label, pj_fn, jax_fn, in_axes, out_axes, n_args, kw)
    flat = []
    for case in cases:
        fp, fj = case.make(pjnp, pjlax), case.make(jjnp, jax.lax)
        for in_axes, out_axes, args in _variants(case, rng, one):
            out_axes = _fix_out_axes(fj, in_axes, out_axes, args, case.kw)
            label = f"{case.name} in_axes={in_axes} out_axes={out_axes}"
            plan.append((label, fp, fj, in_axes, out_axes, len(args), case))
            flat.extend(args)

    def program(vmap, which):
        def run(*xs):
            outs, k = [], 0
            for label, fp, fj, in_axes, out_axes, n, case in plan:
                f = fp if which == "pj" else fj
                outs.append(vmap(f, in_axes, out_axes, **case.kw)(*xs[k : k + n]))
                k += n
            return outs

        return run

    want = jax.jit(program(jax.vmap, "jax"))(*flat)
    got = purejit.jit(program(purejit.vmap, "pj"))(*flat)
    results = [got]
    if eager:
        results.append(program(purejit.vmap, "pj")(*flat))
    for got in results:
        for (label, *_, case), g, w in zip(plan, got, want):
            compare(g, w, label, case.rtol)


def compare(got, want, label: str, rtol: float = 1e-5):
    g_leaves, g_def = jax.tree_util.tree_flatten(got)
    w_leaves, w_def = jax.tree_util.tree_flatten(want)
    assert len(g_leaves) == len(w_leaves), f"{label}: {len(g_leaves)} outputs, JAX {len(w_leaves)}"
    for k, (g, w) in enumerate(zip(g_leaves, w_leaves)):
        where = f"{label} output {k}"
        ga, wa = np.asarray(g), np.asarray(w)
        assert ga.shape == wa.shape, f"{where}: shape {ga.shape} != JAX's {wa.shape}"
        assert ga.dtype == wa.dtype, f"{where}: dtype {ga.dtype} != JAX's {wa.dtype}"
        if wa.dtype.kind in "biu":
            np.testing.assert_array_equal(ga, wa, err_msg=where)
        else:
            np.testing.assert_allclose(ga, wa, rtol=rtol, atol=rtol, equal_nan=True, err_msg=where)
