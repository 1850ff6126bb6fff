"""`lax.custom_root` and `lax.custom_linear_solve`: solvers differentiated implicitly.

Both trace, when called, functions that need differentiation (the linearization of `f` at a
root; the transpose of `matvec`), which lives a layer above lax, in
`purejit/transforms/solves.py`. That module registers the implementations here when
purejit is imported (as transformation rules register into lower-layer tables); these
functions keep JAX's names, signatures and documentation where users look for them.
"""

from __future__ import annotations

from typing import Any, Callable

_IMPLS: dict[str, Callable] = {}


def register(name: str, impl: Callable) -> None:
    """Install the implementation of `name` (called by purejit.transforms.solves)."""
    _IMPLS[name] = impl


def _impl(name: str) -> Callable:
    try:
        return _IMPLS[name]
    except KeyError:
        raise NotImplementedError(
            f"lax.{name}: its implementation (purejit.transforms.solves) is not loaded; "
            "import purejit"
        ) from None


def custom_root(
    f: Callable,
    initial_guess: Any,
    solve: Callable[[Callable, Any], Any],
    tangent_solve: Callable[[Callable, Any], Any],
    has_aux: bool = False,
):
    """Differentiably solve for a root of `f`, as jax.lax.custom_root.

    The forward pass runs `solve(f, initial_guess)`; derivatives with respect to values `f`
    closes over come from the implicit function theorem at the solution `x*`
    (`f(x*) = 0`): `dx* = -tangent_solve(g, df)`, where `g` is `f` linearized at `x*` and
    `df` the derivative of `f(x*)` with respect to those values. The solution does not
    depend on `initial_guess` (zero derivative).

    Args:
        f: the function whose root is sought; takes and returns pytrees of
            `initial_guess`'s structure.
        initial_guess: the starting point.
        solve: `solve(f, initial_guess) -> solution` (need not be differentiable).
        tangent_solve: `tangent_solve(g, y) -> x` with `g(x) = y` for the linear `g`; for
            a scalar `y`, `lambda g, y: y / g(1.0)`.
        has_aux: `solve` returns `(solution, aux)`; aux gets zero derivatives.
    Returns:
        `solve(f, initial_guess)`.
    """
    return _impl("custom_root")(f, initial_guess, solve, tangent_solve, has_aux)


def custom_linear_solve(
    matvec: Callable,
    b: Any,
    solve: Callable[[Callable, Any], Any],
    transpose_solve: Callable[[Callable, Any], Any] | None = None,
    symmetric: bool = False,
    has_aux: bool = False,
):
    """A matrix-free linear solve with implicitly defined derivatives, as
    jax.lax.custom_linear_solve.

    The forward pass runs `x = solve(matvec, b)` (assumed to satisfy `matvec(x) == b`,
    not checked); the solve itself is never differentiated. The JVP solves again,
    `dx = solve(matvec, db - dmatvec(x))`; reverse mode runs `transpose_solve(vecmat, ct)`,
    where `vecmat` is the transpose of `matvec`, computed by autodiff.

    Args:
        matvec: the linear function to invert (differentiable in the values it closes
            over); takes and returns pytrees of `b`'s structure.
        b: the right-hand side.
        solve: `solve(matvec, b) -> x` (need not be differentiable).
        transpose_solve: `transpose_solve(vecmat, b) -> x`; required for reverse mode
            unless `symmetric`.
        symmetric: `matvec` is its own transpose; `solve` then serves as `transpose_solve`.
        has_aux: `solve` and `transpose_solve` return `(x, aux)`; aux gets zero
            derivatives.
    Returns:
        `solve(matvec, b)`.
    """
    return _impl("custom_linear_solve")(matvec, b, solve, transpose_solve, symmetric, has_aux)


__all__ = ["custom_linear_solve", "custom_root"]
