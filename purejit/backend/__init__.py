"""The only door to jaxlib: StableHLO emission and the PJRT runtime.

- `stablehlo`: the emitter core (`EmitContext`, `emit`, `verify_module`).
- `lowering/`: one lowering rule per op, `lowering/<family>.py` mirroring `ir/ops/`.
- `shardy`: Shardy mesh and sharding attributes.
- `fusion`, `fusion_routes`, `fusion_check`, `hlo_kernels`: how purejit's fusion groups
  become XLA kernels, and counting the kernels of a compiled program.
- `pjrt`, `spmd`: compiling and running on one device, and on a mesh of devices.
- `mlir_context`, `info`, `distributed`: jaxlib's MLIR context, versions, the
  multi-process runtime.
"""
