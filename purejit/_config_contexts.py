"""JAX's configuration context managers under their names: `purejit.enable_x64(True)`,
`log_compiles`, `explain_cache_misses`, `default_matmul_precision`.

`with purejit.enable_x64(): ...` sets the option for the block and restores the old value
after it. As in JAX, each also works as a decorator. purejit's options are process-wide, so
the setting holds in every thread for the block's duration (JAX's are thread-local). A
jitted function called under another `enable_x64` or `default_matmul_precision` is traced
again (its cache is keyed on both), as JAX's is.
"""

from __future__ import annotations

import contextlib

from purejit.config import config


class _OptionContext(contextlib.ContextDecorator):
    def __init__(self, option: str, value):
        self.option, self.value = option, value

    def __enter__(self):
        self.saved = config.read(self.option)
        config.update(self.option, self.value)
        return self

    def __exit__(self, *exc):
        config.update(self.option, self.saved)
        return False


def _context(option: str, default, doc: str):
    def manager(new_val=default):
        return _OptionContext(option, new_val)

    manager.__name__ = option if option != "jit_log_compiles" else "log_compiles"
    manager.__doc__ = f"""Set `{option}` for a `with` block (or a decorated function): {doc}

    Args:
        new_val: the value inside the block (default {default!r}).
    """
    return manager


enable_x64 = _context("enable_x64", True, "64-bit types by default.")
log_compiles = _context("jit_log_compiles", True, "log each XLA compile.")
explain_cache_misses = _context("explain_cache_misses", True, "log why jit traced again.")
debug_nans = _context("debug_nans", True, "raise FloatingPointError naming the op that made a NaN.")
debug_infs = _context(
    "debug_infs", True, "raise FloatingPointError naming the op that made an Inf."
)


def numpy_rank_promotion(new_val):
    """How purejit.numpy broadcasts operands of different ranks, for a `with` block (or a
    decorated function), as `jax.numpy_rank_promotion`.

    Args:
        new_val: "allow" (NumPy's rule), "warn" (a UserWarning each time) or "raise" (a
            ValueError naming the function and the shapes).
    """
    return _OptionContext("numpy_rank_promotion", new_val)


def default_matmul_precision(new_val):
    """Set the `precision=` that dots and convolutions take when given None, for a `with`
    block (or a decorated function), as `jax.default_matmul_precision`.

    Args:
        new_val: "default", "high", "highest", "bfloat16", "tensorfloat32", "float32", ...
            or None (XLA's default).
    """
    return _OptionContext("default_matmul_precision", new_val)


class _StandardPromotion(contextlib.ContextDecorator):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def numpy_dtype_promotion(new_val):
    """The type-promotion mode for a `with` block (or a decorated function), as
    `jax.numpy_dtype_promotion`. purejit always promotes with JAX's "standard" lattice, so
    "standard" changes nothing; "strict" (no implicit promotion) is not implemented."""
    if new_val == "standard":
        return _StandardPromotion()
    if new_val == "strict":
        raise NotImplementedError(
            "numpy_dtype_promotion('strict'): purejit implements only JAX's 'standard' type "
            "promotion; convert dtypes explicitly instead"
        )
    raise ValueError(f"jax_numpy_dtype_promotion must be 'standard' or 'strict', got {new_val!r}")


__all__ = [
    "debug_infs",
    "debug_nans",
    "default_matmul_precision",
    "enable_x64",
    "explain_cache_misses",
    "log_compiles",
    "numpy_dtype_promotion",
    "numpy_rank_promotion",
]
