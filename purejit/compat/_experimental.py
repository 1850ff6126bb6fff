"""`jax.experimental` in drop-in mode: a package whose submodules are purejit's where purejit
has them (`checkify`, `shard_map`; see `_views._RENAMED`); any other submodule fails at
import naming what purejit lacks."""

__all__: list[str] = []
