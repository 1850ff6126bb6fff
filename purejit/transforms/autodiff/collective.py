"""JVP and transpose rules of the collectives (`ir/ops/collective.py`).

Sums, gathers, scatters, permutations and all-to-alls are linear; their transposes are the
collective that moves the data back: all_gather <-> reduce_scatter (sum), a permutation's
inverse, all_to_all with split and concat swapped. A psum depends on how shard_map types
its operand (`purejit.ir.vma`, JAX's `check_vma`): the typed psum (`invariant=True`: a
varying operand, an invariant result) transposes to `pvary`, the identity that types its
result as varying, and `pvary` transposes to the typed psum; an untyped psum (check_vma=False,
or a vmapped axis) transposes to a psum, as in JAX. Each transpose keeps the collective's
`axes`, so the programs it builds are typed again. pmax/pmin have no derivative, as in JAX.

`manual_computation` (shard_map itself): forward mode differentiates the body and runs one
manual computation over (primal, tangent) pairs, each tangent split like its primal.
Reverse mode splits the body as `case` and `scan` do (`control.RegionSplit`): a primal
manual computation returns the outputs and the residuals, a linear one reads them with the
input tangents. A residual leaves the primal
computation as a global array whose dimension 0 is split over the mesh axes it varies over
(over every axis without check_vma; scalars get a dimension of 1 first), as JAX's
shard_map does; a residual that is a body input is passed again instead. The transpose of
the linear computation is a manual computation of the transposed body: it reads the
residuals and the output cotangents (split like the outputs) and returns the input
cotangents (split like the inputs).

Every new body is typed again (`purejit.ir.vma`) when the op has `check_vma`, so its psums
and pvarys transpose as JAX's do. Without check_vma the transposes are JAX's untyped ones:
an output cotangent is divided by the size of the mesh axes its out_spec leaves out, and an
input cotangent is summed over the axes its in_spec leaves out.
"""

from __future__ import annotations

import contextlib
import math


from purejit.ir import Function, spmd, vma
from purejit.lax.parallel import axis_env
from purejit.runtime.eager import EvalTrace
from purejit.tracing import ShapedArray, bind, find_top_trace, trace_to_function
from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    aval,
    defjvp,
    deftranspose,
    full,
    instantiate,
    is_differentiable_dtype,
    is_linear,
    linear_jvp,
    not_differentiable,
    op,
    tangent_aval,
)
from purejit.transforms.autodiff.control import RegionSplit

for _name in ("all_gather", "collective_permute", "all_to_all", "pvary", "sharding_constraint"):
    linear_jvp(_name, lambda i, n: True)


@deftranspose("sharding_constraint")
def _sharding_constraint_t(cts, operands, attrs, regions):
    # the identity: its cotangent is laid out as the value was
    (ct,) = cts
    return [ct if isinstance(ct, Zero) else op("sharding_constraint", ct, **attrs)]


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


def _axes(attrs) -> dict:
    """What names the axes a collective runs over: mesh `axes`, or a vmapped `axis_name`."""
    return {k: attrs[k] for k in ("axes", "axis_name") if k in attrs}


@deftranspose("all_reduce")
def _all_reduce_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    if attrs.get("invariant"):  # psum: varying -> invariant; its transpose is pvary
        axes = tuple(attrs.get("axes", ()))
        return [op("pvary", ct, axes=axes, replica_groups=attrs["replica_groups"])]
    return [op("all_reduce", ct, **attrs)]


@deftranspose("pvary")
def _pvary_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    return [
        op(
            "all_reduce",
            ct,
            replica_groups=attrs["replica_groups"],
            computation="add",
            axes=tuple(attrs["axes"]),
            invariant=True,
        )
    ]


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
            **_axes(attrs),
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
            **_axes(attrs),
        )
    ]


@deftranspose("collective_permute")
def _permute_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    pairs = tuple((t, s) for s, t in attrs["source_target_pairs"])
    return [op("collective_permute", ct, source_target_pairs=pairs, **_axes(attrs))]


@deftranspose("all_to_all")
def _all_to_all_t(cts, operands, attrs, regions):
    (ct,) = cts
    if isinstance(ct, Zero):
        return [Zero(aval(operands[0]))]
    swapped = dict(attrs)
    swapped["split_dimension"] = attrs["concat_dimension"]
    swapped["concat_dimension"] = attrs["split_dimension"]
    return [op("all_to_all", ct, **swapped)]


# ---- manual_computation (shard_map) ----------------------------------------------------------

LINEAR_OPS.add("manual_computation")

# how a manual computation runs outside jit (eagerly): compiled as a program of its own by
# `purejit.shard_map`, which sets this (the eager trace compiles single-device ops only)
_eager_runner: list = []


def set_eager_runner(run) -> None:
    """`run(operands, region, attrs) -> results` runs one manual computation eagerly."""
    _eager_runner[:] = [run]


class _Mesh:
    """The mesh of a manual computation, read from its attributes."""

    def __init__(self, attrs):
        self.axis_names = tuple(attrs["axis_names"])
        self.mesh_shape = tuple(int(s) for s in attrs["mesh_shape"])
        self.shape = dict(zip(self.axis_names, self.mesh_shape))

    def __repr__(self):
        return f"mesh {self.shape}"


@contextlib.contextmanager
def _in_body(attrs):
    """Trace a new body with the mesh's axis names bound (a custom rule may call psum)."""
    with axis_env(_Mesh(attrs), bool(attrs.get("check_vma", False))):
        yield


def _pav(v) -> ShapedArray:
    return ShapedArray(v.type.shape, v.type.dtype)


def _trace(fun, avals, name, attrs) -> Function:
    with _in_body(attrs):
        traced = trace_to_function(fun, avals, name=name)
    if traced.captures:
        raise NotImplementedError(f"shard_map {name}: a differentiated body read outer values")
    return traced.fn


def _bind(operands, region: Function, attrs, in_specs, out_specs, what: str):
    """Bind a manual computation like the one of `attrs` with new specs, its body typed by
    varying axes under check_vma."""
    new = dict(attrs)
    new["in_specs"], new["out_specs"] = tuple(in_specs), tuple(out_specs)
    if attrs.get("check_vma"):
        want = [vma.spec_axes(s) for s in out_specs]
        region, got = vma.annotate(
            region,
            [vma.spec_axes(s) for s in in_specs],
            new["axis_names"],
            new["mesh_shape"],
            out_vma=want,
        )
        for k, (g, w) in enumerate(zip(got, want)):
            if not g <= w:
                raise NotImplementedError(
                    f"shard_map {what}: result {k} varies over mesh axes {sorted(g)} but is "
                    f"returned as split over {sorted(w)} only (a gap in purejit's check_vma "
                    "typing of differentiated bodies; pass check_vma=False)"
                )
    if isinstance(find_top_trace(operands), EvalTrace):
        if not _eager_runner:
            raise NotImplementedError("shard_map: running a manual computation eagerly")
        return _eager_runner[0](list(operands), region, new)
    return bind("manual_computation", *operands, regions=[region], **new)


def _sizes(attrs) -> dict[str, int]:
    return spmd.axis_sizes(attrs["mesh_shape"], attrs["axis_names"])


def _unmentioned(attrs, spec) -> tuple[str, ...]:
    named = vma.spec_axes(spec)
    return tuple(a for a in attrs["axis_names"] if a not in named)


# ---- forward mode -----------------------------------------------------------------------------


@defjvp("manual_computation")
def _manual_jvp(ctx, primals, tangents, attrs, regions):
    if ctx.linearizing:
        return _manual_linearize(primals, tangents, attrs, regions)
    (body,) = regions
    nz = [not isinstance(t, Zero) for t in tangents]
    avals = [_pav(p) for p in body.params]
    n = len(avals)

    def jvp_body(*args):
        prim = list(args[:n])
        it = iter(args[n:])
        ts = [next(it) if z else Zero(tangent_aval(a)) for z, a in zip(nz, avals)]
        outs, touts = interp.jvp_function(body, prim, ts, ctx)
        return [*outs, *[instantiate(t, aval(o)) for t, o in zip(touts, outs)]]

    t_avals = [tangent_aval(a) for a, z in zip(avals, nz) if z]
    region = _trace(jvp_body, avals + t_avals, "body_jvp", attrs)
    in_specs = tuple(attrs["in_specs"]) + tuple(s for s, z in zip(attrs["in_specs"], nz) if z)
    out_specs = tuple(attrs["out_specs"]) * 2
    live = [t for t in tangents if not isinstance(t, Zero)]
    res = _bind([*primals, *live], region, attrs, in_specs, out_specs, "jvp")
    m = len(body.results)
    return res[:m], res[m:]


# ---- reverse mode: linearize --------------------------------------------------------------------


def _residual_spec(attrs, av: ShapedArray, varying) -> tuple:
    """How a residual of local abstract value `av` (rank >= 1) leaves the primal computation:
    dimension 0 split over the mesh axes it varies over."""
    axes = tuple(a for a in attrs["axis_names"] if a in varying)
    return (axes,) + ((),) * (av.ndim - 1) if axes else ((),) * av.ndim


def _manual_linearize(primals, tangents, attrs, regions):
    (body,) = regions
    avals = [_pav(p) for p in body.params]
    nz_in = [
        not isinstance(t, Zero) and is_differentiable_dtype(a.dtype)
        for t, a in zip(tangents, avals)
    ]
    with _in_body(attrs):
        split = RegionSplit(body, nz_in)
    in_specs, out_specs = list(attrs["in_specs"]), list(attrs["out_specs"])
    n_out = split.num_out
    # residuals computed by the body leave it as outputs; those that are its inputs are
    # passed again, and constants are made again in the linear body
    made_by = {r: o for o in split.primal.ops for r in o.results}
    consts = {}
    for k, v in enumerate(split.primal.results[n_out:]):
        o = made_by.get(v)
        if split.res_is_param[k] is None and o is not None and o.name == "constant":
            consts[k] = o.attrs["value"]
    own = [k for k, p in enumerate(split.res_is_param) if p is None and k not in consts]
    promote = [split.res_avals[k].ndim == 0 for k in own]
    if attrs.get("check_vma"):
        names, shape = attrs["axis_names"], attrs["mesh_shape"]
        in_vma = [vma.spec_axes(s) for s in in_specs]
        _, got = vma.annotate(split.primal, in_vma, names, shape)
        res_vma = got[n_out:]
    else:
        res_vma = [frozenset(attrs["axis_names"])] * len(split.res_avals)

    def primal_body(*xs):
        got = interp.evaluate(split.primal, xs)
        res = got[n_out:]
        outs = [op("reshape", res[k], shape=(1,)) if p else res[k] for k, p in zip(own, promote)]
        return [*got[:n_out], *outs]

    primal = _trace(primal_body, avals, body.name + "_fwd", attrs)
    res_avals = [
        ShapedArray((1,), split.res_avals[k].dtype) if p else split.res_avals[k]
        for k, p in zip(own, promote)
    ]
    res_specs = [_residual_spec(attrs, a, res_vma[k]) for k, a in zip(own, res_avals)]
    got = _bind(primals, primal, attrs, in_specs, out_specs + res_specs, "linearize")
    outs, own_vals = got[:n_out], got[n_out:]
    nz_out = split.nz_out
    if not any(nz_out):
        return outs, [Zero(tangent_aval(aval(o))) for o in outs]
    # the linear computation: input tangents, then the residuals that are not constants
    by_own = dict(zip(own, zip(own_vals, res_specs, res_avals, promote)))
    res_ops, res_in_specs, res_local, unpromote = [], [], [], []
    for k, p in enumerate(split.res_is_param):
        if k in consts:
            continue
        if p is not None:
            v, s, a, pr = primals[p], in_specs[p], avals[p], False
        else:
            v, s, a, pr = by_own[k]
        res_ops.append(v)
        res_in_specs.append(s)
        res_local.append(a)
        unpromote.append(pr)
    t_avals = [tangent_aval(a) for a, z in zip(avals, nz_in) if z]
    nt = len(t_avals)

    def linear_body(*args):
        ts, given = list(args[:nt]), iter(args[nt:])
        shaped = iter(op("reshape", r, shape=()) if u else r for r, u in zip(given, unpromote))
        rs = [consts[k] if k in consts else next(shaped) for k in range(len(split.res_avals))]
        return interp.evaluate(split.linear, [*ts, *rs])

    linear = _trace(linear_body, t_avals + res_local, body.name + "_lin", attrs)
    live = [instantiate(t, tangent_aval(a)) for t, a, z in zip(tangents, avals, nz_in) if z]
    t_specs = [s for s, z in zip(in_specs, nz_in) if z]
    t_out_specs = [s for s, z in zip(out_specs, nz_out) if z]
    touts = _bind([*live, *res_ops], linear, attrs, t_specs + res_in_specs, t_out_specs, "linear")
    it = iter(touts)
    return outs, [next(it) if z else Zero(tangent_aval(aval(o))) for o, z in zip(outs, nz_out)]


# ---- reverse mode: transpose ---------------------------------------------------------------------


@deftranspose("manual_computation")
def _manual_t(cts, operands, attrs, regions):
    (body,) = regions
    in_specs, out_specs = list(attrs["in_specs"]), list(attrs["out_specs"])
    checked = bool(attrs.get("check_vma"))
    sizes = _sizes(attrs)
    lin = [is_linear(x) for x in operands]
    known = [x for x in operands if not is_linear(x)]
    known_specs = [s for s, is_l in zip(in_specs, lin) if not is_l]
    avals = [_pav(p) for p in body.params]
    known_avals = [a for a, is_l in zip(avals, lin) if not is_l]
    lin_avals = [a for a, is_l in zip(avals, lin) if is_l]
    lin_specs = [s for s, is_l in zip(in_specs, lin) if is_l]
    out_avals = [_pav(r) for r in body.results]
    nz_ct = [not isinstance(c, Zero) for c in cts]
    live = [c for c in cts if not isinstance(c, Zero)]
    if not live:
        return [Zero(aval(x)) if is_l else None for x, is_l in zip(operands, lin)]
    ct_specs = [s for s, z in zip(out_specs, nz_ct) if z]
    ct_avals = [a for a, z in zip(out_avals, nz_ct) if z]
    nk = len(known)

    def body_t(*args):
        kn, cs = list(args[:nk]), iter(args[nk:])
        cs = [next(cs) if z else Zero(a) for z, a in zip(nz_ct, out_avals)]
        if not checked:  # JAX's untyped transpose: undo the replication of each output
            cs = [
                _scale(c, s, attrs, sizes) if not isinstance(c, Zero) else c
                for c, s in zip(cs, out_specs)
            ]
        it = iter(kn)
        vals = [None if is_l else next(it) for is_l in lin]
        got = interp.transpose_function(body, lin, vals, cs)
        got = [instantiate(g, a) for g, a in zip(got, lin_avals)]
        if not checked:  # ... and sum each input's over the axes its in_spec replicates
            got = [_psum_unmentioned(g, s, attrs) for g, s in zip(got, lin_specs)]
        return got

    region = _trace(body_t, known_avals + ct_avals, body.name + "_t", attrs)
    specs = known_specs + ct_specs
    got = iter(_bind([*known, *live], region, attrs, specs, lin_specs, "transpose"))
    return [next(got) if is_l else None for is_l in lin]


def _scale(ct, spec, attrs, sizes):
    n = math.prod(sizes[a] for a in _unmentioned(attrs, spec))
    if n == 1 or not is_differentiable_dtype(aval(ct).dtype):
        return ct
    a = aval(ct)
    return op("divide", ct, full(a.shape, n, a.dtype))


def _psum_unmentioned(ct, spec, attrs):
    axes = _unmentioned(attrs, spec)
    if not axes:
        return ct
    groups = spmd.replica_groups(attrs["mesh_shape"], attrs["axis_names"], axes)
    return op("all_reduce", ct, replica_groups=groups, computation="add", axes=axes)
