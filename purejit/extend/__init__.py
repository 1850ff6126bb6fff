"""What libraries build on, as `jax.extend` and `jax.interpreters`: user-defined primitives
(`core.Primitive`) with their rule tables (`ad`, `batching`, `mlir`), and purejit's IR
through JAX's jaxpr API (`jaxpr`), wrapped functions (`linear_util`, `api_util`) and
partial evaluation (`partial_eval`)."""

from purejit.extend import (
    ad,
    api_util,
    batching,
    core,
    jaxpr,
    linear_util,
    mlir,
    partial_eval,
)

__all__ = [
    "ad",
    "api_util",
    "batching",
    "core",
    "jaxpr",
    "linear_util",
    "mlir",
    "partial_eval",
]
