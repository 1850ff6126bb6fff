"""The `fusion` op: a group of ops that runs as one kernel.

    %r = fusion(%a, %b) {kind="loop"} : (f32[8,16]) region(%p: f32[8,16], %q: f32[16]) {
      ...
      return %t
    }

The region is a closed function over the op's operands; the op's results are the region's
results. `kind` says how the group is driven: `"loop"` (one loop over the output shape; every
op is elementwise or moves data) or `"input"` (a reduction with its elementwise producers
and consumers on the reduced shape). Only pure ops may be fused, so the op is pure. The
reference runs the region with the interpreter; the StableHLO lowering either inlines the
region (XLA fuses again) or hands it to XLA as one kernel (`compiler_options={"fusion":
"purejit"}`).
"""

from __future__ import annotations

from purejit.ir.registry import OpDef, fail, register

FUSION_KINDS = ("loop", "input")


def _types(ts) -> str:
    return "(" + ", ".join(str(t) for t in ts) + ")"


def _fusion_infer(types, attrs, regions):
    if len(regions) != 1:
        fail("fusion", f"needs exactly one region, got {len(regions)}")
    kind = attrs.get("kind")
    if kind not in FUSION_KINDS:
        fail("fusion", f"kind={kind!r} must be one of {list(FUSION_KINDS)}")
    (body,) = regions
    if body.param_types != list(types):
        fail("fusion", f"region takes {_types(body.param_types)}, operands are {_types(types)}")
    if not body.results:
        fail("fusion", "region returns nothing")
    for op in body.walk():
        traits = op.opdef.traits
        if "pure" not in traits or "side_effect" in traits or "collective" in traits:
            fail("fusion", f"cannot fuse {op.name}: only pure ops may be fused")
    return list(body.result_types)


def _fusion_ref(args, attrs, regions, run_region):
    return run_region(regions[0], *args)


register(
    OpDef(
        "fusion",
        _fusion_infer,
        _fusion_ref,
        frozenset({"pure", "fusion"}),
        attrs=("kind",),
        num_regions=1,
        doc="fusion(args...) {kind} region(args...) {...}: the region runs as one kernel",
    )
)
