"""purejit.numpy.linalg and purejit.lax.linalg against jax.numpy.linalg / jax.lax.linalg:
values, dtypes, weak types and shapes, batched, under jit and eagerly.

Both sides run the same LAPACK kernels on CPU, so even the non-unique parts (signs of
eigen- and singular vectors) agree; tolerances cover float32 rounding in the surrounding
arithmetic.
"""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jnp_compare import check_cases
from tolerance import dot_tol

import purejit
import purejit.numpy as jnp

RNG = np.random.default_rng(0)


def _spd(shape, dtype):
    a = RNG.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.normal(size=shape)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _general(shape, dtype):
    a = RNG.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.normal(size=shape)
    return a.astype(dtype)


SQUARE = {
    "det": lambda m, s, a, b: m.linalg.det(a),
    "det 2x2": lambda m, s, a, b: m.linalg.det(a[..., :2, :2]),
    "det 3x3": lambda m, s, a, b: m.linalg.det(a[..., :3, :3]),
    "slogdet": lambda m, s, a, b: tuple(m.linalg.slogdet(a)),
    "slogdet 1x1": lambda m, s, a, b: tuple(m.linalg.slogdet(a[..., :1, :1])),
    "slogdet 2x2": lambda m, s, a, b: tuple(m.linalg.slogdet(a[..., :2, :2])),
    "inv": lambda m, s, a, b: m.linalg.inv(a),
    "solve matrix": lambda m, s, a, b: m.linalg.solve(a, b),
    "solve vector": lambda m, s, a, b: m.linalg.solve(a[0], b[0, :, 0]),
    "solve broadcast": lambda m, s, a, b: m.linalg.solve(a, b[0]),
    "cholesky": lambda m, s, a, b: m.linalg.cholesky(s),
    "cholesky upper": lambda m, s, a, b: m.linalg.cholesky(s, upper=True),
    "eigh": lambda m, s, a, b: tuple(m.linalg.eigh(s)),
    "eigh U": lambda m, s, a, b: tuple(m.linalg.eigh(s, UPLO="U")),
    "eigvalsh": lambda m, s, a, b: m.linalg.eigvalsh(s),
    "eig": lambda m, s, a, b: tuple(m.linalg.eig(a)),
    "eigvals": lambda m, s, a, b: m.linalg.eigvals(a),
    "matrix_power 0": lambda m, s, a, b: m.linalg.matrix_power(a, 0),
    "matrix_power 5": lambda m, s, a, b: m.linalg.matrix_power(a, 5),
    "matrix_power -2": lambda m, s, a, b: m.linalg.matrix_power(s, -2),
    "cond": lambda m, s, a, b: m.linalg.cond(a),
    "cond -2": lambda m, s, a, b: m.linalg.cond(a, -2),
    "cond fro": lambda m, s, a, b: m.linalg.cond(s, "fro"),
    "cond inf": lambda m, s, a, b: m.linalg.cond(s, np.inf),
    "tensorinv": lambda m, s, a, b: m.linalg.tensorinv(s[0], ind=1),
    "tensorsolve": lambda m, s, a, b: m.linalg.tensorsolve(s[0], b[0, :, 0]),
    "trace": lambda m, s, a, b: m.linalg.trace(a),
    "trace offset": lambda m, s, a, b: m.linalg.trace(a, offset=1),
    "diagonal": lambda m, s, a, b: m.linalg.diagonal(a, offset=-1),
    "svd hermitian": lambda m, s, a, b: m.linalg.svd(s, hermitian=True, compute_uv=False),
}

RECT = {
    "qr": lambda m, x, y: tuple(m.linalg.qr(x)),
    "qr complete": lambda m, x, y: tuple(m.linalg.qr(x, mode="complete")),
    "qr r": lambda m, x, y: m.linalg.qr(x, mode="r"),
    "qr wide": lambda m, x, y: tuple(m.linalg.qr(m.swapaxes(x, -1, -2))),
    "qr wide complete": lambda m, x, y: tuple(m.linalg.qr(m.swapaxes(x, -1, -2), "complete")),
    "svd": lambda m, x, y: tuple(m.linalg.svd(x)),
    "svd reduced": lambda m, x, y: tuple(m.linalg.svd(x, full_matrices=False)),
    "svd wide": lambda m, x, y: tuple(m.linalg.svd(m.swapaxes(x, -1, -2))),
    "svdvals": lambda m, x, y: m.linalg.svdvals(x),
    "pinv": lambda m, x, y: m.linalg.pinv(x),
    "pinv rtol": lambda m, x, y: m.linalg.pinv(x, rtol=0.5),
    "matrix_rank": lambda m, x, y: m.linalg.matrix_rank(x),
    "matrix_rank rank-deficient": lambda m, x, y: m.linalg.matrix_rank(
        x[..., :1] * x[..., :1, :1] + 0 * x
    ),
    "lstsq": lambda m, x, y: m.linalg.lstsq(x[0], y[0]),
    "lstsq vector": lambda m, x, y: m.linalg.lstsq(x[0], y[0, :, 0]),
    "norm": lambda m, x, y: m.linalg.norm(x),
    "norm axis": lambda m, x, y: m.linalg.norm(x, axis=1),
    "norm ord 3": lambda m, x, y: m.linalg.norm(x, 3, axis=-1),
    "norm ord inf": lambda m, x, y: m.linalg.norm(x, np.inf, axis=-1),
    "norm ord 0": lambda m, x, y: m.linalg.norm(x, 0, axis=-1),
    "norm fro": lambda m, x, y: m.linalg.norm(x, "fro", axis=(1, 2)),
    "norm nuc": lambda m, x, y: m.linalg.norm(x, "nuc", axis=(1, 2)),
    "norm 2": lambda m, x, y: m.linalg.norm(x, 2, axis=(1, 2), keepdims=True),
    "norm -2": lambda m, x, y: m.linalg.norm(x, -2, axis=(2, 1)),
    "norm 1": lambda m, x, y: m.linalg.norm(x, 1, axis=(1, 2)),
    "norm -1": lambda m, x, y: m.linalg.norm(x, -1, axis=(2, 1)),
    "norm inf": lambda m, x, y: m.linalg.norm(x, np.inf, axis=(1, 2)),
    "norm -inf keepdims": lambda m, x, y: m.linalg.norm(x, -np.inf, axis=(1, 2), keepdims=True),
    "vector_norm": lambda m, x, y: m.linalg.vector_norm(x, axis=(0, 2)),
    "vector_norm ord 1": lambda m, x, y: m.linalg.vector_norm(x, ord=1),
    "vector_norm -inf": lambda m, x, y: m.linalg.vector_norm(x, ord=-np.inf, axis=1),
    "matrix_norm": lambda m, x, y: m.linalg.matrix_norm(x),
    "matrix_norm 2": lambda m, x, y: m.linalg.matrix_norm(x, ord=2, keepdims=True),
    "multi_dot": lambda m, x, y: m.linalg.multi_dot([x[0], m.swapaxes(x[1], 0, 1), x[2]]),
    "multi_dot vectors": lambda m, x, y: m.linalg.multi_dot([x[0, :, 0], x[1], x[2, 0]]),
    "outer": lambda m, x, y: m.linalg.outer(x[0, 0], x[1, :, 0]),
    "cross": lambda m, x, y: m.linalg.cross(x[..., :3], x[..., 1:4] if x.shape[-1] > 3 else x),
    "matrix_transpose": lambda m, x, y: m.linalg.matrix_transpose(x),
    "vecdot": lambda m, x, y: m.linalg.vecdot(x, x[0]),
    "matmul": lambda m, x, y: m.linalg.matmul(x, m.swapaxes(x, -1, -2)),
    "tensordot": lambda m, x, y: m.linalg.tensordot(x[0], x[1], axes=([0, 1], [0, 1])),
}


# cases whose products run at the default precision (TF32 on GPU, in JAX as in purejit; the
# two may contract in another order or kernel, so they agree to TF32's accuracy only)
DEFAULT_PRECISION = ("multi_dot", "vecdot", "matmul", "tensordot", "matrix_power", "tensorinv",
                     "tensorsolve")  # fmt: skip


def _default_precision_products(cases):
    return {n: dot_tol(2e-4, 2e-4) for n in cases if n.startswith(DEFAULT_PRECISION)}


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_square_functions(dtype):
    s, a = _spd((3, 4, 4), dtype), _general((3, 4, 4), dtype)
    b = _general((3, 4, 2), dtype)
    cases = dict(SQUARE)
    if dtype == np.complex64:
        for name in ("cond fro", "cond inf"):
            del cases[name]  # the same formula; one dtype is enough
    check_cases(cases, s, a, b, rtol=2e-4, atol=2e-4, eager=("det", "solve matrix", "eigh"),
                case_tol=_default_precision_products(cases))  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_rectangular_functions(dtype):
    x = _general((3, 5, 4), dtype)
    y = _general((3, 5, 2), dtype)
    cases = dict(RECT)
    if dtype == np.complex64:
        del cases["cross"]
    check_cases(cases, x, y, rtol=2e-4, atol=2e-4, eager=("qr", "svd", "norm nuc"),
                case_tol=_default_precision_products(cases))  # fmt: skip


def test_integer_inputs_promote_to_float():
    a = RNG.integers(-3, 4, size=(2, 3, 3)).astype(np.int32) + 4 * np.eye(3, dtype=np.int32)
    cases = {
        "det": lambda m, a: m.linalg.det(a),
        "inv": lambda m, a: m.linalg.inv(a),
        "norm": lambda m, a: m.linalg.norm(a),
        "solve": lambda m, a: m.linalg.solve(a, a),
        "eigvalsh": lambda m, a: m.linalg.eigvalsh(a),
    }
    check_cases(cases, a, rtol=2e-5, atol=2e-5)


def test_failures_give_nan_as_jax():
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], np.float32)
    cases = {
        "cholesky not positive definite": lambda m, p, s: m.linalg.cholesky(p),
        "det singular": lambda m, p, s: m.linalg.det(s),
        "slogdet singular": lambda m, p, s: tuple(m.linalg.slogdet(s)),
    }
    refs = check_cases(cases, not_pd, singular)
    low = np.asarray(refs["cholesky not positive definite"])
    assert np.isnan(np.tril(low) + np.triu(np.ones_like(low), 1)).sum() == 3  # upper is 0


def test_lax_linalg_against_jax():
    s, a = _spd((2, 4, 4), np.float32), _general((2, 4, 3), np.float32)
    sq = _general((2, 4, 4), np.float32)
    tri = np.tril(sq) + 4 * np.eye(4, dtype=np.float32)
    rhs = _general((2, 4, 3), np.float32)
    left = _general((2, 3, 4), np.float32)
    lax_cases = {
        "cholesky": lambda L, s, a, t, b, c: L.cholesky(s),
        "cholesky lower only": lambda L, s, a, t, b, c: L.cholesky(t, symmetrize_input=False),
        "lu": lambda L, s, a, t, b, c: tuple(L.lu(a)),
        "lu square": lambda L, s, a, t, b, c: tuple(L.lu(t)),
        "qr": lambda L, s, a, t, b, c: tuple(L.qr(a)),
        "qr reduced": lambda L, s, a, t, b, c: tuple(L.qr(a, full_matrices=False)),
        "eigh": lambda L, s, a, t, b, c: tuple(L.eigh(s)),
        "svd": lambda L, s, a, t, b, c: tuple(L.svd(a)),
        "svd values": lambda L, s, a, t, b, c: L.svd(a, compute_uv=False),
        "eig": lambda L, s, a, t, b, c: tuple(L.eig(t)),
        "eig right only": lambda L, s, a, t, b, c: tuple(L.eig(t, compute_left_eigenvectors=False)),
        "trsm left lower": lambda L, s, a, t, b, c: L.triangular_solve(t, b, left_side=True, lower=True),
        "trsm left transposed": lambda L, s, a, t, b, c: L.triangular_solve(
            t, b, left_side=True, lower=True, transpose_a=True, unit_diagonal=True),
        "trsm right upper": lambda L, s, a, t, b, c: L.triangular_solve(
            np.swapaxes(t, -1, -2), c, left_side=False, lower=False),
        "trsm vector": lambda L, s, a, t, b, c: L.triangular_solve(t, b[..., 0], left_side=True, lower=True),
        "pivots": lambda L, s, a, t, b, c: L.lu_pivots_to_permutation(np.array([[2, 2, 3], [0, 3, 3]], np.int32), 5),
    }  # fmt: skip
    args = (s, a, tri, rhs, left)
    refs = jax.jit(lambda *x: {k: f(jax.lax.linalg, *x) for k, f in lax_cases.items()})(*args)
    got = purejit.jit(lambda *x: {k: f(purejit.lax.linalg, *x) for k, f in lax_cases.items()})(
        *args
    )
    for k in lax_cases:
        rl, gl = (
            jax.tree_util.tree_leaves(refs[k]),
            jax.tree_util.tree_leaves(list(got[k]) if isinstance(got[k], tuple) else got[k]),
        )
        assert len(rl) == len(gl), k
        for r, g in zip(rl, gl):
            r, g = np.asarray(r), np.asarray(g)
            assert (r.shape, r.dtype) == (g.shape, g.dtype), k
            np.testing.assert_allclose(g, r, rtol=2e-4, atol=2e-4, err_msg=k)


def test_complex_triangular_solve_conjugate():
    t = np.tril(_general((4, 4), np.complex64)) + 4 * np.eye(4, dtype=np.complex64)
    b = _general((4, 2), np.complex64)
    for kw in [dict(conjugate_a=True), dict(conjugate_a=True, transpose_a=True)]:
        want = jax.lax.linalg.triangular_solve(t, b, left_side=True, lower=True, **kw)
        got = purejit.jit(lambda t, b, kw=kw: purejit.lax.linalg.triangular_solve(
            t, b, left_side=True, lower=True, **kw))(t, b)  # fmt: skip
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_fp64_with_x64():
    purejit.config.update("enable_x64", True)
    try:
        with jax.enable_x64(True):
            a = _general((2, 5, 5), np.float64)
            want = jjnp.linalg.inv(a)
            got = purejit.jit(jnp.linalg.inv)(a)
            assert np.asarray(got).dtype == np.float64
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    finally:
        purejit.config.update("enable_x64", False)


def test_empty_matrices():
    cases = {
        "qr": lambda m, e: tuple(m.linalg.qr(e)),
        "svdvals": lambda m, e: m.linalg.svdvals(e),
        "pinv": lambda m, e: m.linalg.pinv(e),
    }
    check_cases(cases, np.zeros((2, 0, 3), np.float32))


def test_errors_name_the_function():
    with pytest.raises(ValueError, match="linalg.inv"):
        jnp.linalg.inv(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="linalg.solve"):
        jnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones(4, np.float32))
    with pytest.raises(purejit.PurejitTypeError, match="lax.linalg.cholesky: dtype int32"):
        purejit.lax.linalg.cholesky(np.eye(3, dtype=np.int32))
    with pytest.raises(ValueError, match="lax.linalg.triangular_solve"):
        purejit.lax.linalg.triangular_solve(
            np.eye(3, dtype=np.float32), np.ones((4, 2), np.float32), left_side=True
        )
    with pytest.raises(TypeError, match="matrix_power"):
        jnp.linalg.matrix_power(np.eye(3, dtype=np.float32), 1.5)
    with pytest.raises(ValueError, match="cross"):
        jnp.linalg.cross(np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(NotImplementedError, match="pivoting"):
        purejit.lax.linalg.qr(np.eye(3, dtype=np.float32), pivoting=True)


def test_reconstructions_hold():
    """The factors reproduce their inputs (not only agree with JAX's)."""
    a = _general((2, 5, 5), np.float32)
    s = _spd((2, 5, 5), np.float32)

    @purejit.jit
    def errors(a, s):
        q, r = jnp.linalg.qr(a)
        u, sv, vh = jnp.linalg.svd(a)
        w, v = jnp.linalg.eigh(s)
        low = jnp.linalg.cholesky(s)
        lu, _, perm = purejit.lax.linalg.lu(a)
        lower = jnp.tril(lu, -1) + jnp.eye(5, dtype=a.dtype)
        upper = jnp.triu(lu)
        rows = jnp.take_along_axis(a, perm[..., None] + jnp.zeros((1, 1, 5), np.int32), axis=1)
        return [
            jnp.max(jnp.abs(q @ r - a)),
            jnp.max(jnp.abs((u * sv[..., None, :]) @ vh - a)),
            jnp.max(jnp.abs((v * w[..., None, :]) @ jnp.swapaxes(v, -1, -2) - s)),
            jnp.max(jnp.abs(low @ jnp.swapaxes(low, -1, -2) - s)),
            jnp.max(jnp.abs(lower @ upper - rows)),
        ]

    for err in errors(a, s):
        assert float(err) < 1e-4
