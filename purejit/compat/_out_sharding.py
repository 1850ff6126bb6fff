"""JAX's `out_sharding=` keyword in drop-in mode.

JAX's samplers, array constructors and several lax ops take `out_sharding=` (explicit
sharding: the sharding of the result in its type); purejit's do not, as purejit has no
sharding in types. Libraries pass it through (Flax's `nnx.Dropout` gives
`random.bernoulli(..., out_sharding=None)`, `nnx.Conv` gives it to
`lax.conv_general_dilated`), so the views' functions take the keyword: None, the default,
runs purejit's function; a sharding on one device (what nnx.Dropout passes for an eager
array: `jax.typeof(x).sharding`) runs it and puts the result on that device; anything else
raises NotImplementedError naming the fix.
"""

from __future__ import annotations

import functools

# JAX 0.10's functions with an `out_sharding` keyword that purejit's lack, per module (all of
# jax.random's and jax.lax's; jax.numpy's array constructors also take it)
TAKES_OUT_SHARDING = {
    "jax.random": (
        "ball", "bernoulli", "beta", "bits", "categorical", "cauchy", "chisquare",
        "dirichlet", "exponential", "f", "gamma", "generalized_normal", "geometric", "gumbel",
        "laplace", "loggamma", "logistic", "lognormal", "maxwell", "multivariate_normal",
        "normal", "orthogonal", "pareto", "permutation", "poisson", "rademacher", "randint",
        "rayleigh", "t", "triangular", "truncated_normal", "uniform", "wald",
    ),
    "jax.lax": (
        "broadcast", "broadcast_in_dim", "broadcasted_iota", "conv_general_dilated", "dot",
        "reduce", "reshape",
    ),
    # the contractions Flax passes it to (nnx.Embed.attend, nnx.Einsum, DotGeneral); the
    # array constructors keep purejit's own functions (one call less on the hot path)
    "jax.numpy": ("dot", "matmul", "tensordot"),
}  # fmt: skip


def _with_out_sharding(qualname: str, fn):
    @functools.wraps(fn)
    def with_keyword(*args, out_sharding=None, **kwargs):
        if out_sharding is not None and len(getattr(out_sharding, "device_set", ())) == 1:
            from purejit import device_put

            return device_put(fn(*args, **kwargs), out_sharding)
        if out_sharding is not None:
            raise NotImplementedError(
                f"{qualname}: out_sharding= needs JAX's explicit sharding (sharding in "
                "types), which purejit does not have; place the result with device_put, "
                "jit's out_shardings or with_sharding_constraint"
            )
        return fn(*args, **kwargs)

    return with_keyword


def overrides(name: str, source, names: dict) -> dict:
    """The view `name`'s functions that take `out_sharding`: each the function the view
    already gives (`names`, else `source`'s) behind the keyword."""
    out = {}
    for n in TAKES_OUT_SHARDING.get(name, ()):
        fn = names.get(n, getattr(source, n, None))
        if fn is not None:
            out[n] = _with_out_sharding(f"{name.removeprefix('jax.')}.{n}", fn)
    return out
