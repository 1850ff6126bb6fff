"""scipy.sparse.linalg (cg, bicgstab, gmres) against jax.scipy.sparse.linalg under jit: the
same recurrences with the same operations in the same order, so results and gradients are
equal bit for bit (one case excepted, stated below); plus the argument errors, eager calls and
the drop-in name."""

import jax
import jax.numpy as jjnp
import jax.scipy.sparse.linalg as jsl
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
import purejit.scipy.sparse.linalg as psl
from purejit.compat import resolve

RNG = np.random.default_rng(0)
N = 5
_A = RNG.standard_normal((N, N)).astype(np.float32)
SPD = (_A @ _A.T + N * np.eye(N)).astype(np.float32)
DIAG = np.diag(SPD).copy()
B = RNG.standard_normal(N).astype(np.float32)
C = RNG.standard_normal(3).astype(np.float32)
_AC = (RNG.standard_normal((N, N)) + 1j * RNG.standard_normal((N, N))).astype(np.complex64)
HPD = (_AC @ _AC.conj().T + N * np.eye(N)).astype(np.complex64)
BC = (RNG.standard_normal(N) + 1j * RNG.standard_normal(N)).astype(np.complex64)
SOLVERS = ("cg", "bicgstab", "gmres")


def _cases(sl, np_):
    """name -> fn(spd, b): the same calls written against jax's or purejit's modules."""
    scale = np.array([2.0, 3.0, 4.0], np.float32)
    m_inv = np.diag(1 / DIAG).astype(np.float32)

    def a_tree(x):  # a block-diagonal operator on a pytree
        return {"u": np_.dot(SPD, x["u"]), "v": x["v"] * scale}

    def tree_b(b):
        return {"u": b, "v": C}

    def precondition(x):
        return x / DIAG

    return {
        "cg matrix, atol": lambda m, b: sl.cg(m, b, atol=1e-2, tol=0.0)[0],
        "cg callable, M, x0, tol, maxiter": lambda m, b: sl.cg(
            lambda x: np_.dot(m, x), b, x0=b, M=precondition, tol=1e-3, maxiter=3
        )[0],
        "cg pytree": lambda m, b: sl.cg(a_tree, tree_b(b))[0],
        "cg complex": lambda m, b: sl.cg(HPD, BC)[0],
        "bicgstab matrix M, x0, maxiter": lambda m, b: sl.bicgstab(m, b, x0=b, M=m_inv, maxiter=2)[
            0
        ],
        "bicgstab pytree": lambda m, b: sl.bicgstab(a_tree, tree_b(b), atol=1e-3)[0],
        "gmres matrix, info": lambda m, b: sl.gmres(m, b),
        "gmres callable, M, x0, tol, maxiter": lambda m, b: sl.gmres(
            lambda x: np_.dot(m, x), b, x0=b, M=m_inv, tol=1e-3, maxiter=1, restart=3
        )[0],
        "gmres incremental pytree": lambda m, b: sl.gmres(
            a_tree, tree_b(b), solve_method="incremental", restart=3
        )[0],
        "gmres incremental M, complex": lambda m, b: sl.gmres(
            HPD, BC, solve_method="incremental", restart=2, M=precondition
        )[0],
    }


# cases compared with a tolerance instead of bit for bit, and why
CLOSE = {
    # 1 ulp apart (3e-8 on entries of ~0.3): each piece (Givens rotations, an Arnoldi step,
    # one restart) equals JAX's bit for bit when compiled alone; in the whole program XLA
    # compiles some complex arithmetic differently from JAX's
    "gmres incremental M, complex": 1e-6,
}


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def test_solvers_match_jax():
    ref_cases, our_cases = _cases(jsl, jjnp), _cases(psl, pnp)
    names = list(ref_cases)
    refs = jax.jit(lambda m, b: [ref_cases[k](m, b) for k in names])(SPD, B)
    outs = purejit.jit(lambda m, b: [our_cases[k](m, b) for k in names])(SPD, B)
    for name, ref, out in zip(names, refs, outs):
        for r, o in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(out)):
            assert r.weak_type == o.weak_type, name
            r, o = np.asarray(r), np.asarray(o)
            assert r.dtype == o.dtype and r.shape == o.shape, name
            if name in CLOSE:
                np.testing.assert_allclose(o, r, rtol=CLOSE[name], atol=CLOSE[name])
            else:
                np.testing.assert_array_equal(o, r, err_msg=name)
    np.testing.assert_allclose(HPD @ np.asarray(outs[-1]), BC, atol=1e-4)


@pytest.mark.parametrize("name", ["cg", "bicgstab"])
def test_gradients_match_jax(name):
    # implicit differentiation: another solve, with A itself (cg: symmetric) or with its
    # transpose computed by autodiff (bicgstab)
    def loss(sl, np_):
        return lambda m, b: (getattr(sl, name)(lambda x: np_.dot(m, x), b)[0] ** 2).sum()

    ref = jax.jit(jax.grad(loss(jsl, jjnp), argnums=(0, 1)))(SPD, B)
    out = purejit.jit(purejit.grad(loss(psl, pnp), argnums=(0, 1)))(SPD, B)
    for r, o in zip(_leaves(ref), _leaves(out)):
        np.testing.assert_array_equal(o, r, err_msg=name)
    # and the gradient with respect to b is the one of the exact solution
    exact = np.linalg.solve(SPD.astype(np.float64), B.astype(np.float64))
    db = 2 * np.linalg.solve(SPD.T.astype(np.float64), exact)
    np.testing.assert_allclose(np.asarray(out[1]), db, rtol=1e-3, atol=1e-4)


def test_eager_solves_converge():
    for name in ("cg", "bicgstab"):
        x, info = getattr(psl, name)(SPD, B)
        assert isinstance(x, purejit.Array) and info is None
        np.testing.assert_allclose(SPD @ np.asarray(x), B, atol=1e-4, err_msg=name)

    class Operator:  # neither a function nor an array: applied with `@`
        shape = (N, N)

        def __matmul__(self, x):
            return pnp.dot(SPD, x)

    x, _ = psl.cg(Operator(), B)
    np.testing.assert_allclose(SPD @ np.asarray(x), B, atol=1e-4)


def test_argument_errors():
    with pytest.raises(ValueError, match="square matrix"):
        psl.cg(np.ones((2, 3), np.float32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="function or ndarray"):
        psl.bicgstab("A", np.ones(2, np.float32))
    with pytest.raises(ValueError, match="tree structure"):
        psl.cg(SPD, {"u": B}, x0=[B])
    with pytest.raises(ValueError, match="matching shapes"):
        psl.bicgstab(SPD, B, x0=B[:3])
    with pytest.raises(ValueError, match="solve_method"):
        psl.gmres(SPD, B, solve_method="qr")


def test_dropin_names():
    view = resolve("jax.scipy.sparse.linalg")
    assert (view.cg, view.bicgstab, view.gmres) == (psl.cg, psl.bicgstab, psl.gmres)
    assert resolve("jax.scipy.sparse").linalg is view
