"""`jax.version` in drop-in mode: the installed JAX's version, as the `jax` view's
`__version__` (libraries branch on `jax.version.__version_info__` for the JAX API they
call, and purejit follows the installed JAX's API)."""

from purejit.compat._views import real_jax

_real = real_jax().version
__version__: str = _real.__version__
__version_info__: tuple = _real.__version_info__
_version: str = _real._version
_minimum_jaxlib_version: str = _real._minimum_jaxlib_version

__all__ = ["__version__", "__version_info__", "_minimum_jaxlib_version", "_version"]
