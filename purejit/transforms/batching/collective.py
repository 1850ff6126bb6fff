"""Batching rules of collectives (ir/ops/collective.py).

A collective over the vmapped axis (the op carries `axis_name`, see `purejit.lax.parallel`)
becomes an operation over the batch dimension: `psum` a reduction, `all_gather` a reshape,
`ppermute` a gather, `axis_index` an iota. A collective over a mesh axis (or another vmap's
axis) works on every element independently, so the batch is one more dimension it carries.
A `shard_map` inside vmap keeps the batch unsharded in every operand and result.
"""

from __future__ import annotations

import numpy as np

from purejit.tracing import aval_of, bind, bind1
from purejit.transforms.batching.core import (
    batch_region,
    bdim_at_front,
    defrule,
    filled,
    iota,
    matchaxis,
    reduce_batch,
    shape,
    unbatched_shape,
)


def _ours(axis, attrs) -> bool:
    return axis.name is not None and attrs.get("axis_name") == axis.name


def _reduce_unbatched(axis, x, computation: str):
    """`computation` over `axis.size` copies of the unbatched `x`."""
    if computation == "add":
        return bind1("multiply", x, filled(x, axis.size))
    if computation == "multiply":
        return bind1("power", x, filled(x, axis.size))
    return x  # maximum, minimum, and, or: idempotent


def _over_batch(axis, x, d, computation: str):
    if d is None:
        return _reduce_unbatched(axis, x, computation)
    return reduce_batch(x, d, computation)


@defrule("all_reduce")
def all_reduce_rule(axis, args, dims, **attrs):
    (x,), (d,) = args, dims
    if _ours(axis, attrs):
        return [_over_batch(axis, x, d, attrs["computation"])], [None]
    return [bind1("all_reduce", x, **attrs)], [d]


@defrule("all_gather")
def all_gather_rule(axis, args, dims, *, all_gather_dim, **attrs):
    (x,), (d,) = args, dims
    g = all_gather_dim
    if _ours(axis, attrs):
        per = unbatched_shape(x, d)
        x = matchaxis(axis, x, d, g)  # (..., B, n_g, ...): the lanes concatenated along g
        out = (*per[:g], axis.size * per[g], *per[g + 1 :])
        return [bind1("reshape", x, shape=out)], [None]
    return [bind1("all_gather", x, all_gather_dim=g + (g >= d), **attrs)], [d]


@defrule("reduce_scatter")
def reduce_scatter_rule(axis, args, dims, *, scatter_dimension, **attrs):
    (x,), (d,) = args, dims
    sd = scatter_dimension
    if _ours(axis, attrs):
        total = _over_batch(axis, x, d, attrs["computation"])
        s = shape(total)
        pieces = (*s[:sd], axis.size, s[sd] // axis.size, *s[sd + 1 :])
        return [bind1("reshape", total, shape=pieces)], [sd]
    out = bind1("reduce_scatter", x, scatter_dimension=sd + (sd >= d), **attrs)
    return [out], [d]


@defrule("collective_permute")
def collective_permute_rule(axis, args, dims, *, source_target_pairs, **attrs):
    (x,), (d,) = args, dims
    if not _ours(axis, attrs):
        out = bind1("collective_permute", x, source_target_pairs=source_target_pairs, **attrs)
        return [out], [d]
    x = bdim_at_front(axis, x, d)
    per = unbatched_shape(x, 0)
    src = np.zeros((axis.size, 1), np.int32)
    hit = np.zeros((axis.size,), np.bool_)
    for s, t in source_target_pairs:
        src[t, 0], hit[t] = s, True
    moved = bind1(
        "gather",
        x,
        src,
        offset_dims=tuple(range(1, len(per) + 1)),
        collapsed_slice_dims=(0,),
        start_index_map=(0,),
        index_vector_dim=1,
        slice_sizes=(1, *per),
        indices_are_sorted=False,
    )
    full = shape(moved)
    mask = bind1("broadcast_in_dim", hit, shape=full, broadcast_dimensions=(0,))
    zeros = filled(moved, 0)
    return [bind1("select", mask, moved, zeros)], [0]


@defrule("all_to_all")
def all_to_all_rule(axis, args, dims, *, split_dimension, concat_dimension, **attrs):
    (x,), (d,) = args, dims
    sp, cc = split_dimension, concat_dimension
    if not _ours(axis, attrs):
        out = bind1(
            "all_to_all",
            x,
            split_dimension=sp + (sp >= d),
            concat_dimension=cc + (cc >= d),
            **attrs,
        )
        return [out], [d]
    # lane i sends chunk j of its split dimension to lane j, which concatenates the chunks
    # it receives in lane order along the concat dimension
    n = axis.size
    x = bdim_at_front(axis, x, d)
    s = unbatched_shape(x, 0)
    m = s[sp] // n
    x = bind1("reshape", x, shape=(n, *s[:sp], n, m, *s[sp + 1 :]))  # (I, .., J, M, ..)
    chunk = [*s[:sp], m, *s[sp + 1 :]]

    def pos(k):  # where chunk dimension k sits in the reshaped value
        return 1 + k if k < sp else (2 + sp if k == sp else 2 + k)

    perm = [1 + sp] + [pos(k) for k in range(cc)] + [0] + [pos(k) for k in range(cc, len(chunk))]
    y = bind1("transpose", x, permutation=tuple(perm))
    out = (n, *chunk[:cc], n * chunk[cc], *chunk[cc + 1 :])
    return [bind1("reshape", y, shape=out)], [0]


@defrule("partition_id")
def partition_id_rule(axis, args, dims, **attrs):
    """Only reached for `axis_index` over the vmapped axis: the example number."""
    if not _ours(axis, attrs):
        raise AssertionError("partition_id has no operands to be batched")
    return [iota(np.uint32, (axis.size,), 0)], [0]


@defrule("pvary")
def pvary_rule(axis, args, dims, **attrs):
    """The identity on every example: the batch is one more dimension it carries."""
    return [bind1("pvary", args[0], **attrs)], [dims[0]]


@defrule("sharding_constraint")
def sharding_constraint_rule(axis, args, dims, *, spec, **attrs):
    """The examples' dimension is not split: the spec gains an unsharded entry there."""
    d = dims[0]
    spec = tuple(spec[:d]) + ((),) + tuple(spec[d:])
    return [bind1("sharding_constraint", args[0], spec=spec, **attrs)], [d]


@defrule("manual_computation")
def manual_computation_rule(axis, args, dims, *, regions, in_specs, out_specs, **attrs):
    xs = [bdim_at_front(axis, x, d) if d is not None else x for x, d in zip(args, dims)]
    bdims = [None if d is None else 0 for d in dims]
    specs = [((),) + tuple(s) if d is not None else tuple(s) for s, d in zip(in_specs, dims)]
    body = regions[0]
    local = []
    for x, p, d in zip(xs, body.params, bdims):
        a = aval_of(x)
        local_shape = p.type.shape if d is None else (axis.size, *p.type.shape)
        local.append(type(a)(local_shape, a.dtype, a.weak_type))
    _, out_dims = batch_region(body, bdims, axis, local)
    want = [None if od is None else 0 for od in out_dims]
    region, _ = batch_region(body, bdims, axis, local, want)
    new_out = [((),) + tuple(s) if w is not None else tuple(s) for s, w in zip(out_specs, want)]
    outs = bind(
        "manual_computation",
        *xs,
        regions=[region],
        in_specs=tuple(specs),
        out_specs=tuple(new_out),
        **attrs,
    )
    return outs, want
