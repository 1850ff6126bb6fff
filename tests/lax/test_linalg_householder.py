"""The Householder ops (ir/ops/householder.py) through purejit.lax.linalg's `geqrf`,
`householder_product`, `ormqr` and `jnp.linalg.qr(mode="raw")`, against JAX on CPU: the same
LAPACK kernels run, so the results are equal bit for bit, under jit and eagerly, batched and
under vmap; the NumPy reference rules agree within rounding; differentiating them is an error,
as in JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.lax.linalg import geqrf as jax_geqrf

import purejit
import purejit.numpy as pnp
from purejit import lax as plax
from purejit.ir import all_ops
from purejit.transforms.autodiff import NonDifferentiableError

RNG = np.random.default_rng(3)
# every dtype, tall, wide and square, batched or not
CASES = [
    ((5, 3), np.float32),
    ((2, 3, 5), np.float32),
    ((3, 5), np.float64),
    ((2, 5, 3), np.float64),
    ((4, 4), np.complex64),
    ((2, 5, 3), np.complex128),
    ((3, 4), np.complex128),
]


def _matrix(shape, dtype):
    x = RNG.normal(size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * RNG.normal(size=shape)
    return x.astype(dtype)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True), purejit.enable_x64(True):
        yield


def _everything(lax, geqrf, tall: bool):
    """geqrf, then householder_product (tall matrices) and ormqr in its four forms."""

    def f(a, c_left, c_right):
        h, t = geqrf(a)
        outs = [h, t] + ([lax.linalg.householder_product(h, t)] if tall else [])
        for transpose in (False, True):
            outs.append(lax.linalg.ormqr(h, t, c_left, left=True, transpose=transpose))
            outs.append(lax.linalg.ormqr(h, t, c_right, left=False, transpose=transpose))
        return outs

    return f


@pytest.mark.parametrize(
    ("shape", "dtype"), CASES, ids=lambda c: str(np.dtype(c) if isinstance(c, type) else c)
)
def test_ops_equal_jax_bit_for_bit(shape, dtype):
    a = _matrix(shape, dtype)
    m, n = shape[-2:]
    c_left, c_right = _matrix(shape[:-2] + (m, 2), dtype), _matrix(shape[:-2] + (2, m), dtype)
    want = jax.jit(_everything(jax.lax, jax_geqrf, m >= n))(a, c_left, c_right)
    got = purejit.jit(_everything(plax, plax.linalg.geqrf, m >= n))(a, c_left, c_right)
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    for g, w in zip(pnp.linalg.qr(a, mode="raw"), jnp.linalg.qr(a, mode="raw"), strict=True):
        _same(g, w)
    if (shape, dtype) == CASES[-2]:  # eagerly, op by op
        for g, w in zip(_everything(plax, plax.linalg.geqrf, True)(a, c_left, c_right), want):
            _same(g, w)


def test_fewer_reflectors_and_empty_matrices_equal_jax():
    a = _matrix((5, 3), np.float64)
    h, t = jax_geqrf(a)
    _same(plax.linalg.householder_product(h, t[:2]), jax.lax.linalg.householder_product(h, t[:2]))
    _same(plax.linalg.householder_product(h, t[:0]), np.eye(5, 3))
    c = _matrix((5, 2), np.float64)
    _same(plax.linalg.ormqr(h, t[:1], c), jax.lax.linalg.ormqr(h, t[:1], c))
    _same(plax.linalg.ormqr(h, t[:0], c), c)
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        e = np.zeros(shape, np.float32)
        ph, pt = purejit.jit(plax.linalg.geqrf)(e)
        _same(ph, e)
        _same(pt, np.zeros(shape[:-2] + (0,), np.float32))


def test_qr_from_its_pieces():
    """householder_product and ormqr rebuild Q of the `qr` op (the same geqrf and orgqr
    kernels), and Q^T a gives R."""
    a = _matrix((6, 4), np.float64)

    @purejit.jit
    def pieces(a):
        h, t = plax.linalg.geqrf(a)
        q = plax.linalg.householder_product(h, t)
        qta = plax.linalg.ormqr(h, t, a, transpose=True)
        return q, qta, pnp.linalg.qr(a)

    q, qta, (q_ref, r_ref) = pieces(a)
    _same(q, q_ref)
    np.testing.assert_allclose(np.triu(qta[:4]), r_ref, atol=1e-12)
    np.testing.assert_allclose(qta[4:], 0, atol=1e-12)


def test_vmap_with_unmapped_operands_equals_jax():
    a = _matrix((4, 5, 3), np.float32)
    c = _matrix((5, 2), np.float32)  # one c for every matrix

    def f(lax, qr):
        def one(a, c):
            h, t = qr(a, mode="raw")
            return lax.linalg.householder_product(h.T, t), lax.linalg.ormqr(h.T, t, c)

        return one

    want = jax.jit(jax.vmap(f(jax.lax, jnp.linalg.qr), (0, None)))(a, c)
    got = purejit.jit(purejit.vmap(f(plax, pnp.linalg.qr), (0, None)))(a, c)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
def test_reference_rules_agree_with_lapack(dtype):
    a = _matrix((2, 5, 3), dtype)
    h, t = jax_geqrf(a)
    c = _matrix((2, 3, 5), dtype)
    ops = all_ops()
    ref_h, ref_t = ops["geqrf"].reference([a], {}, [], None)
    np.testing.assert_allclose(ref_h, h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ref_t, t, rtol=1e-10, atol=1e-12)
    (q,) = ops["householder_product"].reference([np.asarray(h), np.asarray(t)], {}, [], None)
    np.testing.assert_allclose(q, jax.lax.linalg.householder_product(h, t), atol=1e-12)
    attrs = {"left": False, "transpose": True}
    (out,) = ops["ormqr"].reference([np.asarray(h), np.asarray(t), c], attrs, [], None)
    want = jax.lax.linalg.ormqr(h, t, c, left=False, transpose=True)
    np.testing.assert_allclose(out, want, atol=1e-12)


def test_not_differentiable_as_in_jax():
    a = _matrix((4, 3), np.float32)
    with pytest.raises(NotImplementedError):
        jax.grad(lambda a: jnp.linalg.qr(a, mode="raw")[0].sum())(a)
    with pytest.raises(NonDifferentiableError, match="geqrf.*no JVP rule"):
        purejit.grad(lambda a: pnp.linalg.qr(a, mode="raw")[0].sum())(a)
    h, t = plax.linalg.geqrf(a)
    c = _matrix((4, 2), np.float32)
    with pytest.raises(NonDifferentiableError, match="ormqr"):
        purejit.grad(lambda c: plax.linalg.ormqr(h, t, c).sum())(c)


def test_errors_name_the_op_and_shapes():
    a = _matrix((3, 4), np.float32)
    h, t = plax.linalg.geqrf(a)
    with pytest.raises(ValueError, match="householder_product.*at least as many rows"):
        plax.linalg.householder_product(h, t)
    h, t = plax.linalg.geqrf(a.T)
    with pytest.raises(ValueError, match="ormqr.*must have 4 rows"):
        plax.linalg.ormqr(h, t, np.zeros((3, 2), np.float32))
    with pytest.raises(TypeError, match="ormqr.*dtype"):
        plax.linalg.ormqr(h, t, np.zeros((4, 2), np.complex64))
    with pytest.raises(ValueError, match="more than min"):
        plax.linalg.householder_product(h, np.zeros(4, np.float32))


def _hermitian(shape, dtype):
    x = _matrix(shape, dtype)
    return x + np.swapaxes(x, -1, -2).conj()


@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((5, 5), np.float32),
        ((2, 4, 4), np.float64),
        ((3, 3), np.complex64),
        ((2, 4, 4), np.complex128),
    ],  # fmt: skip
    ids=str,
)
def test_hessenberg_and_tridiagonal_equal_jax_bit_for_bit(shape, dtype):
    a, s = _matrix(shape, dtype), _hermitian(shape, dtype)

    def f(lax):
        return lambda a, s: [
            *lax.linalg.hessenberg(a),
            *lax.linalg.tridiagonal(s),
            *lax.linalg.tridiagonal(s, lower=False),
        ]

    want = jax.jit(f(jax.lax))(a, s)
    for got in (purejit.jit(f(plax))(a, s), f(plax)(a, s)):  # compiled, then eagerly
        for g, w in zip(got, want, strict=True):
            _same(g, w)
    ops = all_ops()
    tol = {"rtol": 1e-4, "atol": 1e-4}
    for g, w in zip(ops["gehrd"].reference([a], {}, [], None), want[:2]):
        np.testing.assert_allclose(g, w, **tol)
    for lower, w in ((True, want[2:6]), (False, want[6:])):
        for g, ww in zip(ops["sytrd"].reference([s], {"lower": lower}, [], None), w):
            np.testing.assert_allclose(g, ww, **tol)


def test_hessenberg_and_tridiagonal_rebuild_their_matrix():
    """q h q^T = a from gehrd's reflectors (householder_product on the shifted ones)."""
    a = _matrix((5, 5), np.float64)
    h, taus = plax.linalg.hessenberg(a)
    h, taus = np.asarray(h), np.asarray(taus)
    q = np.eye(5)
    q[1:, 1:] = plax.linalg.householder_product(h[1:, :-1], taus)
    np.testing.assert_allclose(q @ np.triu(h, -1) @ q.T, a, atol=1e-12)
    s = _hermitian((4, 4), np.float64)
    _, d, e, _ = plax.linalg.tridiagonal(s)
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(s), atol=1e-12)


def test_implementation_enums_name_jax_values_and_only_the_default_runs():
    la = plax.linalg
    for ours, theirs in [(la.EigImplementation, jax.lax.linalg.EigImplementation),
                         (la.EighImplementation, jax.lax.linalg.EighImplementation),
                         (la.SvdAlgorithm, jax.lax.linalg.SvdAlgorithm)]:  # fmt: skip
        assert {e.name: e.value for e in ours} == {e.name: e.value for e in theirs}
    a = _matrix((3, 3), np.float32)
    s = la.svd(a, compute_uv=False, algorithm=la.SvdAlgorithm.DEFAULT)
    _same(s, jax.lax.linalg.svd(a, compute_uv=False))
    with pytest.raises(NotImplementedError, match="algorithm=.*JACOBI.*leave algorithm unset"):
        la.svd(a, algorithm=la.SvdAlgorithm.JACOBI)
    with pytest.raises(NotImplementedError, match="implementation"):
        la.eigh(a, implementation=la.EighImplementation.QDWH)
