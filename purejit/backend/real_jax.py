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


def jax_version() -> str:
    return load()["jax"].__version__
