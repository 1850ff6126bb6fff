"""`lax.Precision` and the `precision=` argument of dot, dot_general and convolutions.

XLA's precision config says how many passes a float32 product may use on hardware with
narrower multipliers: DEFAULT lets a GPU use TF32 (and a TPU one bf16 pass), HIGHEST keeps
full float32. CPU computes float32 in full either way.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np

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


# ---- dot algorithms: StableHLO's `algorithm` on dot_general --------------------------------

_FLOAT8 = ("float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
           "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu")  # fmt: skip
# StableHLO's element type names of the precision types (tf32 is not a storage dtype)
_TYPE_NAMES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
               "tf32": "tf32"}  # fmt: skip


def _type_name(dtype) -> str:
    if isinstance(dtype, str) and dtype in ("tf32", "TF32"):
        return "tf32"
    name = np.dtype(dtype).name
    if name in _TYPE_NAMES:
        return _TYPE_NAMES[name]
    if name in _FLOAT8:
        return {"float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2", "float8_e4m3fnuz":
                "f8E4M3FNUZ", "float8_e5m2fnuz": "f8E5M2FNUZ", "float8_e4m3b11fnuz":
                "f8E4M3B11FNUZ", "float8_e3m4": "f8E3M4", "float8_e4m3": "f8E4M3",
                "float8_e8m0fnu": "f8E8M0FNU"}[name]  # fmt: skip
    raise ValueError(f"dot algorithm: {name} is not a precision type StableHLO knows")


class DotAlgorithm(NamedTuple):
    """How a dot product computes (JAX's `lax.DotAlgorithm`, StableHLO's `algorithm`): the
    types the operands are rounded to, the accumulation type, how many components each
    operand is split into and how many products emulate the result, and whether the
    accumulation may be imprecise. Pass it as `precision=`; the backend rejects at compile
    time what it cannot run."""

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False

    def _attr(self, lhs_dtype, rhs_dtype) -> tuple:
        del lhs_dtype, rhs_dtype
        return (_type_name(self.lhs_precision_type), _type_name(self.rhs_precision_type),
                _type_name(self.accumulation_type), int(self.lhs_component_count),
                int(self.rhs_component_count), int(self.num_primitive_operations),
                bool(self.allow_imprecise_accumulation))  # fmt: skip

    def _compute_types(self, lhs_dtype, rhs_dtype, out_dtype):
        del lhs_dtype, rhs_dtype, out_dtype
        return self.lhs_precision_type, self.rhs_precision_type, self.accumulation_type


class DotAlgorithmPreset(enum.Enum):
    """The named dot algorithms (JAX's `lax.DotAlgorithmPreset`): `LHS_RHS_ACCUM` types, an
    `_X3`/`_X6`/`_X9` suffix for that many bf16 (or tf32) products emulating float32, and
    the float8 presets; `DEFAULT` lets the backend choose. `precision="F16_F16_F32"` names
    one."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def _any_f8(self) -> bool:
        return self.name.startswith("ANY_F8")

    @property
    def supported_lhs_types(self):
        """The operand dtypes the preset takes as they are (others are converted to the
        first); None: any."""
        name = self.name
        if name == "DEFAULT" or self._any_f8:
            return None
        if name.startswith("F16_"):
            return (np.dtype(np.float16),)
        if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
            return (np.dtype(ml_dtypes.bfloat16), np.dtype(np.float32))
        if name == "F64_F64_F64":
            return (np.dtype(np.float64),)
        return (np.dtype(np.float32),)

    supported_rhs_types = supported_lhs_types

    @property
    def accumulation_type(self):
        """The dtype the preset accumulates in (None: the result's)."""
        if self.name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
            return None
        return {"F16_F16_F16": np.dtype(np.float16), "BF16_BF16_BF16":
                np.dtype(ml_dtypes.bfloat16), "F64_F64_F64": np.dtype(np.float64)}.get(
                    self.name, np.dtype(np.float32))  # fmt: skip

    def supported_output_types(self, lhs_dtype, rhs_dtype):
        """The result dtypes the preset can return (None: any)."""
        name = self.name
        if name in ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"):
            f8 = [getattr(ml_dtypes, f) for f in _FLOAT8[:5]]
            return tuple(np.dtype(t) for t in (np.float32, np.float16, ml_dtypes.bfloat16, *f8))
        same = np.dtype(lhs_dtype) == np.dtype(rhs_dtype)
        if name == "F16_F16_F32" and same and np.dtype(lhs_dtype) == np.float16:
            return (np.dtype(np.float32), np.dtype(np.float16))
        if name == "BF16_BF16_F32" and same and np.dtype(lhs_dtype) == ml_dtypes.bfloat16:
            return (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16))
        acc = self.accumulation_type
        return None if acc is None else (acc,)

    def _compute_types(self, lhs_dtype, rhs_dtype, out_dtype):
        def pick(dtype, allowed):
            if allowed is None or np.dtype(dtype) in allowed:
                return np.dtype(dtype)
            return allowed[0]

        lhs = pick(lhs_dtype, self.supported_lhs_types)
        rhs = pick(rhs_dtype, self.supported_rhs_types)
        return lhs, rhs, pick(out_dtype, self.supported_output_types(lhs, rhs))

    def _attr(self, lhs_dtype, rhs_dtype) -> tuple | None:
        name = self.name
        if name == "DEFAULT":
            return None
        if self._any_f8:
            names = (np.dtype(lhs_dtype).name, np.dtype(rhs_dtype).name)
            if not all(n in _FLOAT8 for n in names):
                raise ValueError(
                    f"The dot algorithm '{self}' requires both inputs to have float8 dtypes. "
                    f"Got {names[0]} and {names[1]} instead."
                )
            imprecise = name == "ANY_F8_ANY_F8_F32_FAST_ACCUM"
            return (_type_name(lhs_dtype), _type_name(rhs_dtype), "f32", 1, 1, 1, imprecise)
        parts = name.split("_")
        ops = int(parts[3][1:]) if len(parts) == 4 else 1
        t = {"F16": "f16", "BF16": "bf16", "TF32": "tf32", "F32": "f32", "F64": "f64"}
        return (t[parts[0]], t[parts[1]], t[parts[2]], 1, 1, ops, False)


def dot_algorithm(precision):
    """The `DotAlgorithm` / `DotAlgorithmPreset` that `precision=` names (a preset by its
    name too, as JAX reads `precision="F16_F16_F32"`), or None for a `Precision`."""
    if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    if isinstance(precision, str) and precision.lower() not in _ALIASES:
        try:
            return DotAlgorithmPreset[precision]
        except KeyError:
            return None
    return None
