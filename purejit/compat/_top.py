"""JAX-only names of the drop-in views: what a JAX module has under a name purejit spells
differently, or not at all at purejit's top level."""

from __future__ import annotations


def overrides(real) -> dict:
    """The `jax` view's names beyond purejit's top-level ones (`real`: the real jax)."""
    from purejit import typing

    from purejit.compat import _avals, _jit

    out = {
        "jit": _jit.jit,
        "typeof": _avals.typeof,
        "__version__": real.__version__,
        "__version_info__": getattr(real, "__version_info__", None),
        "Array": typing.ArrayValue,
        "__path__": [],  # a package: `import jax.numpy` looks for submodules below it
    }
    return out


def module_overrides(name: str) -> dict:
    """JAX-only names of the view `name` (a `jax.<...>` module)."""
    from purejit import typing

    if name in ("jax.tree_util", "jax.tree"):
        from purejit.compat import _trees

        return dict(_trees.TREE_UTIL if name == "jax.tree_util" else _trees.TREE)
    if name == "jax.numpy":
        from purejit.compat import _keyops

        return {"ndarray": typing.ArrayValue, **_keyops.NUMPY}
    if name == "jax.lax":
        from purejit.compat import _collectives

        return _collectives.missing()
    if name == "jax.errors":
        from purejit.backend import real_jax

        # XLA's runtime errors are jaxlib's class: `except jax.errors.JaxRuntimeError` works
        return {"JaxRuntimeError": real_jax.load()["jax_errors"].JaxRuntimeError}
    if name in ("jax.core", "jax._src.core"):
        from purejit.compat import _avals

        return {"ShapedArray": _avals.ShapedArray, "AbstractValue": _avals.AbstractValue}
    if name == "jax.experimental":
        from purejit.debug import io_callback

        return {"io_callback": io_callback}
    return {}
