"""`jax.extend.core.primitives` in drop-in mode: the primitive objects libraries key their
jaxpr-walking rules by (numpyro's provenance tracking). `jit_p` is purejit's `call` op,
whose equations carry the callee as `params["jaxpr"]` (a ClosedJaxpr), as JAX's `jit_p`
equations do. purejit stages every nested call that way, so its jaxprs never hold JAX's
`call_p` or `closed_call_p`: those two are primitives no equation has, and binding one
raises NotImplementedError. Other names are an AttributeError naming them."""

from __future__ import annotations

from purejit.tracing.primitive import get_primitive


class _NeverStaged:
    """A JAX primitive that purejit's jaxprs never contain (a key that matches nothing)."""

    multiple_results = True

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        raise NotImplementedError(
            f"{self.name}: purejit has no such primitive; it stages a nested call as jit_p "
            "(its `call` op): call the function under purejit.jit instead"
        )


jit_p = get_primitive("call")
call_p = _NeverStaged("call")
closed_call_p = _NeverStaged("closed_call")

__all__ = ["call_p", "closed_call_p", "jit_p"]
