"""Which element types the accumulating ops of a lowered StableHLO module use: the reference
for comparing purejit's accumulation dtypes with `jax.jit(f).lower(...)` for the same call."""

from __future__ import annotations

from jax._src.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir

# ops whose result dtype is the dtype they accumulate in
ACCUMULATING = ("stablehlo.reduce", "stablehlo.dot_general", "stablehlo.convolution",
                "stablehlo.reduce_window", "stablehlo.scatter")  # fmt: skip


def _ops(block):
    for op in block.operations:
        yield op
        for region in op.regions:
            for inner in region.blocks:
                yield from _ops(inner)


def accumulations(text: str) -> set[tuple[str, str, str]]:
    """{(op, combiner, element type)} of every accumulating op in the module `text`; the
    combiner is the first op of a reduce/scatter body ("" for dots and convolutions)."""
    with jax_mlir.make_ir_context() as ctx:
        module = ir.Module.parse(text, context=ctx)
        found = set()
        for op in _ops(module.body):
            name = op.operation.name
            if name not in ACCUMULATING:
                continue
            combiner = ""
            if op.operation.regions:
                body = op.operation.regions[0].blocks[0].operations
                combiner = body[0].operation.name if len(body) else ""
            for res in op.operation.results:
                found.add((name, combiner, str(ir.RankedTensorType(res.type).element_type)))
        return found
