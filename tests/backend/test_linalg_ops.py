"""The linalg and fft ops compiled (LAPACK / DUCC custom calls on this CPU) against their
NumPy reference rules, and the GPU lowering checked against the module JAX exports for CUDA.

Eigen- and singular vectors are unique up to a phase (NumPy's LAPACK and jaxlib's may pick
different signs), so vector outputs compare by magnitude; everything else compares exactly
up to rounding.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from lowering_harness import merge, one_op, run_compiled
from purejit.ir import interpret

import purejit
import purejit.numpy as pnp
from purejit.backend import mlir_context, pjrt, stablehlo

RNG = np.random.default_rng(1)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
RTOL = {np.float32: 2e-4, np.complex64: 2e-4, np.float64: 1e-10, np.complex128: 1e-10}


def _matrix(shape, dtype, spd=False):
    a = RNG.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.normal(size=shape)
    if spd:
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    return a.astype(dtype)


def _cases(dt):
    sq, rect = _matrix((2, 4, 4), dt), _matrix((2, 5, 3), dt)
    spd = _matrix((2, 4, 4), dt, spd=True)
    tri = np.tril(sq) + 4 * np.eye(4, dtype=dt)
    b = _matrix((2, 4, 3), dt)
    flags = dict(lower=True, transpose_a=True, conjugate_a=True, unit_diagonal=False)
    return [
        ("cholesky", [spd], {}, False),
        ("triangular_solve", [tri, b], dict(left_side=True, **flags), False),
        ("triangular_solve", [np.swapaxes(tri, -1, -2), np.swapaxes(b, -1, -2)],
         dict(left_side=False, lower=False, transpose_a=False, conjugate_a=True,
              unit_diagonal=True), False),
        ("lu", [rect], {}, False),
        ("lu", [np.swapaxes(rect, -1, -2)], {}, False),
        ("qr", [rect], dict(full_matrices=True), True),
        ("qr", [np.swapaxes(rect, -1, -2)], dict(full_matrices=False), True),
        ("eigh", [spd], dict(lower=False, sort_eigenvalues=True), True),
        ("svd", [rect], dict(full_matrices=True, compute_uv=True), True),
        ("svd", [np.swapaxes(rect, -1, -2)], dict(full_matrices=False, compute_uv=False), True),
        ("eig", [sq], dict(compute_left_eigenvectors=True, compute_right_eigenvectors=True),
         True),
    ]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_linalg_ops_compiled_match_reference(dtype):
    cases = _cases(dtype)
    fns = [one_op(name, args, attrs) for name, args, attrs, _ in cases]
    args = [a for _, xs, _, _ in cases for a in xs]
    with jax.enable_x64(True):
        purejit.config.update("enable_x64", True)
        try:
            got = run_compiled(merge(fns), *args)
        finally:
            purejit.config.update("enable_x64", False)
    k = 0
    for fn, (name, xs, _, by_magnitude) in zip(fns, cases):
        want = interpret(fn, *xs)
        for w in want:
            g = got[k]
            k += 1
            assert (g.dtype, g.shape) == (w.dtype, w.shape), name
            if name == "svd" and pjrt.is_gpu() and g.ndim == w.ndim == 3:
                g, w = _svd_span(g, w, xs[0].shape[-2:], RTOL[dtype])
            if by_magnitude:
                g, w = np.abs(g), np.abs(w)
            np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=RTOL[dtype], err_msg=name)


def _svd_span(g, w, mn, tol):
    """A full SVD's columns of U (rows of V^H) past min(m, n) are any orthonormal basis of
    the complement; cuSOLVER's gesvdj and LAPACK's gesdd choose different ones. Check that
    `g` is unitary and return the parts that are unique up to phase."""
    k = min(mn)
    if g.shape[-1] == g.shape[-2] > k:
        eye = np.broadcast_to(np.eye(g.shape[-1]), g.shape)
        gh = np.conj(np.swapaxes(g, -1, -2))
        np.testing.assert_allclose(gh @ g, eye, rtol=tol, atol=10 * tol, err_msg="svd unitary")
        if g.shape[-1] == mn[0]:
            return g[..., :k], w[..., :k]
        return g[..., :k, :], w[..., :k, :]
    return g, w


def test_permutation_and_fft_ops_match_reference():
    piv = np.array([[2, 2, 3], [1, 1, 2]], np.int32)
    x = RNG.normal(size=(2, 4, 6)).astype(np.float32)
    c = (x + 1j * x[::-1]).astype(np.complex64)
    cases = [
        ("lu_pivots_to_permutation", [piv], dict(permutation_size=5)),
        ("lu_pivots_to_permutation", [piv[1]], dict(permutation_size=3)),
        ("fft", [c], dict(fft_type="FFT", fft_length=[4, 6])),
        ("fft", [c], dict(fft_type="IFFT", fft_length=[6])),
        ("fft", [x], dict(fft_type="RFFT", fft_length=[2, 4, 6])),
        ("fft", [c[..., :4]], dict(fft_type="IRFFT", fft_length=[4, 6])),
    ]
    fns = [one_op(n, a, at) for n, a, at in cases]
    got = run_compiled(merge(fns), *[a for _, xs, _ in cases for a in xs])
    for g, fn, (_, xs, _) in zip(got, fns, cases):
        (w,) = interpret(fn, *xs)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


# ---- the GPU lowering, as text, against JAX's CUDA export ------------------------------------

_ATTRS = ("mhlo.backend_config", "operand_layouts", "result_layouts")


def _calls(text: str) -> list[tuple]:
    """(target, backend config, layouts) of every custom call, and the triangular solves."""
    out = []
    for line in text.splitlines():
        m = re.search(r"stablehlo.custom_call @(\w+)\(", line)
        if m:
            fields = [
                re.search(rf"{re.escape(a)} = (\{{[^}}]*\}}|\[(?:[^\[\]]|\[[^\]]*\])*\])", line)
                for a in _ATTRS
            ]
            out.append((m.group(1), *(f.group(1) if f else "" for f in fields)))
        elif "stablehlo.triangular_solve" in line:
            out.append(("triangular_solve", re.search(r"<\{(.*)\}>", line).group(1)))
    return out


def _purejit_cuda(fn, *args) -> str:
    lowered = purejit.jit(fn).lower(*args)
    ctx = stablehlo.EmitContext()
    ctx.platform = "cuda"
    text = stablehlo.emit(lowered.fn, ctx=ctx)
    from jaxlib.mlir import ir

    with mlir_context.context() as mctx:
        return str(ir.Module.parse(text, mctx))


GPU_CASES = {
    "cholesky": (lambda m: m.linalg.cholesky, [_matrix((3, 4, 4), np.float32, spd=True)]),
    "solve": (lambda m: m.linalg.solve, [_matrix((4, 4), np.float32), _matrix((4, 2), np.float32)]),
    "solve batched": (lambda m: m.linalg.solve, [_matrix((2, 4, 4), np.float32), _matrix((2, 4, 2), np.float32)]),
    "qr c64 reduced": (lambda m: m.linalg.qr, [_matrix((5, 3), np.complex64)]),
    "qr wide": (lambda m: m.linalg.qr, [_matrix((3, 5), np.float32)]),
    "eigh c64": (lambda m: m.linalg.eigh, [_matrix((3, 6, 6), np.complex64, spd=True)]),
    "svd jacobi": (lambda m: m.linalg.svd, [_matrix((40, 50), np.float32)]),
    "svd jacobi econ": (lambda m: lambda a: m.linalg.svd(a, full_matrices=False), [_matrix((40, 50), np.float32)]),
    "svd values c64": (lambda m: m.linalg.svdvals, [_matrix((3, 6, 5), np.complex64)]),
    "svd gesvd": (lambda m: m.linalg.svd, [np.zeros((1100, 1030), np.float32)]),
    "svd gesvd wide": (lambda m: lambda a: m.linalg.svd(a, full_matrices=False), [np.zeros((1030, 1100), np.float32)]),
    "det": (lambda m: m.linalg.det, [_matrix((2, 5, 5), np.float32)]),
    "qr raw": (lambda m: lambda a: m.linalg.qr(a, mode="raw"), [_matrix((2, 5, 3), np.float32)]),
    "householder_product": (lambda m: lambda a: _lax(m).linalg.householder_product(*_raw(m, a)), [_matrix((5, 3), np.complex64)]),
    "ormqr": (lambda m: lambda a, c: _lax(m).linalg.ormqr(*_raw(m, a), c, left=False, transpose=True), [_matrix((5, 3), np.float32), _matrix((2, 5), np.float32)]),
    "tridiagonal_solve": (lambda m: _lax(m).linalg.tridiagonal_solve, [_matrix((2, 4), np.float32)] * 3 + [_matrix((2, 4, 3), np.float32)]),
    "tridiagonal (sytrd)": (lambda m: lambda a: _lax(m).linalg.tridiagonal(a, lower=False), [_matrix((2, 4, 4), np.complex64, spd=True)]),
    # left eigenvectors: cuSOLVER's geev has none, both run jaxlib's hybrid (host) kernel
    "eig left": (lambda m: _lax(m).linalg.eig, [_matrix((2, 4, 4), np.float32)]),
    "eig left c64": (lambda m: _lax(m).linalg.eig, [_matrix((4, 4), np.complex64)]),
}  # fmt: skip


def _lax(m):
    return jax.lax if m is jjnp else purejit.lax


def _raw(m, a):
    """geqrf's (h, taus) (JAX's own, not through jnp.linalg.qr, a call of a private function
    that its module prints after `main`)."""
    from jax._src.lax.linalg import geqrf

    return geqrf(a) if m is jjnp else purejit.lax.linalg.geqrf(a)


@pytest.mark.parametrize("name", sorted(GPU_CASES))
def test_cuda_lowering_matches_jax_export(name):
    make, args = GPU_CASES[name]
    # the hybrid (host LAPACK) kernels have no export compatibility guarantee; text only here
    hybrid = [jax.export.DisabledSafetyCheck.custom_call(f"cuhybrid_eig_{k}") for k in ("real", "comp")]  # fmt: skip
    hybrid.append(jax.export.DisabledSafetyCheck.custom_call("cusolver_ormqr_ffi"))  # nor ormqr's
    exported = jax.export.export(jax.jit(make(jjnp)), platforms=["cuda"], disabled_checks=hybrid)(*args)  # fmt: skip
    want = _calls(exported.mlir_module())
    got = _calls(_purejit_cuda(make(pnp), *args))
    assert want, "JAX's module has no solver calls to compare with"
    if name == "det":  # the lu op also emits the permutation, which det leaves unused and
        # XLA removes (the call has no side effect); JAX never emits it there
        got = [c for c in got if c[0] != "cu_lu_pivots_to_permutation"]
    assert got == want
