"""Every op family through `purejit.vmap`, against `jax.vmap`, with random in_axes/out_axes.

Each case runs with every non-empty set of its arguments mapped; a group is one jitted
program per side (compiles are the slow part). `test_every_rule_runs` checks that the cases
reach the batching rule of every registered op that has operands.
"""

from __future__ import annotations

import numpy as np
import pytest
from vmap_harness import Arg, Bo, Case, F, I, P, run_group

import purejit
from purejit.ir import all_ops
from purejit.transforms.batching import core as bcore

UNARY = ["sin", "cos", "tan", "tanh", "exp", "expm1", "log1p", "abs", "sign", "floor", "ceil",
         "round", "negative", "sinh", "cosh", "arcsinh", "arctan", "cbrt", "isfinite", "square",
         "rint", "trunc", "reciprocal", "logaddexp", "arcsin", "arccos", "arctanh"]  # fmt: skip
POSITIVE = ["sqrt", "log", "log2", "arccosh"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "arctan2", "power",
          "greater", "less_equal", "equal", "not_equal", "hypot", "copysign", "fmod"]  # fmt: skip


def _elementwise_cases():
    cases = []
    for name in UNARY:
        if name == "logaddexp":
            cases.append(Case(name, lambda n, lx: n.logaddexp, [F(2, 3), F(2, 3)]))
        else:
            arg = F(2, 3, lo=-0.9, hi=0.9) if name.startswith("arc") else F(2, 3)
            cases.append(Case(name, lambda n, lx, f=name: getattr(n, f), [arg]))
    for name in POSITIVE:
        cases.append(
            Case(
                name,
                lambda n, lx, f=name: getattr(n, f),
                [P(4) if name != "arccosh" else F(4, lo=1.5, hi=3)],
            )
        )
    for name in BINARY:
        a = P(2, 3) if name == "power" else F(2, 3)
        cases.append(Case(name, lambda n, lx, f=name: getattr(n, f), [a, F(2, 3)]))
    cases += [
        Case("where", lambda n, lx: n.where, [Bo(2, 3), F(2, 3), F(2, 3)]),
        Case(
            "select_scalar_pred", lambda n, lx: lambda p, a, b: lx.select(p, a, b), [Bo(), F(), F()]
        ),
        Case(
            "clamp",
            lambda n, lx: lambda lo, x, hi: lx.clamp(lo, x, hi),
            [F(lo=-2, hi=-1), F(3), F(lo=1, hi=2)],
        ),
        Case(
            "clip_arrays", lambda n, lx: lambda x, lo: n.clip(x, lo, 1.0), [F(3), F(3, lo=-1, hi=0)]
        ),
        Case("astype", lambda n, lx: lambda x: x.astype(n.int32), [F(4, lo=-9, hi=9)]),
        Case(
            "int_ops",
            lambda n, lx: lambda a, b: (a // b, a % b, a & b, a | b, a ^ b, a << 2, a >> 1, ~a),
            [I(4, lo=1, hi=50), I(4, lo=1, hi=7)],
        ),
        Case(
            "lax_misc",
            lambda n, lx: (
                lambda x: (
                    lx.erf(x),
                    lx.lgamma(n.abs(x) + 1),
                    lx.logistic(x),
                    lx.rsqrt(n.abs(x) + 1),
                    lx.population_count(x.astype(n.int32)),
                    lx.clz(x.astype(n.int32)),
                    lx.integer_pow(x, 3),
                    lx.round(x, 1),
                    lx.round(x, 0),
                    lx.shift_right_logical(x.astype(n.int32), 1),
                )
            ),
            [F(5, lo=-4, hi=4)],
        ),
        Case(
            "complex_parts",
            lambda n, lx: lambda x, y: (n.real((x + 1j * y) * 2), n.imag((x + 1j * y) * 3)),
            [F(3), F(3)],
        ),
        Case("logical", lambda n, lx: lambda a, b: (a & b, a | b, ~a, a ^ b), [Bo(4), Bo(4)]),
        Case("python_scalar", lambda n, lx: lambda x: x * 2 + 1, [F(3)]),
        Case(
            "erf_inv_nextafter",
            lambda n, lx: lambda x, y: (lx.erf_inv(x * 0.4), lx.nextafter(x, y)),
            [F(3), F(3)],
        ),
        Case(
            "reduce_precision",
            lambda n, lx: lambda x: lx.reduce_precision(x * 3.7, exponent_bits=5, mantissa_bits=4),
            [F(3)],
        ),
        Case(
            "special_functions",
            lambda n, lx: (
                lambda x, y: (
                    lx.erfc(x),
                    lx.digamma(n.abs(x) + 0.5),
                    lx.bessel_i1e(y),
                    lx.polygamma(n.ones_like(x) * 2, n.abs(y) + 0.5),
                    lx.zeta(n.abs(x) + 1.5, n.abs(y) + 0.5),
                )
            ),
            [F(3), F(3)],
        ),
    ]
    return cases


def _shape_cases():
    return [
        Case("reshape", lambda n, lx: lambda x: x.reshape(6, 2), [F(3, 4)]),
        Case("transpose", lambda n, lx: lambda x: n.transpose(x, (2, 0, 1)), [F(2, 3, 4)]),
        Case(
            "broadcast_to", lambda n, lx: lambda x: n.broadcast_to(x[:, None], (3, 2, 4)), [F(3, 4)]
        ),
        Case(
            "broadcast_in_dim",
            lambda n, lx: lambda x: lx.broadcast_in_dim(x, (2, 3, 4), (0, 2)),
            [F(2, 4)],
        ),
        Case("slice", lambda n, lx: lambda x: x[1:, ::2], [F(4, 5)]),
        Case("reverse", lambda n, lx: lambda x: n.flip(x, 1), [F(2, 3)]),
        Case(
            "concatenate",
            lambda n, lx: lambda a, b: n.concatenate([a, b], axis=1),
            [F(2, 3), F(2, 2)],
        ),
        Case("stack", lambda n, lx: lambda a, b: n.stack([a, b], axis=-1), [F(3), F(3)]),
        Case(
            "pad", lambda n, lx: lambda x, v: lx.pad(x, v, [(1, 2, 1), (0, -1, 0)]), [F(3, 4), F()]
        ),
        Case("jnp_pad", lambda n, lx: lambda x: n.pad(x, ((1, 1), (2, 0))), [F(2, 3)]),
        Case("iota_const", lambda n, lx: lambda x: x + n.arange(4.0) + np.float32(2), [F(4)]),
        Case(
            "squeeze_expand",
            lambda n, lx: lambda x: n.expand_dims(n.squeeze(x, 1), 0),
            [F(3, 1, 2)],
        ),
        Case(
            "tril_repeat_roll",
            lambda n, lx: lambda x: (n.tril(x), n.repeat(x, 2, axis=0), n.roll(x, 1, 1)),
            [F(3, 3)],
        ),
    ]


def _indexing_cases():
    return [
        Case(
            "dynamic_slice",
            lambda n, lx: lambda x, i: lx.dynamic_slice(x, (i, 1), (2, 2)),
            [F(5, 4), I(lo=-1, hi=6)],
        ),
        Case(
            "dynamic_update_slice",
            lambda n, lx: lambda x, u, i: lx.dynamic_update_slice(x, u, (i, 0)),
            [F(5, 3), F(2, 3), I(lo=-1, hi=6)],
        ),
        Case("index_array", lambda n, lx: lambda x, i: x[i], [F(5, 3), I(4, lo=0, hi=5)]),
        Case(
            "index_2d",
            lambda n, lx: lambda x, i, j: x[i, :, j],
            [F(4, 2, 3), I(3, lo=0, hi=4), I(3, lo=0, hi=3)],
        ),
        Case(
            "take_along_axis",
            lambda n, lx: lambda x, i: n.take_along_axis(x, i, axis=1),
            [F(3, 4), I(3, 2, lo=0, hi=4)],
        ),
        Case("scalar_index", lambda n, lx: lambda x, i: x[i], [F(6), I(lo=0, hi=6)]),
        Case(
            "at_set", lambda n, lx: lambda x, i, u: x.at[i].set(u), [F(5, 2), I(lo=0, hi=5), F(2)]
        ),
        Case(
            "at_add",
            lambda n, lx: lambda x, i, u: x.at[i].add(u),
            [F(5, 2), I(3, lo=0, hi=5), F(3, 2)],
        ),
        Case(
            "at_max_mul",
            lambda n, lx: lambda x, i, u: (x.at[i].max(u), x.at[i].multiply(u)),
            [F(6), I(2, lo=0, hi=6), F(2)],
        ),
    ]


def _reduce_sort_cases():
    return [
        Case(
            "sum_max",
            lambda n, lx: lambda x: (x.sum(0), x.max(1), x.min(), n.prod(x, 0)),
            [F(3, 4)],
        ),
        Case("mean_var", lambda n, lx: lambda x: (x.mean(1, keepdims=True), x.var()), [F(3, 4)]),
        Case("argmax", lambda n, lx: lambda x: (n.argmax(x, 1), n.argmin(x, 0)), [F(3, 4)]),
        Case("any_all", lambda n, lx: lambda b: (n.any(b, 0), n.all(b)), [Bo(3, 4)]),
        Case(
            "lax_reduce",
            lambda n, lx: lambda x: lx.reduce(x, np.float32(0), lx.add, (0,)),
            [F(3, 2)],
        ),
        Case(
            "cumsum",
            lambda n, lx: (
                lambda x: (n.cumsum(x, 1), lx.cummax(x, 0), lx.cumprod(x, 1, reverse=True))
            ),
            [F(3, 4)],
        ),
        Case("sort", lambda n, lx: lambda x: (n.sort(x, 0), n.argsort(x, 1)), [F(3, 4)]),
        Case(
            "sort_key_val",
            lambda n, lx: lambda k, v: lx.sort_key_val(k, v),
            [F(5), I(5, lo=0, hi=9)],
        ),
        Case("top_k", lambda n, lx: lambda x: lx.top_k(x, 2), [F(5)]),
        Case("top_k_2d", lambda n, lx: lambda x: lx.top_k(x, 3), [F(2, 4)]),
    ]


def _contraction_cases():
    return [
        Case("matmul", lambda n, lx: lambda a, b: a @ b, [F(2, 3), F(3, 4)]),
        Case("matvec", lambda n, lx: lambda a, b: a @ b, [F(2, 3), F(3)]),
        Case(
            "dot_general_batch",
            lambda n, lx: lambda a, b: lx.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
            [F(2, 3, 4), F(2, 4, 5)],
        ),
        Case("einsum", lambda n, lx: lambda a, b: n.einsum("ij,kj->ik", a, b), [F(2, 3), F(4, 3)]),
        Case("vdot", lambda n, lx: lambda a, b: n.dot(a, b), [F(3), F(3)]),
    ]


def _control_cases():
    def cond(n, lx):
        return lambda p, x: lx.cond(p > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)

    def switch(n, lx):
        return lambda i, x, y: lx.switch(
            i, [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b], x, y
        )

    def while_(n, lx):
        def f(x, limit):
            return lx.while_loop(
                lambda c: c[0] < limit, lambda c: (c[0] + 1.0, c[1] * 1.5), (0.0, x)
            )

        return f

    def fori(n, lx):
        return lambda x, k: lx.fori_loop(0, k, lambda i, c: c * 0.5 + i, x)

    def scan(n, lx):
        def f(c0, xs, w):
            def body(c, x):
                c = n.tanh(c * w + x)
                return c, c.sum()

            return lx.scan(body, c0, xs)

        return f

    def scan_unbatched_carry(n, lx):
        return lambda xs: lx.scan(lambda c, x: (c + 1.0, x * c), np.float32(0.0), xs)

    def nested_cond_in_scan(n, lx):
        def f(xs, t):
            def body(c, x):
                c = lx.cond(x > t, lambda a: a + x, lambda a: a * 0.5, c)
                return c, c

            return lx.scan(body, np.float32(1.0), xs)

        return f

    def nested_jit(n, lx):
        # a jitted function inside the vmapped one is a `call` op under purejit's jit
        if n is purejit.numpy:
            jit = purejit.jit
        else:
            import jax

            jit = jax.jit
        g = jit(lambda a, b: n.sin(a) * b + a)
        return lambda x, y: g(x, y) * 2.0

    return [
        Case("nested_jit", nested_jit, [F(3), F(3)]),
        Case("cond", cond, [F(), F(3)]),
        Case("switch", switch, [I(lo=-1, hi=4), F(2), F(2)]),
        Case("while", while_, [F(2), Arg(lambda r: np.asarray(r.integers(0, 5), np.float32))]),
        Case("fori_loop_batched_bound", fori, [F(3), I(lo=0, hi=4)]),
        Case("scan", scan, [F(2), F(4, 2), F(2)]),
        Case("scan_unbatched_carry", scan_unbatched_carry, [F(4)]),
        Case("cond_in_scan", nested_cond_in_scan, [F(4), F()]),
    ]


def _collective_cases():
    kw = {"axis_name": "i"}
    return [
        Case(
            "psum",
            lambda n, lx: (
                lambda x, y: (lx.psum(x, "i"), lx.pmax(x, "i"), lx.pmin(y, "i"), lx.pmean(x, "i"))
            ),
            [F(2), F()],
            kw=kw,
        ),
        Case(
            "psum_unbatched",
            lambda n, lx: lambda x: lx.psum(x, "i") + x,
            [F(2)],
            subsets=[()],
            kw={"axis_name": "i", "axis_size": 3},
        ),
        Case("axis_index", lambda n, lx: lambda x: x * lx.axis_index("i"), [F(2)], kw=kw),
        Case(
            "all_gather",
            lambda n, lx: (
                lambda x: (lx.all_gather(x, "i"), lx.all_gather(x, "i", axis=1, tiled=True))
            ),
            [F(2, 2)],
            kw=kw,
        ),
        Case(
            "psum_scatter",
            lambda n, lx: lambda x: lx.psum_scatter(x, "i", tiled=True),
            [F(6, 2)],
            kw=kw,
        ),
        Case(
            "psum_scatter_untiled",
            lambda n, lx: lambda x: lx.psum_scatter(x, "i", scatter_dimension=1),
            [F(2, 3)],
            kw=kw,
        ),
        Case(
            "ppermute",
            lambda n, lx: lambda x: lx.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]),
            [F(2)],
            kw=kw,
        ),
        Case(
            "all_to_all",
            lambda n, lx: lambda x: lx.all_to_all(x, "i", 0, 1, tiled=True),
            [F(6, 2)],
            kw=kw,
        ),
        Case(
            "all_to_all_untiled",
            lambda n, lx: lambda x: lx.all_to_all(x, "i", 1, 0),
            [F(2, 3)],
            kw=kw,
        ),
    ]


def _spd(n):  # a symmetric positive-definite matrix
    def draw(r):
        a = r.uniform(-1, 1, (n, n))
        return (a @ a.T + n * np.eye(n)).astype(np.float32)

    return Arg(draw)


def _scipy_linalg(n):
    """jax.scipy.linalg or purejit.scipy.linalg, by the numpy module a case is given."""
    import jax.scipy.linalg as jsl

    import purejit.scipy.linalg as psl

    return psl if n is purejit.numpy else jsl


def _linalg_fft_conv_cases():
    def conv(groups=1, batch_groups=1):
        def make(n, lx):
            return lambda a, k: lx.conv_general_dilated(
                a,
                k,
                (1,),
                [(1, 0)],
                rhs_dilation=(2,),
                dimension_numbers=("NCH", "OIH", "NCH"),
                feature_group_count=groups,
                batch_group_count=batch_groups,
            )

        return make

    return [
        Case("cholesky", lambda n, lx: lambda a: lx.linalg.cholesky(a), [_spd(3)], rtol=1e-4),
        Case(
            "triangular_solve",
            lambda n, lx: lambda a, b: lx.linalg.triangular_solve(a, b, left_side=True, lower=True),
            [_spd(3), F(3, 2)],
            rtol=1e-4,
        ),
        Case("lu", lambda n, lx: lambda a: lx.linalg.lu(a), [F(3, 3)], rtol=1e-4),
        Case(
            "lu_pivots_to_permutation",
            lambda n, lx: lambda p: lx.linalg.lu_pivots_to_permutation(p, 4),
            [I(3, lo=0, hi=4)],
        ),
        Case(
            "qr_eigh_svd",
            lambda n, lx: (
                lambda a, s: (
                    (lambda q, r: q @ r)(*lx.linalg.qr(a)),
                    lx.linalg.eigh(s)[1],
                    lx.linalg.svd(a, compute_uv=False),
                )
            ),
            [F(3, 3), _spd(3)],
            rtol=1e-4,
        ),
        Case(
            "householder",
            lambda n, lx: (
                lambda a, c, s: (
                    lambda h, t: (
                        lx.linalg.householder_product(h.mT, t),
                        lx.linalg.ormqr(h.mT, t, c, transpose=True),
                        lx.linalg.hessenberg(s)[1],
                        lx.linalg.tridiagonal(s)[1:3],
                    )
                )(*n.linalg.qr(a, mode="raw"))
            ),
            [F(4, 3), F(4, 2), _spd(3)],
            rtol=1e-4,
        ),
        Case(
            "tridiagonal_solve",
            lambda n, lx: lambda dl, d, du, b: lx.linalg.tridiagonal_solve(dl, d + 4, du, b),
            [F(4), F(4), F(4), F(4, 2)],
            rtol=1e-4,
        ),
        Case(
            "eig_invariants",
            lambda n, lx: (
                lambda a: (lambda w: (w.sum(), w.prod()))(
                    lx.linalg.eig(
                        a, compute_left_eigenvectors=False, compute_right_eigenvectors=False
                    )[0]
                )
            ),
            [_spd(3)],
            rtol=1e-3,
        ),
        Case(
            "schur_hessenberg",
            lambda n, lx: (
                lambda a: (
                    (lambda t, z: z @ t @ z.T)(*_scipy_linalg(n).schur(a)),
                    (lambda h, q: q @ h @ q.T)(*_scipy_linalg(n).hessenberg(a, calc_q=True)),
                )
            ),
            [F(3, 3)],
            rtol=1e-4,
        ),
        Case(
            "fft",
            lambda n, lx: lambda x: (n.fft.fft(x), n.fft.irfft(n.fft.rfft(x))),
            [F(2, 8)],
            rtol=1e-4,
        ),
        Case("fft2", lambda n, lx: lambda x: n.fft.fft2(x), [F(4, 4)], rtol=1e-4),
        Case("conv", conv(), [F(2, 4, 6), F(6, 4, 3)], rtol=1e-4),
        Case("conv_grouped", conv(groups=2), [F(2, 4, 6), F(6, 2, 3)], rtol=1e-4),
        Case("conv_batch_grouped", conv(batch_groups=2), [F(4, 2, 6), F(4, 2, 3)], rtol=1e-4),
    ]


def _callback_cases():
    def callbacks(n, lx):
        import jax

        lib = purejit if lx is purejit.lax else jax

        def f(x):
            lib.debug.callback(lambda v: None, x)
            y = lib.pure_callback(lambda v: np.cos(v), x, x, vmap_method="sequential")
            return y * 2.0

        return f

    return [
        Case("callbacks", callbacks, [F(4)]),
    ]


def _autodiff_cases():
    def lib_of(lx):
        import jax
        import jax.ad_checkpoint  # noqa: F401

        return purejit if lx is purejit.lax else jax

    def custom(n, lx):
        lib = lib_of(lx)

        @lib.custom_jvp
        def f(x):
            return n.sin(x)

        f.defjvp(lambda p, t: (f(p[0]), 2.0 * t[0]))

        @lib.custom_vjp
        def g(x):
            return n.cos(x)

        g.defvjp(lambda x: (g(x), x), lambda r, ct: (ct * r,))
        return lambda x: (f(x), g(x), lib.checkpoint(lambda v: n.sin(n.sin(v)))(x))

    def marks(n, lx):
        lib = lib_of(lx)

        def f(x, y):
            a = lx.stop_gradient(x) + lib.ad_checkpoint.checkpoint_name(y, "y")
            b, c = lx.optimization_barrier((x, y))
            return a, b * c

        return f

    return [
        Case("custom_derivatives_checkpoint", custom, [F(3)]),
        Case("stop_gradient_barrier_name", marks, [F(3), F(3)]),
        Case(
            "complex_bitcast",
            lambda n, lx: (
                lambda x, y: (
                    lx.complex(x, y),
                    lx.bitcast_convert_type(x, n.int32),
                )
            ),
            [F(3), F(3)],
        ),
    ]


def _random_cases():
    def hashes(n, lx):
        r = (purejit if lx is purejit.lax else __import__("jax")).random

        def f(k, d):
            key = r.wrap_key_data(k)
            return r.key_data(r.split(key, 3)), r.key_data(r.fold_in(key, d)), r.bits(key, (5,))

        return f

    u32 = np.uint32
    return [Case("threefry_split_fold_bits", hashes, [I(2, hi=2**31, dtype=u32), I(dtype=u32)])]


GROUPS = {
    "autodiff": _autodiff_cases,
    "callback": _callback_cases,
    "elementwise": _elementwise_cases,
    "shape": _shape_cases,
    "indexing": _indexing_cases,
    "reduce_sort": _reduce_sort_cases,
    "contraction": _contraction_cases,
    "control": _control_cases,
    "collective": _collective_cases,
    "linalg_fft_conv": _linalg_fft_conv_cases,
    "random": _random_cases,
}


@pytest.mark.parametrize("group", list(GROUPS))
def test_vmap_matches_jax(group):
    # elementwise ops share one rule: one random set of mapped arguments per op is enough
    run_group(GROUPS[group](), seed=len(group), one=group == "elementwise")


def test_eager_vmap_matches_jax():
    """vmap outside jit binds the batched ops eagerly."""
    cases = [_shape_cases()[1], _control_cases()[0], _indexing_cases()[0]]
    run_group(cases, seed=1, eager=True)


def test_every_rule_runs(monkeypatch):
    """The cases above reach the batching rule of every op that has operands."""
    seen = set()
    for name, rule in list(bcore.RULES.items()):

        def spy(*a, _rule=rule, _name=name, **kw):
            seen.add(_name)
            return _rule(*a, **kw)

        monkeypatch.setitem(bcore.RULES, name, spy)
    rng = np.random.default_rng(0)
    from vmap_harness import _variants

    for make_cases in GROUPS.values():
        for case in make_cases():
            f = case.make(purejit.numpy, purejit.lax)
            for in_axes, out_axes, args in _variants(case, rng):
                purejit.jit(purejit.vmap(f, in_axes, 0, **case.kw)).lower(*args)
    # no operands; reached through their own tests (test_vmap_api: fusion, shard_map);
    # custom_lin only exists in linear programs, which vmap never sees; pvary only inside a
    # check_vma shard_map over several devices (its rule keeps the batch dimension);
    # dot_product_attention and its fused backward are batched by vmap and vmap(grad) in
    # tests/nn/test_attention.py, and its linear form, like custom_lin, lives only in linear
    # programs
    without = {"constant", "iota", "fusion", "manual_computation", "custom_lin", "pvary"}
    # a layout over several devices: vmap of it runs in tests/multidevice (sharding context)
    without |= {"sharding_constraint"}
    without |= {"dot_product_attention", "dot_product_attention_bwd"}
    without |= {"dot_product_attention_lin"}
    # a user-defined primitive is batched by its own rule table: tests/extend/
    # test_user_primitives.py runs vmap (and vmap of grad) of primitives defined there
    without |= {"user_primitive", "user_primitive_effect"}
    # jax 0.11's log2 and one_minus_square: the local jax (the reference here) lacks them;
    # tests/lax/test_log2_one_minus_square.py runs vmap of them against NumPy
    without |= {"log2", "one_minus_square"}
    untested = sorted(set(all_ops()) - seen - without)
    assert not untested, f"no case reaches the batching rule of {untested}"
