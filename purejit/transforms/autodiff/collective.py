"""JVP and transpose rules of the collectives (`ir/ops/collective.py`).

Sums, gathers, scatters, permutations and all-to-alls are linear; their transposes are the
collective that moves the data back: all_gather <-> reduce_scatter (sum), a permutation's
inverse, all_to_all with split and concat swapped. A sum over devices transposes to a sum
over devices, JAX's rule for collectives whose operands are not typed by which mesh axes
they vary over. shard_map's typing of that (`check_vma`, `pvary`), which makes psum's
transpose JAX's under `check_vma=True`, and reverse mode through `manual_computation` are
not implemented here yet: linearizing a shard_map raises NotImplementedError.
pmax/pmin/pprod have no derivative, as in JAX.
"""

from __future__ import annotations

from purejit.ir import Function
from purejit.tracing import bind, trace_to_function
from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    aval,
    defjvp,
    deftranspose,
    instantiate,
    linear_jvp,
    not_differentiable,
    op,
    tangent_aval,
)

for _name in ("all_gather", "collective_permute", "all_to_all"):
    linear_jvp(_name, lambda i, n: True)


def _sum_only(name):
    def rule(ctx, primals, tangents, attrs, regions):
        if attrs["computation"] != "add":
            raise interp.NonDifferentiableError(
                f"`{name}` with computation {attrs['computation']!r} has no derivative (as in "
                "JAX, only sums over devices are differentiable: psum, psum_scatter)"
            )
        outs = bind(name, *primals, **attrs)
        return outs, bind(name, instantiate(tangents[0], aval(primals[0])), **attrs)

    defjvp(name)(rule)


_sum_only("all_reduce")
_sum_only("reduce_scatter")
LINEAR_OPS.update({"all_reduce", "reduce_scatter"})
not_differentiable("integer or boolean results", "partition_id")


@deftranspose("all_reduce")
def _all_reduce_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    return [op("all_reduce", ct, **attrs)]


@deftranspose("all_gather")
def _all_gather_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    return [
        op(
            "reduce_scatter",
            ct,
            replica_groups=attrs["replica_groups"],
            scatter_dimension=attrs["all_gather_dim"],
            computation="add",
        )
    ]


@deftranspose("reduce_scatter")
def _reduce_scatter_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    return [
        op(
            "all_gather",
            ct,
            replica_groups=attrs["replica_groups"],
            all_gather_dim=attrs["scatter_dimension"],
        )
    ]


@deftranspose("collective_permute")
def _permute_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    pairs = tuple((t, s) for s, t in attrs["source_target_pairs"])
    return [op("collective_permute", ct, source_target_pairs=pairs)]


@deftranspose("all_to_all")
def _all_to_all_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    swapped = dict(attrs)
    swapped["split_dimension"] = attrs["concat_dimension"]
    swapped["concat_dimension"] = attrs["split_dimension"]
    return [op("all_to_all", ct, **swapped)]


@defjvp("manual_computation")
def _manual_jvp(ctx, primals, tangents, attrs, regions):
    if ctx.linearizing:
        raise NotImplementedError(
            "reverse-mode differentiation through shard_map is not implemented yet (it needs "
            "shard_map's varying-axes typing, check_vma); forward mode (jvp) works"
        )
    (body,) = regions
    nz = [not isinstance(t, Zero) for t in tangents]
    avals = [aval(p) for p in body.params]
    n = len(avals)

    def jvp_body(*args):
        prim = list(args[:n])
        it = iter(args[n:])
        ts = [next(it) if z else Zero(tangent_aval(a)) for z, a in zip(nz, avals)]
        outs, touts = interp.jvp_function(body, prim, ts, ctx)
        return [*outs, *[instantiate(t, aval(o)) for t, o in zip(touts, outs)]]

    t_avals = [tangent_aval(a) for a, z in zip(avals, nz) if z]
    region: Function = trace_to_function(jvp_body, avals + t_avals, name="body_jvp").fn
    new = dict(attrs)
    new["in_specs"] = tuple(attrs["in_specs"]) + tuple(
        s for s, z in zip(attrs["in_specs"], nz) if z
    )
    new["out_specs"] = tuple(attrs["out_specs"]) * 2
    live = [t for t in tangents if not isinstance(t, Zero)]
    res = bind("manual_computation", *primals, *live, regions=[region], **new)
    m = len(body.results)
    return res[:m], res[m:]
