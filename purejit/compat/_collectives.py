"""`jax.lax` collectives that JAX libraries name and purejit.lax spells through another
collective (chex's fakes wrap `pswapaxes` when they are imported). purejit.lax's own
function wins once it has one."""

from __future__ import annotations

from purejit import lax


def pswapaxes(x, axis_name, axis: int, *, axis_index_groups=None):
    """Swap the mapped axis `axis_name` with the positional `axis` of `x` (whose size must be
    the mapped axis's): JAX's `all_to_all(x, axis_name, axis, axis)`."""
    if axis_index_groups is not None:
        raise NotImplementedError("pswapaxes(axis_index_groups=...) is not implemented in purejit")
    return lax.all_to_all(x, axis_name, axis, axis)


def missing() -> dict:
    """The names above that purejit.lax lacks."""
    return {k: f for k, f in {"pswapaxes": pswapaxes}.items() if not hasattr(lax, k)}
