"""What libraries build on, as `jax.extend` and `jax.interpreters`: user-defined primitives
(`core.Primitive`) with their rule tables (`ad`, `batching`, `mlir`), and purejit's IR
through JAX's jaxpr API (`jaxpr`)."""

from purejit.extend import ad, batching, core, jaxpr, mlir

__all__ = ["ad", "batching", "core", "jaxpr", "mlir"]
