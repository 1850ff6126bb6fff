"""purejit.random: JAX's `jax.random` on purejit, bit for bit.

The default (and only) implementation is threefry2x32 in JAX's partitionable layout, so the
same key, shape, dtype and parameters give the same bits as `jax.random` (see
`_threefry.py`). Keys are typed (`key(seed)`, dtype `key<fry>`) or raw uint32[2] data
(`PRNGKey(seed)`); both work everywhere, through `jit`, `scan` carries and pytrees.
"""

from purejit.random._binomial import binomial
from purejit.random._keys import KeyDType, PRNGKeyArray
from purejit.random._linalg import multivariate_normal, orthogonal
from purejit.random._loops import (
    ball,
    beta,
    dirichlet,
    gamma,
    generalized_normal,
    loggamma,
    poisson,
)
from purejit.random._samplers import (
    bernoulli,
    categorical,
    choice,
    exponential,
    gumbel,
    laplace,
    logistic,
    permutation,
    rademacher,
    randint,
    truncated_normal,
)
from purejit.random._core import (
    PRNGKey,
    bits,
    fold_in,
    key,
    key_data,
    key_dtype,
    key_impl,
    normal,
    split,
    uniform,
    wrap_key_data,
)

__all__ = [
    "binomial",
    "multivariate_normal",
    "orthogonal",
    "ball",
    "beta",
    "dirichlet",
    "gamma",
    "generalized_normal",
    "loggamma",
    "poisson",
    "bernoulli",
    "categorical",
    "choice",
    "exponential",
    "gumbel",
    "laplace",
    "logistic",
    "permutation",
    "rademacher",
    "randint",
    "truncated_normal",
    "KeyDType",
    "PRNGKey",
    "PRNGKeyArray",
    "bits",
    "fold_in",
    "key",
    "key_data",
    "key_dtype",
    "key_impl",
    "normal",
    "split",
    "uniform",
    "wrap_key_data",
]
