"""Edge cases the Array API conformance suite (data-apis/array-api-tests) found, against
jax.numpy: complex isfinite/isinf/isnan and rounding, empty matrices in linalg, vecdot's
shape checks, complex inverse-trig special values, boolean masks of empty shapes."""

import itertools

import numpy as np
from jnp_compare import check_cases

_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -1.5, 0.5, -2.0]
ZGRID = np.array([complex(a, b) for a, b in itertools.product(_SPECIAL, _SPECIAL)], np.complex64)
ZROUND = np.array([1.5 + 2.5j, -0.5 - 1.5j, 2.5 - 0.5j, np.inf - 3.5j, -4.5 + 0j], np.complex64)


def test_complex_classification_and_rounding():
    cases = {
        "isfinite": lambda m, z, w: m.isfinite(z),
        "isinf": lambda m, z, w: m.isinf(z),
        "isnan": lambda m, z, w: m.isnan(z),
        "round": lambda m, z, w: m.round(w),
        "round_neg_decimals": lambda m, z, w: m.round(w * 10, -1),
        "rint": lambda m, z, w: m.rint(w),
        "isfinite_scalar": lambda m, z, w: m.isfinite(1.5 + 2j),
        "round_scalar": lambda m, z, w: m.round(2.5 - 1.5j),
    }
    check_cases(cases, ZGRID, ZROUND, eager=True)
