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

import os as _os

# As `import jax` does, before jaxlib's C++ code first logs: without it, jaxlib (loaded here
# before jax) logs INFO lines such as "PjRt-IFRT device count" to stderr on the first compile.
# A value already in the environment wins (TF_CPP_MIN_LOG_LEVEL=0 shows them).
_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
del _os
