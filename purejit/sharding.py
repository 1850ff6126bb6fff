"""Meshes and shardings: `Mesh`, `PartitionSpec` (`P`), `NamedSharding`, `make_mesh`,
`device_put`.

    mesh = Mesh(np.array(purejit.devices()).reshape(4, 2), ("x", "y"))
    xs = purejit.device_put(x, NamedSharding(mesh, PartitionSpec("x", None)))

The partition id of a device is its row-major position in `mesh.devices`; collectives and the
compiled program's device assignment use it. The index math lives in `purejit.ir.spmd` so the
IR interpreter shares it; the classes live in `purejit.runtime.mesh`.
"""

from purejit.compiler.spmd import ProgramLayout, plan_layout
from purejit.runtime.mesh import Mesh, NamedSharding, PartitionSpec, make_mesh
from purejit.runtime.placement import device_put, sharding_of

P = PartitionSpec

__all__ = [
    "Mesh",
    "NamedSharding",
    "P",
    "PartitionSpec",
    "ProgramLayout",
    "device_put",
    "make_mesh",
    "plan_layout",
    "sharding_of",
]
