"""`jax.experimental` in drop-in mode: a package whose submodules are purejit's where purejit
has them (`checkify`, `shard_map`, `layout`, `hijax`; see `_views._RENAMED`); any other
submodule fails at import naming what purejit lacks. `MutableArray` (JAX's array ref, now
`jax.Ref`) is a type no purejit value has: purejit has no mutable array refs."""

from purejit.compat._state import MutableArray

__all__: list[str] = ["MutableArray"]
