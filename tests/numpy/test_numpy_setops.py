"""Data-dependent selections and sets against jax.numpy: nonzero family and one-argument
where (size=/fill_value= under jit), unique and the standard's unique_*, searchsorted,
digitize, isin, bincount, histogram, lexsort, partition; and purejit.ops' segment
reductions against jax.ops."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jnp_compare import assert_same, check, check_cases

import purejit
import purejit.numpy as jnp

RNG = np.random.default_rng(0)
M = RNG.integers(0, 4, (3, 5)).astype(np.int32)
F = RNG.standard_normal(20).astype(np.float32)
F[[3, 7]] = np.nan
S = np.sort(RNG.standard_normal(10).astype(np.float32))


def _eager(fn, *args, **kw):
    """Eager only: the results' lengths depend on the data."""
    check(fn, *args, jit=False, **kw)


def test_nonzero_family_eager():
    _eager(lambda m, x: m.nonzero(x), M)
    _eager(lambda m, x: m.argwhere(x), M)
    _eager(lambda m, x: m.argwhere(x[0, 0]), M)
    _eager(lambda m, x: m.flatnonzero(x), M)
    _eager(lambda m, x: m.where(x > 1), M)
    _eager(lambda m, x: m.unique(x), M)
    _eager(lambda m, x: m.unique(x, return_index=True, return_inverse=True, return_counts=True), M)
    _eager(lambda m, x: m.unique(x, axis=1, return_counts=True, return_inverse=True), M)
    _eager(lambda m, x: (m.unique(x), m.unique_values(x), tuple(m.unique_counts(x))), F)
    _eager(lambda m, x: (tuple(m.unique_all(x)), tuple(m.unique_inverse(x))), M)
    _eager(lambda m, x: m.bincount(x.ravel(), minlength=7), M)


def test_sized_under_jit():
    cases = {
        "nonzero size": lambda m, x: m.nonzero(x, size=20, fill_value=-1),
        "nonzero size small": lambda m, x: m.nonzero(x, size=3),
        "nonzero fill per dim": lambda m, x: m.nonzero(x, size=16, fill_value=(7, 8)),
        "argwhere size": lambda m, x: m.argwhere(x, size=4),
        "flatnonzero size": lambda m, x: m.flatnonzero(x, size=4),
        "where one arg": lambda m, x: m.where(x > 1, size=6, fill_value=0),
        "unique size": lambda m, x: m.unique(x, return_index=True, return_inverse=True,
                                             return_counts=True, size=6, fill_value=9),
        "unique_values size": lambda m, x: m.unique_values(x, size=3),
        "bincount length": lambda m, x: m.bincount(x.ravel(), length=6),
        "bincount weights": lambda m, x: m.bincount(x.ravel(), weights=x.ravel() * 0.5, length=3),
    }  # fmt: skip
    check_cases(cases, M, eager=["unique size", "bincount weights"])


def test_data_dependent_shapes_need_size():
    for fn in (lambda x: jnp.nonzero(x), lambda x: jnp.unique(x), lambda x: jnp.bincount(x)):
        with pytest.raises(purejit.ConcretizationTypeError, match="size|length"):
            purejit.jit(fn)(M[0])
    with pytest.raises(ValueError, match="0-d"):
        jnp.nonzero(jnp.asarray(1))


def test_search_and_bins():
    cases = {
        "searchsorted": lambda m, s, f: m.searchsorted(s, f),
        "searchsorted right": lambda m, s, f: m.searchsorted(s, f, side="right"),
        "searchsorted compare_all": lambda m, s, f: m.searchsorted(s, f, method="compare_all"),
        "searchsorted sorter": lambda m, s, f: m.searchsorted(s[::-1], f,
                                                              sorter=m.arange(9, -1, -1)),
        "digitize": lambda m, s, f: m.digitize(f, s),
        "digitize right decreasing": lambda m, s, f: m.digitize(f, s[::-1], right=True),
        "isin": lambda m, s, f: (m.isin(f, s[:4]), m.isin(f, s[:4], invert=True)),
        "histogram": lambda m, s, f: m.histogram(s),
        "histogram range density": lambda m, s, f: m.histogram(s, bins=4, range=(-1, 1),
                                                              density=True),
        "histogram weights": lambda m, s, f: m.histogram(s, bins=3, weights=s * 2),
        "histogram_bin_edges": lambda m, s, f: m.histogram_bin_edges(s, bins=5),
        "lexsort": lambda m, s, f: m.lexsort((s, m.floor(s * 2))),
        "partition": lambda m, s, f: (m.partition(s[::-1], 3), m.partition(f[:6], 0)),
    }  # fmt: skip
    check_cases(cases, S, F, eager=["searchsorted", "digitize", "histogram", "lexsort"])


def test_partition_and_lexsort_ints():
    cases = {
        "partition uint": lambda m, x: m.partition(x.astype(m.uint8), 2, axis=1),
        "partition axis 0": lambda m, x: m.partition(x, 1, axis=0),
        "lexsort rows": lambda m, x: m.lexsort(x),
        "lexsort axis 0": lambda m, x: m.lexsort((x, x[::-1]), axis=0),
    }
    check_cases(cases, M)


@pytest.mark.parametrize("name", ["segment_sum", "segment_max", "segment_min", "segment_prod"])
def test_segment_ops(name):
    data = np.arange(12, dtype=np.float32).reshape(6, 2) - 4
    ids = np.array([0, 0, 2, 2, -1, 5], np.int32)
    want = getattr(jax.ops, name)(data, ids, num_segments=4)
    got = getattr(purejit.ops, name)(data, ids, num_segments=4)
    assert_same(want, got, where=name)
    jitted = purejit.jit(lambda d, i: getattr(purejit.ops, name)(d, i, num_segments=4))(data, ids)
    assert_same(want, jitted, where=f"jit {name}")
    ints = np.array([3, 1, 4, 1, 5], np.int32)
    sid = np.array([0, 1, 0, 2, 2], np.int32)
    assert_same(getattr(jax.ops, name)(ints, sid), getattr(purejit.ops, name)(ints, sid))
    assert jjnp.asarray(0).dtype == np.int32  # the default int under test
