"""JAX-only names of the drop-in views: what a JAX module has under a name purejit spells
differently, or not at all at purejit's top level."""

from __future__ import annotations


def overrides(real) -> dict:
    """The `jax` view's names beyond purejit's top-level ones (`real`: the real jax)."""
    from purejit import typing

    out = {
        "__version__": real.__version__,
        "__version_info__": getattr(real, "__version_info__", None),
        "Array": typing.ArrayValue,
        "__path__": [],  # a package: `import jax.numpy` looks for submodules below it
    }
    return out


def module_overrides(name: str) -> dict:
    """JAX-only names of the view `name` (a `jax.<...>` module)."""
    from purejit import typing

    if name == "jax.numpy":
        return {"ndarray": typing.ArrayValue}
    if name == "jax.errors":
        from purejit.backend import real_jax

        # XLA's runtime errors are jaxlib's class: `except jax.errors.JaxRuntimeError` works
        return {"JaxRuntimeError": real_jax.load()["jax_errors"].JaxRuntimeError}
    if name == "jax.experimental":
        from purejit.debug import io_callback

        return {"io_callback": io_callback}
    return {}
