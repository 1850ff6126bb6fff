"""What libraries build on, as `jax.extend` and `jax.interpreters`: user-defined primitives
(`core.Primitive`) with their rule tables (`ad`, `batching`, `mlir`)."""

from purejit.extend import ad, batching, core, mlir

__all__ = ["ad", "batching", "core", "mlir"]
