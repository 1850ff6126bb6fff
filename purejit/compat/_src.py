"""`jax._src` in drop-in mode: only the internal modules purejit has an equivalent for
resolve below it (`_views._INTERNAL`); any other fails at import naming the module."""

__all__: list[str] = []
