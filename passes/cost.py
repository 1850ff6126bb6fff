"""The cost model shared by the fusion pass and `explain`: bytes moved and flops per kernel.

A kernel reads each distinct input once and writes each output once; run eagerly, every op
is its own kernel, so a chain of k elementwise ops moves about 2k arrays where the fused
kernel moves 2. Views cost nothing: constants live in the executable and a row-major
`reshape` is a bitcast in XLA.
"""

from __future__ import annotations

from dataclasses import dataclass

from purejit.ir import Function, Op, Value
from purejit.ir.ops.attention import BWD, FWD, LIN, attention_flops

# ops whose arithmetic has its own formula, one rule per op
FLOPS_RULES = {FWD: attention_flops, LIN: attention_flops, BWD: attention_flops}


def is_cheap_elementwise(op: Op) -> bool:
    """Elementwise ops cheap enough to recompute in each kernel that reads them; any other
    (transcendentals, division) counts as expensive and is never computed twice."""
    return op.has_trait("elementwise") and op.has_trait("cheap")


def is_view(op: Op) -> bool:
    """Ops that launch no kernel of their own in XLA (constants, row-major reshapes)."""
    return op.has_trait("constant") or op.has_trait("view")


def value_bytes(values) -> int:
    """Bytes of the distinct values in `values`."""
    return sum(v.type.nbytes for v in dict.fromkeys(values))


def kernel_bytes(op: Op) -> int:
    """What `op` moves as one kernel: its distinct operands read, its results written."""
    if is_view(op):
        return 0
    return value_bytes(op.operands) + value_bytes(op.results)


def eager_bytes(op: Op) -> int:
    """What `op` moves run op by op; a fusion counts every op inside it."""
    if op.has_trait("fusion"):
        return sum(eager_bytes(inner) for inner in op.regions[0].ops)
    return kernel_bytes(op)


def flops(op: Op) -> int:
    """Arithmetic operations (an estimate in XLA's sense: one per element per op)."""
    rule = FLOPS_RULES.get(op.name)
    if rule is not None:
        return rule(op)
    if op.has_trait("fusion") or op.has_trait("control_flow"):
        return sum(flops(inner) for r in op.regions for inner in r.ops)
    if op.has_trait("contraction"):
        out = op.results[0].type.size
        lhs = op.operands[0].type
        k = 1
        for d in op.attrs.get("lhs_contracting_dimensions", ()):
            k *= lhs.shape[d]
        return 2 * out * k
    if op.has_trait("reduction"):
        return sum(v.type.size for v in op.operands[: len(op.operands) // 2])
    if op.has_trait("elementwise"):
        return op.results[0].type.size
    return 0


@dataclass
class KernelEstimate:
    """One kernel purejit predicts: a fusion group or a lone op."""

    op: Op
    group: int | None  # the fusion group's number (emission order), None for a lone op
    bytes_read: int
    bytes_written: int
    bytes_eager: int
    flops: int

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def ops(self) -> list[str]:
        if self.group is None:
            return [self.op.name]
        return [o.name for o in self.op.regions[0].ops if not o.has_trait("constant")]


def predicted_kernels(fn: Function) -> list[KernelEstimate]:
    """The kernels purejit expects XLA to launch for `fn`, in emission order: each `fusion`
    op, and each other op that is not a view; control-flow bodies are looked into."""
    out: list[KernelEstimate] = []
    counter = [0]

    def visit(f: Function):
        for op in f.ops:
            if op.has_trait("fusion"):
                k = counter[0]
                counter[0] += 1
                out.append(
                    KernelEstimate(
                        op,
                        k,
                        value_bytes(op.operands),
                        value_bytes(op.results),
                        eager_bytes(op),
                        flops(op),
                    )
                )
            elif op.regions and op.has_trait("control_flow"):
                for r in op.regions:
                    visit(r)
            elif not is_view(op):
                out.append(
                    KernelEstimate(
                        op,
                        None,
                        value_bytes(op.operands),
                        value_bytes(op.results),
                        kernel_bytes(op),
                        flops(op),
                    )
                )

    visit(fn)
    return out


def traffic(fn: Function) -> tuple[int, int]:
    """(eager bytes, fused bytes) over the whole function."""
    ks = predicted_kernels(fn)
    return sum(k.bytes_eager for k in ks), sum(k.bytes for k in ks)


def group_traffic(inputs: list[Value], outputs: list[Value]) -> int:
    """Bytes a kernel with these external inputs and outputs moves."""
    return value_bytes(inputs) + value_bytes(outputs)
