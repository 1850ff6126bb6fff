"""The routes by which purejit's `fusion` groups reach XLA, and what each route can take.

    "xla"          inline the region: a flat program, XLA fuses as it likes (the default)
    "mhlo.fusion"  an `mhlo.fusion` op with `fusion_kind = kLoop`: exactly one XLA kernel
    "call"         a private function called with `inlineable = "false"`: XLA fuses inside

Which route works on the running back end is decided by the probe (`fusion.probe_route`),
and is described by a `Capability`. Every emitted group is tagged with the MLIR location
`loc("purejit.fusion.N")`, which XLA keeps as `op_name` metadata, so `explain` can match
XLA's kernels to purejit's groups.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

ROUTES = ("xla", "mhlo.fusion", "call")
TAG = "purejit.fusion."

# what the mhlo.fusion route may not take (fusion_check.py says why; the Fusion pass is
# configured with these)
EXCLUDED_OPS = ("transpose", "reshape")

# the XLA pass that fuses on each platform; switched off when purejit's groups are the kernels
_XLA_FUSION_PASS = {
    "cpu": "fusion",
    "gpu": "priority-fusion",
    "cuda": "priority-fusion",
    "rocm": "priority-fusion",
}


def xla_fusion_pass(platform: str) -> str:
    return _XLA_FUSION_PASS.get(platform, "fusion")


_warned: set[str] = set()


def warn_once(key: str, msg: str):
    """Warn with `msg` the first time `key` is seen in this process."""
    if key not in _warned:
        _warned.add(key)
        warnings.warn(msg, RuntimeWarning, stacklevel=3)


@dataclass(frozen=True)
class Capability:
    """What the running back end does with purejit's groups.

    Attributes:
        route: the best route that makes each group one kernel, or "xla" (none does).
        platform: the PJRT platform probed.
        detail: the probe's findings, for warnings and `explain`.
        exclude_ops: ops the route cannot take inside a group (the Fusion pass leaves them).
        elementwise_after_reduction: a group may hold only elementwise ops downstream of
            a reduction.
        multi_output: groups may have several results.
    """

    route: str
    platform: str
    detail: str
    exclude_ops: tuple[str, ...] = ()
    elementwise_after_reduction: bool = False
    multi_output: bool = False

    @property
    def realised(self) -> bool:
        return self.route != "xla"

    def fusion_options(self) -> dict:
        """Options of `purejit.passes.fusion.Fusion` that keep groups within the route."""
        if not self.realised:
            return {}
        return {
            "multi_output": self.multi_output,
            "exclude_ops": self.exclude_ops,
            "elementwise_after_reduction": self.elementwise_after_reduction,
            "min_group_ops": 1,  # lone fusible ops too: XLA may not rewrite a kernel
            # layout assignment relays a transpose's neighbours (making it a bitcast) but not
            # the inside of a pre-built fusion, which the HLO verifier then rejects
            "keep_apart_from": ("transpose",) if self.route == "mhlo.fusion" else (),
            # XLA CPU aborts (`Check failed: has_layout()`) on a pre-built fusion that reads
            # or writes pred values (found by tests/passes/fusion_abort_repro.py)
            "bool_boundaries": self.route != "mhlo.fusion",
        }


def route_problem(body, route: str, cap: Capability | None = None) -> str | None:
    """What in a group's region `route` cannot take, or None."""
    if len(body.results) != 1:
        return f"{len(body.results)} results"
    if route != "mhlo.fusion":
        return None
    excluded = set(EXCLUDED_OPS) | set(cap.exclude_ops if cap else ())
    after_reduction: set = set()
    for op in body.walk():
        if op.name in excluded:
            return f"a {op.name}"
        if any(v in after_reduction for v in op.operands):
            if not op.has_trait("elementwise"):
                return f"a {op.name} after a reduction"
            after_reduction.update(op.results)
        if op.has_trait("reduction"):
            after_reduction.update(op.results)
    return None
