"""The real `jax` and `jaxlib`, loaded and bound under private names before drop-in mode
(`purejit.compat`) installs its import hook, so the backend's own imports keep reaching them.
"""

from __future__ import annotations

import types

_REAL: dict[str, types.ModuleType] = {}


def load() -> dict[str, types.ModuleType]:
    """Import the real jax and jaxlib (and the submodules the backend reaches lazily) once."""
    if not _REAL:
        import jax
        import jax.extend.backend
        import jax.sharding
        import jaxlib
        from jax import errors

        _REAL.update(jax=jax, jaxlib=jaxlib, jax_errors=errors)
    return _REAL


def compiler_ir(module_text: str, dialect: str):
    """A StableHLO module as JAX's `Lowered.compiler_ir` gives it: "stablehlo", an MLIR
    module; "hlo", an XLA computation (`.as_hlo_text()`, `.as_serialized_hlo_module_proto()`)."""
    if dialect == "stablehlo":
        from jaxlib.mlir import ir

        from purejit.backend import mlir_context

        with mlir_context.context():
            return ir.Module.parse(module_text)
    if dialect == "hlo":
        from jaxlib import _jax

        return _jax.mlir.mlir_module_to_xla_computation(
            module_text, use_tuple_args=False, return_tuple=False
        )
    raise ValueError(f"compiler_ir: unknown dialect {dialect!r} (use 'stablehlo' or 'hlo')")


def initialized_backends() -> dict:
    """The PJRT clients the real JAX (whose clients purejit runs on) has started, by platform
    (empty before the first device is touched; XLA's device-count flags apply until then)."""
    import sys

    bridge = sys.modules.get("jax._src.xla_bridge")
    return dict(getattr(bridge, "_backends", None) or {})
