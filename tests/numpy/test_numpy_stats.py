"""Statistics and the other jax.numpy functions beyond the standard, against jax.numpy:
quantiles, nan* reductions, where= in reductions, cov/corrcoef, isclose family, nan_to_num,
ediff1d, gradient, interp, kron, polyval, logaddexp2, heaviside, select, piecewise,
apply_along_axis."""

import numpy as np
from jnp_compare import check_cases

RNG = np.random.default_rng(1)
X = RNG.standard_normal((4, 6)).astype(np.float32)
G = X.copy()
G[1, 2] = np.nan
G[3, :] = np.nan
SPECIAL = np.array([0, 1, -1, np.inf, -np.inf, np.nan, 3, -0.0], np.float32)


def test_quantiles():
    q3 = np.array([0.1, 0.5, 0.9], np.float32)
    cases = {}
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        cases[f"quantile {method}"] = lambda m, x, g, q, method=method: (
            m.quantile(x, 0.3, axis=1, method=method),
            m.quantile(x, q, axis=0, method=method),
        )
    cases["quantile keepdims"] = lambda m, x, g, q: m.quantile(x, 0.25, keepdims=True)
    cases["quantile axes"] = lambda m, x, g, q: m.quantile(x.reshape(2, 2, 6), q, axis=(0, 2),
                                                           keepdims=True)  # fmt: skip
    cases["nanquantile"] = lambda m, x, g, q: m.nanquantile(g, q, axis=1)
    cases["percentile"] = lambda m, x, g, q: (m.percentile(x, 30, axis=0),
                                              m.nanpercentile(g, q * 100, axis=1))  # fmt: skip
    cases["median"] = lambda m, x, g, q: (m.median(x, axis=1), m.median(x.astype(m.int32)),
                                          m.nanmedian(g, axis=1))  # fmt: skip
    check_cases(cases, X, G, q3, eager=["quantile linear", "nanquantile", "median"])


def test_nan_reductions():
    cases = {}
    for name in ("nansum", "nanprod", "nanmax", "nanmin", "nanargmax", "nanargmin", "nancumsum",
                 "nancumprod", "nanmean", "nanvar", "nanstd"):  # fmt: skip
        cases[name] = lambda m, g, name=name: (getattr(m, name)(g, axis=1),
                                               getattr(m, name)(g))  # fmt: skip
    cases["nanvar ddof keepdims"] = lambda m, g: m.nanvar(g, axis=0, ddof=1, keepdims=True)
    cases["int input"] = lambda m, g: (m.nansum(m.arange(5)), m.nanmax(m.arange(5)))
    check_cases(cases, G, eager=["nansum", "nanmean", "nanargmax"])


def test_where_in_reductions():
    cases = {}
    for name, kw in (("sum", {}), ("prod", {}), ("mean", {}), ("var", {}), ("std", {"ddof": 1}),
                     ("max", {"initial": -1.0}), ("min", {"initial": 9.0}), ("any", {}),
                     ("all", {})):  # fmt: skip
        cases[name] = lambda m, x, name=name, kw=kw: getattr(m, name)(x, axis=1, where=x > 0,
                                                                      **kw)  # fmt: skip
    cases["broadcast mask"] = lambda m, x: m.sum(
        x, axis=0, where=m.asarray([True, False, True, True, False, True])
    )
    cases["nanmean where"] = lambda m, x: m.nanmean(x, axis=1, where=x < 1)
    cases["complex var"] = lambda m, x: m.var(x + 1j * x[::-1], axis=0)
    check_cases(cases, X, eager=["sum", "mean", "max"])


def test_comparisons_and_cov():
    cases = {
        "isclose": lambda m, x, s: (m.isclose(s, s[::-1]), m.isclose(s, s, equal_nan=True),
                                    m.isclose(x, x + 1e-6), m.isclose(x, x + 1, atol=1.5)),
        "allclose": lambda m, x, s: (m.allclose(x, x + 1e-7), m.allclose(s, s),
                                     m.allclose(s, s, equal_nan=True)),
        "array_equal": lambda m, x, s: (m.array_equal(x, x), m.array_equal(s, s),
                                        m.array_equal(s, s, equal_nan=True),
                                        m.array_equal(x, x[0])),
        "array_equiv": lambda m, x, s: (m.array_equiv(x, x[0]), m.array_equiv(x, x[:, 0])),
        "nan_to_num": lambda m, x, s: (m.nan_to_num(s), m.nan_to_num(s, nan=1.0, posinf=2.0,
                                                                     neginf=-3.0),
                                       m.nan_to_num(s + 1j * s[::-1])),
        "ptp average": lambda m, x, s: (m.ptp(x, axis=1),
                                        m.average(x, axis=1, weights=m.arange(6.0),
                                                  returned=True),
                                        m.average(x, returned=True)),
        "cov": lambda m, x, s: (m.cov(x), m.cov(x[0], x[1], rowvar=False), m.cov(x, bias=True),
                                m.cov(x, fweights=m.arange(1, 7), aweights=x[0] ** 2)),
        "corrcoef": lambda m, x, s: (m.corrcoef(x), m.corrcoef(x[0], x[1])),
    }  # fmt: skip
    check_cases(cases, X, SPECIAL, eager=["isclose", "nan_to_num", "cov"], rtol=1e-5, atol=1e-5)


def test_functions():
    xp = np.sort(RNG.uniform(0, 10, 8)).astype(np.float32)
    fp = RNG.standard_normal(8).astype(np.float32)
    xs = RNG.uniform(-2, 12, 20).astype(np.float32)
    cases = {
        "ediff1d": lambda m, x, *_: (m.ediff1d(x), m.ediff1d(x, to_begin=m.asarray([1.0, 2.0]),
                                                             to_end=9)),
        "gradient": lambda m, x, *_: (m.gradient(x), m.gradient(x, 2.0, axis=1),
                                      m.gradient(x[0], m.cumsum(m.abs(x[1])) + 0.1)),
        "interp": lambda m, x, xp, fp, xs: (m.interp(xs, xp, fp),
                                            m.interp(xs, xp, fp, left=-1.0, right=5.0),
                                            m.interp(xs, xp, fp, period=7.0)),
        "kron": lambda m, x, *_: (m.kron(x[:2, :3], m.arange(4).reshape(2, 2)),
                                  m.kron(x[0], x[:2, :3])),
        "polyval": lambda m, x, *_: (m.polyval(m.asarray([1.0, -2, 3]), x),
                                     m.polyval(m.asarray([1, -2, 3]), m.arange(4))),
        "logaddexp": lambda m, x, *_: (m.logaddexp2(x, x[::-1]),
                                       m.logaddexp(m.asarray([m.inf, -m.inf, m.nan]),
                                                   m.asarray([m.inf, -m.inf, 0.0]))),
        "heaviside": lambda m, x, *_: m.heaviside(m.asarray([0.0, 1, -1, m.nan, m.inf]), 0.5),
        "select": lambda m, x, *_: m.select([x > 0, x < -1], [x, 2 * x], default=-7),
        "piecewise": lambda m, x, *_: m.piecewise(x, [x < 0, x > 1],
                                                  [lambda v: -v, lambda v: v * 2, 0.5]),
        "apply_along_axis": lambda m, x, *_: (m.apply_along_axis(lambda r: m.sum(r * r), 1, x),
                                              m.apply_along_axis(lambda r: r[::-1][:2], 0, x)),
    }  # fmt: skip
    check_cases(cases, X, xp, fp, xs, eager=["interp", "gradient", "select"], rtol=1e-5,
                atol=1e-6)  # fmt: skip
