"""`lax.Precision` and the `precision=` argument of dot, dot_general and convolutions.

XLA's precision config says how many passes a float32 product may use on hardware with
narrower multipliers: DEFAULT lets a GPU use TF32 (and a TPU one bf16 pass), HIGHEST keeps
full float32. CPU computes float32 in full either way.
"""

from __future__ import annotations

import enum

from purejit.config import config


class Precision(enum.Enum):
    """JAX's `lax.Precision`: DEFAULT, HIGH or HIGHEST (StableHLO's precision_config)."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    def __str__(self) -> str:
        return self.name

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            name = _ALIASES.get(value.lower())
            if name is not None:
                return cls[name]
        return None


_ALIASES = {
    "default": "DEFAULT",
    "fastest": "DEFAULT",
    "bfloat16": "DEFAULT",
    "high": "HIGH",
    "bfloat16_3x": "HIGH",
    "tensorfloat32": "HIGH",
    "highest": "HIGHEST",
    "float32": "HIGHEST",
}


def _one(p, fname: str) -> Precision:
    if isinstance(p, Precision):
        return p
    if isinstance(p, str):
        try:
            return Precision(p)
        except ValueError:
            pass
    raise ValueError(
        f"{fname}: precision={p!r} is not a lax.Precision; use None, Precision.DEFAULT, "
        f"Precision.HIGH, Precision.HIGHEST (or 'default', 'high', 'highest', 'float32', "
        "'tensorfloat32', 'bfloat16'), or a pair of them"
    )


def canonical_precision(precision, fname: str) -> tuple[str, str] | None:
    """The IR's `precision` attribute (a pair of names) for a user's `precision=`.

    None falls back to `config.default_matmul_precision` (JAX's
    `jax_default_matmul_precision`); None there too leaves XLA's default.
    """
    if precision is None:
        precision = config.read("default_matmul_precision")
        if precision is None:
            return None
    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise ValueError(f"{fname}: precision={precision!r} must be one value or a pair")
        a, b = (_one(p, fname) for p in precision)
    else:
        a = b = _one(precision, fname)
    return (a.name, b.name)
