"""Differentiation of user-defined primitives (`ir/ops/user_primitive.py`): the JVP rule
runs the primitive's entry in `purejit.extend.ad.primitive_jvps`, the transpose rule its
entry in `primitive_transposes` (JAX's signatures: `jvp(primals, tangents, **params)`,
`transpose(cts, *operands, **params)` with `Zero` and `UndefinedPrimal` as here). What the
rules bind lands where their operands live, so a JVP that binds a linear primitive on the
tangents leaves it in the linear program, and transposition finds its transpose rule.
"""

from __future__ import annotations

from purejit.ir.ops.user_primitive import OPS, lookup_use
from purejit.transforms.autodiff._core import LINEAR_OPS, defjvp, deftranspose


@defjvp(*OPS)
def _user_primitive_jvp(ctx, primals, tangents, attrs, regions):
    return lookup_use(attrs["primitive"]).jvp(list(primals), list(tangents))


@deftranspose(*OPS)
def _user_primitive_t(cts, operands, attrs, regions):
    return lookup_use(attrs["primitive"]).transpose(list(cts), list(operands))


# a primitive's JVP may apply a (linear) primitive to tangents
LINEAR_OPS.update(OPS)
