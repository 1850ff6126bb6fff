"""Ops that carry differentiation structure: what autodiff must see in a traced program.

stop_gradient(x) -> x
    The identity whose derivative is zero (`lax.stop_gradient`).

optimization_barrier(xs...) -> xs...
    The identity that no compiler pass may look through: values computed from its results
    are never merged with (CSE) or moved across values computed from its operands. The
    backward pass of `checkpoint` recomputes its forward from residuals passed through a
    barrier, so the recomputation is not merged back into the forward pass.
"""

from __future__ import annotations

from purejit.ir.core import TensorType
from purejit.ir.ops._util import dtype_attr, nargs
from purejit.ir.registry import OpDef, fail, register


def _stop_gradient_infer(types, attrs, regions):
    nargs("stop_gradient", types, 1)
    return [types[0]]


register(
    OpDef(
        "stop_gradient",
        _stop_gradient_infer,
        lambda args, attrs, regions, run: [args[0]],
        frozenset({"pure", "elementwise", "cheap"}),
        doc="stop_gradient(x) -> x, with zero derivative",
    )
)


def _barrier_infer(types, attrs, regions):
    return list(types)


register(
    OpDef(
        "optimization_barrier",
        _barrier_infer,
        lambda args, attrs, regions, run: list(args),
        frozenset({"pure"}),
        doc="optimization_barrier(xs...) -> xs...: the identity no pass looks through",
    )
)


# ops whose region is the function itself and whose attribute names Python rules ------------
#
# custom_jvp_call(args...) {rule} region(args...) -> outs
# custom_vjp_call(args...) {rule} region(args...) -> outs
# checkpoint(args...) {rule, prevent_cse} region(args...) -> outs
#     The region computes the results; lowering and the interpreter inline it. `rule` is a
#     readable key ("relu_jvp#3") of the Python rules (a custom JVP, a custom VJP's fwd/bwd,
#     a checkpoint's saving policy) that differentiation looks up; passes treat the op as the
#     pure function its region is.


def _region_call_infer(name):
    def infer(types, attrs, regions):
        if len(regions) != 1:
            fail(name, f"needs one region (the function), got {len(regions)}")
        if not isinstance(attrs.get("rule"), str):
            fail(name, f"attribute rule must be a string key, got {attrs.get('rule')!r}")
        (body,) = regions
        if body.param_types != list(types):
            got = ", ".join(str(t) for t in body.param_types)
            want = ", ".join(str(t) for t in types)
            fail(name, f"region takes ({got}), operands are ({want})")
        return list(body.result_types)

    return infer


def _region_call_ref(args, attrs, regions, run):
    return run(regions[0], *args)


for _name, _doc in (
    ("custom_jvp_call", "custom_jvp_call(args...) {rule} region: a function with a custom JVP"),
    ("custom_vjp_call", "custom_vjp_call(args...) {rule} region: a function with a custom VJP"),
    ("checkpoint", "checkpoint(args...) {rule, prevent_cse} region: recomputed for its gradient"),
):
    register(
        OpDef(
            _name,
            _region_call_infer(_name),
            _region_call_ref,
            frozenset({"pure"}),
            attrs=("rule", "prevent_cse") if _name == "checkpoint" else ("rule",),
            num_regions=1,
            doc=_doc,
        )
    )


def _name_infer(types, attrs, regions):
    nargs("checkpoint_name", types, 1)
    if not isinstance(attrs.get("label"), str):
        fail("checkpoint_name", f"attribute label must be a string, got {attrs.get('label')!r}")
    return [types[0]]


register(
    OpDef(
        "checkpoint_name",
        _name_infer,
        lambda args, attrs, regions, run: [args[0]],
        frozenset({"pure"}),
        attrs=("label",),
        doc="checkpoint_name(x) {label} -> x: names a value for checkpoint policies",
    )
)


def _custom_lin_infer(types, attrs, regions):
    n = attrs.get("num_res")
    outs = attrs.get("out_types")
    if not isinstance(n, int) or n < 0 or n > len(types) or not isinstance(outs, (list, tuple)):
        fail("custom_lin", "needs num_res (int) and out_types")
    return [TensorType(tuple(s), dtype_attr("custom_lin", "out_types", d)) for s, d in outs]


register(
    OpDef(
        "custom_lin",
        _custom_lin_infer,
        lambda args, attrs, regions, run: (_ for _ in ()).throw(
            NotImplementedError("custom_lin is only transposed, never run")
        ),
        frozenset({"pure"}),
        attrs=("rule", "num_res", "out_types"),
        doc="custom_lin(residuals..., tangents...) {rule, num_res, out_types}: the linear map "
        "of a custom_vjp function; it only exists in linear programs, which are transposed",
    )
)
