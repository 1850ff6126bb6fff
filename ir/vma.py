"""Which mesh axes each value of a shard_map body varies over (JAX's `vma`), made explicit.

Inside a manual computation a value is *invariant* over a mesh axis when every device along
that axis holds the same value, and *varying* over it otherwise. JAX types every value by
its set of varying manual axes (`check_vma=True`) and inserts `pvary` (invariant ->
varying, the identity on values) where an op mixes operands of different sets; reverse mode
needs those marks, since the transpose of `pvary` sums over devices and the transpose of a
typed psum (`all_reduce {invariant}`) is a `pvary`. `annotate` derives the same typing for
a body traced by purejit and inserts the same `pvary` ops:

- an op that is not a collective: its operands are lifted to the union of their sets, and
  its results vary over that union;
- `all_reduce` (psum, pmax, pmin): its operand is lifted over the reduced axes, the result is
  invariant over them;
- `all_gather`, `reduce_scatter`, `collective_permute`, `all_to_all`: the operand is lifted
  over their axes, the result varies like it;
- `pvary` adds its axes; `partition_id` varies over the axes `axis_index` reads;
- `optimization_barrier`: each result like its operand;
- `case`: each branch is typed from the operands, its results lifted to the union over
  branches; `scan` and `while`: the carries' fixed point (initial carries and body results
  lifted to it), as JAX asks users to write with `pvary`;
- `checkpoint`, `custom_jvp_call`, `custom_vjp_call`: their region, typed from the operands.

A collective names its axes in an `axes` attribute (set by `purejit.lax`); one without it
(built by hand) has them read off its replica groups or source-target pairs.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from purejit.ir import spmd
from purejit.ir.core import Function, Op, Value

Vma = frozenset

_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "collective_permute", "all_to_all")
_REGION_CALLS = ("checkpoint", "custom_jvp_call", "custom_vjp_call")


class VmaError(ValueError):
    """A shard_map body whose varying axes do not type (e.g. `pvary` over a varying axis)."""


def spec_axes(spec) -> Vma:
    """The mesh axes a dimension spec (one tuple of axis names per dimension) names."""
    return frozenset(a for dim in spec for a in dim)


def annotate(
    fn: Function,
    in_vma: Sequence[Vma],
    axis_names: Sequence[str],
    mesh_shape: Sequence[int],
    *,
    out_vma: Sequence[Vma] | None = None,
    strict: bool = False,
) -> tuple[Function, list[Vma]]:
    """Type `fn`'s values by the mesh axes they vary over; insert JAX's implicit `pvary`s.

    Args:
        fn: a shard_map body (per-device program).
        in_vma: the varying axes of each parameter (those its in_spec names).
        axis_names, mesh_shape: the mesh.
        out_vma: if given, results are lifted (with `pvary`) to vary over at least these.
        strict: raise on a `pvary` over an axis its operand already varies over (as JAX
            does for the user's calls); otherwise such axes are ignored.
    Returns:
        (the function with explicit `pvary` ops, the varying axes of each result).
    """
    typer = _Typer(tuple(axis_names), tuple(int(s) for s in mesh_shape), strict)
    return typer.function(fn, [frozenset(v) for v in in_vma], out_vma)


class _Typer:
    def __init__(self, axis_names, mesh_shape, strict):
        self.axis_names = axis_names
        self.mesh_shape = mesh_shape
        self.strict = strict

    # ---- functions --------------------------------------------------------------------------

    def function(self, fn: Function, in_vma, want=None) -> tuple[Function, list[Vma]]:
        env: dict[Value, Vma] = dict(zip(fn.params, in_vma))
        ops: list[Op] = []
        cache: dict = {}
        for op in fn.ops:
            new, outs = self.op(op, env, ops, cache)
            ops.append(new)
            env.update(zip(op.results, outs))
        results = list(fn.results)
        if want is not None:
            results = [self.lift(r, w, env, ops, cache, None) for r, w in zip(results, want)]
        same = len(ops) == len(fn.ops) and all(a is b for a, b in zip(ops, fn.ops))
        if same and all(a is b for a, b in zip(results, fn.results)):
            return fn, [env[r] for r in results]
        return Function(fn.name, fn.params, ops, results), [env[r] for r in results]

    def ordered(self, axes) -> tuple[str, ...]:
        return tuple(a for a in self.axis_names if a in axes)

    def lift(self, v: Value, target: Vma, env, ops, cache, loc) -> Value:
        """`v`, or a `pvary` of it over the axes of `target` it does not vary over yet."""
        missing = frozenset(target) - env[v]
        if not missing:
            return v
        key = (v, missing)
        if key in cache:
            return cache[key]
        axes = self.ordered(missing)
        groups = spmd.replica_groups(self.mesh_shape, self.axis_names, axes)
        out = Value(v.type)
        ops.append(Op("pvary", [v], {"axes": axes, "replica_groups": groups}, [out], (), loc))
        env[out] = env[v] | missing
        cache[key] = out
        return out

    # ---- ops ----------------------------------------------------------------------------------

    def op(self, op: Op, env, ops, cache) -> tuple[Op, list[Vma]]:
        vin = [env[v] for v in op.operands]
        name = op.name

        def lifted(targets):
            return [self.lift(v, t, env, ops, cache, op.loc) for v, t in zip(op.operands, targets)]

        if name == "pvary":
            axes = frozenset(op.attrs["axes"])
            if axes & vin[0] and self.strict:
                raise VmaError(
                    "pvary is a invariant->variant collective. This means that the axis names "
                    f"mentioned in `axes` passed to `pvary` must not be present in the varying "
                    f"axes of its operand. Got axes={tuple(op.attrs['axes'])} and operand "
                    f"varying over {self.ordered(vin[0])}"
                )
            return op, [vin[0] | axes]
        if name in _COLLECTIVES and "axis_name" not in op.attrs:
            axes = self.axes_of(op)
            target = vin[0] | axes
            out = target - axes if name == "all_reduce" else target
            return op.rebuilt(lifted([target]), op.regions), [out]
        if name == "partition_id":
            return op, [frozenset(op.attrs.get("axes", self.axis_names))]
        if name == "optimization_barrier":
            return op, list(vin)
        if name in _REGION_CALLS:
            region, outs = self.function(op.regions[0], vin)
            return op.rebuilt(op.operands, [region]), outs
        if name == "case":
            return self.case(op, vin, lifted)
        if name == "scan":
            return self.scan(op, vin, lifted)
        if name == "while":
            return self.while_(op, vin, lifted)
        if name == "manual_computation":
            raise NotImplementedError("shard_map: a shard_map nested in another one")
        union = frozenset().union(*vin)
        return op.rebuilt(lifted([union] * len(vin)), op.regions), [union] * len(op.results)

    def case(self, op, vin, lifted):
        args = vin[1:]
        outs = [self.function(b, args)[1] for b in op.regions]
        union = [frozenset().union(*vs) for vs in zip(*outs)]
        branches = [self.function(b, args, union)[0] for b in op.regions]
        return op.rebuilt(lifted(vin), branches), union

    def scan(self, op, vin, lifted):
        (body,) = op.regions
        k, c = int(op.attrs["num_consts"]), int(op.attrs["num_carry"])
        consts, carry, xs = vin[:k], list(vin[k : k + c]), vin[k + c :]
        while True:
            _, outs = self.function(body, [*consts, *carry, *xs])
            new = [a | b for a, b in zip(carry, outs[:c])]
            if new == carry:
                break
            carry = new
        region, outs = self.function(body, [*consts, *carry, *xs], [*carry, *outs[c:]])
        targets = [*consts, *carry, *xs]
        return op.rebuilt(lifted(targets), [region]), outs

    def while_(self, op, vin, lifted):
        cond, body = op.regions
        n = len(body.results)
        carry, inv = list(vin[:n]), vin[n:]
        while True:
            _, outs = self.function(body, [*carry, *inv])
            new = [a | b for a, b in zip(carry, outs)]
            if new == carry:
                break
            carry = new
        cond2, _ = self.function(cond, [*carry, *inv])
        body2, outs = self.function(body, [*carry, *inv], carry)
        return op.rebuilt(lifted([*carry, *inv]), [cond2, body2]), outs

    # ---- a collective's axes -------------------------------------------------------------------

    def axes_of(self, op: Op) -> Vma:
        if "axes" in op.attrs:
            return frozenset(op.attrs["axes"])
        names, shape = self.axis_names, self.mesh_shape
        if op.name == "collective_permute":
            axes = set()
            for s, t in op.attrs["source_target_pairs"]:
                cs, ct = np.unravel_index(s, shape), np.unravel_index(t, shape)
                axes |= {a for a, i, j in zip(names, cs, ct) if i != j}
            return frozenset(axes)
        want = {frozenset(g) for g in op.attrs["replica_groups"]}
        for r in range(len(names) + 1):
            for axes in itertools.combinations(names, r):
                got = spmd.replica_groups(shape, names, axes)
                if {frozenset(g) for g in got} == want:
                    return frozenset(axes)
        raise VmaError(
            f"{op.name}: replica groups {op.attrs['replica_groups']} do not group the devices "
            f"of the mesh {dict(zip(names, shape))} by mesh axes; shard_map's check_vma cannot "
            "type it (pass check_vma=False)"
        )
