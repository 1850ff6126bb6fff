"""schur, hessenberg (the IR ops of those names: LAPACK gees / gehrd on CPU, NumPy reference
rules in the interpreter) and rsf2csf, sqrtm, funm, solve_sylvester of purejit.scipy.linalg,
against jax.scipy.linalg and scipy.linalg."""

import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.linalg as sl
from purejit.ir import Builder, TensorType, interpret

import purejit
import purejit.numpy as pnp
import purejit.scipy.linalg as psl
from purejit.transforms.autodiff import NonDifferentiableError


def _mat(shape, dtype, seed=0):
    rs = np.random.RandomState(seed + len(shape) * 7 + shape[-1])
    a = rs.randn(*shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rs.randn(*shape)
    return a.astype(dtype)


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _check_schur(a, t, z, atol, complex_form):
    t, z = np.asarray(t), np.asarray(z)
    np.testing.assert_allclose(z @ t @ _mH(z), a, atol=atol)
    np.testing.assert_allclose(_mH(z) @ z, np.broadcast_to(np.eye(a.shape[-1]), a.shape),
                               atol=atol)  # fmt: skip
    below = np.tril(t, -1 if complex_form else -2)
    assert np.abs(below).max(initial=0) <= atol


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_schur_and_hessenberg_match_jax(dtype):
    a = _mat((2, 5, 5), dtype)
    t, z = purejit.jit(psl.schur)(a)
    jt, jz = jsl.schur(a)
    # the same LAPACK routine: the same form, not only an equivalent one
    np.testing.assert_allclose(np.asarray(t), np.asarray(jt), atol=2e-5)
    np.testing.assert_allclose(np.asarray(z), np.asarray(jz), atol=2e-5)
    _check_schur(a, t, z, 2e-5, np.dtype(dtype).kind == "c")
    h, q = purejit.jit(lambda x: psl.hessenberg(x, calc_q=True))(a)
    jh, jq = jsl.hessenberg(a, calc_q=True)
    np.testing.assert_allclose(np.asarray(h), np.asarray(jh), atol=2e-5)
    np.testing.assert_allclose(np.asarray(q), np.asarray(jq), atol=2e-5)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(h) @ _mH(np.asarray(q)), a, atol=2e-5)
    assert np.abs(np.tril(np.asarray(h), -2)).max() == 0
    tc, zc = psl.schur(a, output="complex")
    assert np.asarray(tc).dtype == np.complex64
    _check_schur(a, tc, zc, 2e-5, True)
    assert psl.hessenberg(a[0, :1, :1]).shape == (1, 1)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_reference_rules_are_decompositions(dtype):
    a = _mat((2, 6, 6), dtype)
    for name in ("schur", "hessenberg"):
        b = Builder("f")
        x = b.param(TensorType(a.shape, dtype))
        fn = b.finish(list(b.op(name, [x], {})))
        first, second = interpret(fn, a)
        assert first.dtype == second.dtype == dtype
        if name == "schur":
            _check_schur(a, first, second, 1e-10, np.dtype(dtype).kind == "c")
            # the same eigenvalues as LAPACK's form
            got = np.sort_complex(np.linalg.eigvals(first).ravel())
            np.testing.assert_allclose(got, np.sort_complex(np.linalg.eigvals(a).ravel()),
                                       atol=1e-10)  # fmt: skip
        else:
            np.testing.assert_allclose(second @ first @ _mH(second), a, atol=1e-10)
            assert np.abs(np.tril(first, -2)).max() == 0


def test_no_derivative_and_vmap():
    a = _mat((3, 4, 4), np.float32)
    with pytest.raises(NonDifferentiableError, match="schur"):
        purejit.grad(lambda x: psl.schur(x)[0].sum())(a[0])
    with pytest.raises(NonDifferentiableError, match="hessenberg"):
        purejit.grad(lambda x: psl.hessenberg(x).sum())(a[0])
    t, z = purejit.vmap(psl.schur)(a)
    bt, bz = psl.schur(a)
    np.testing.assert_allclose(np.asarray(t), np.asarray(bt), atol=1e-6)
    np.testing.assert_allclose(np.asarray(z), np.asarray(bz), atol=1e-6)


def test_rsf2csf_sqrtm_funm():
    a = _mat((5, 5), np.float32)
    t, z = psl.schur(a)
    ct, cz = purejit.jit(psl.rsf2csf)(t, z)
    _check_schur(a, ct, cz, 2e-5, True)
    jt, jz = jsl.rsf2csf(*jsl.schur(a))
    got, want = np.diag(np.asarray(ct)), np.diag(np.asarray(jt))
    assert np.abs(got[:, None] - want[None, :]).min(axis=1).max() < 2e-5  # the same eigenvalues
    # no eigenvalue on the negative real axis (where the principal root's branch is ambiguous)
    pos = a + 3 * np.eye(5, dtype=np.float32)
    s = purejit.jit(psl.sqrtm)(pos)
    assert np.asarray(s).dtype == np.asarray(jsl.sqrtm(pos)).dtype == np.complex64
    np.testing.assert_allclose(np.asarray(s), sl.sqrtm(pos.astype(np.float64)), atol=2e-5)
    spd = a @ a.T + np.eye(5, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(psl.sqrtm(spd)), np.asarray(jsl.sqrtm(spd)),
                               atol=2e-5)  # fmt: skip
    with pytest.raises(NotImplementedError, match="Blocked"):
        psl.sqrtm(a, blocksize=2)
    f = purejit.jit(lambda x: psl.funm(x, pnp.exp))(a)
    np.testing.assert_allclose(np.asarray(f), sl.expm(a.astype(np.float64)), atol=3e-5)
    f, err = psl.funm(a, pnp.sin, disp=False)
    want, want_err = sl.funm(a.astype(np.float64), np.sin, disp=False)
    np.testing.assert_allclose(np.asarray(f), want, atol=3e-5)
    assert 0 < float(err) < 1e-5 and want_err < 1e-5


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester(method):
    a = _mat((2, 4, 4), np.float32, seed=1)
    b = _mat((3, 3), np.float32, seed=2)
    c = _mat((2, 4, 3), np.float32, seed=3)
    # the eigenvector method loses more to rounding (JAX's docstring says so)
    atol = 1e-4 if method == "schur" else 1e-3
    x = purejit.jit(lambda a, b, c: psl.solve_sylvester(a, b, c, method=method))(a, b, c)
    x = np.asarray(x)
    assert x.dtype == np.float32 and x.shape == (2, 4, 3)
    for i in range(2):
        want = sl.solve_sylvester(a[i].astype(np.float64), b.astype(np.float64), c[i])
        np.testing.assert_allclose(x[i], want, atol=atol)
    ac, bc, cc = _mat((3, 3), np.complex64), _mat((2, 2), np.complex64), _mat((3, 2), np.complex64)
    xc = np.asarray(psl.solve_sylvester(ac, bc, cc, method=method))
    np.testing.assert_allclose(ac @ xc + xc @ bc, cc, atol=atol)
    # eig(A) + eig(B) = 0: no unique solution, NaN as jax.scipy
    singular = psl.solve_sylvester(np.eye(2, dtype=np.float32), -np.eye(2, dtype=np.float32),
                                   np.ones((2, 2), np.float32), method=method)  # fmt: skip
    assert np.isnan(np.asarray(singular)).all()


def test_solve_sylvester_errors():
    with pytest.raises(ValueError, match="Incompatible shapes"):
        psl.solve_sylvester(np.eye(3), np.eye(2), np.ones((2, 2)))
    with pytest.raises(ValueError, match="Unrecognized method"):
        psl.solve_sylvester(np.eye(2), np.eye(2), np.ones((2, 2)), method="qz")
