"""jax 0.11's `Inline` and `CompilerEffortLevel` (purejit/compiler/options.py): JAX's members
and values, the jit(inline=) modes purejit honours, and a clear refusal of those it cannot
honour (a call kept for XLA to inline; an XLA effort level other than the default)."""

import numpy as np
import pytest

import purejit
from purejit import CompilerEffortLevel, Inline


def test_members_and_values_are_jaxs():
    assert {m.name: m.value for m in Inline} == {
        "JAX_EARLY": "jax_early",
        "JAX_LATE": "jax_late",
        "XLA_EARLY": "xla_early",
        "XLA_LATE": "xla_late",
        "AUTO": "auto",
    }
    assert {m.name: m.value for m in CompilerEffortLevel} == {
        "UNKNOWN": 0,
        "O0": 9,
        "O1": 19,
        "O2": 29,
        "O3": 39,
    }
    assert CompilerEffortLevel("O2") is CompilerEffortLevel.O2
    assert CompilerEffortLevel(39) is CompilerEffortLevel.O3
    with pytest.raises(ValueError):
        CompilerEffortLevel("O4")


@pytest.mark.parametrize("mode", [True, False, Inline.JAX_EARLY, Inline.JAX_LATE, Inline.AUTO])
def test_inline_modes_purejit_honours(mode):
    inner = purejit.jit(lambda x: x * 2.0, inline=mode)
    assert float(purejit.jit(lambda x: inner(x) + 1.0)(np.float32(3.0))) == 7.0


@pytest.mark.parametrize("mode", [Inline.XLA_EARLY, Inline.XLA_LATE])
def test_inline_modes_kept_for_xla_are_refused(mode):
    with pytest.raises(NotImplementedError, match=mode.name):
        purejit.jit(lambda x: x, inline=mode)
    with pytest.raises(TypeError, match="bool or a purejit.Inline"):
        purejit.jit(lambda x: x, inline="xla_late")


def test_effort_levels_in_compiler_options():
    f = purejit.jit(lambda x: x + 1.0, compiler_options={"optimization_level": "UNKNOWN"})
    assert float(f(np.float32(1.0))) == 2.0
    for key in ("optimization_level", "memory_fitting_level"):
        with pytest.raises(NotImplementedError, match=f"{key}=CompilerEffortLevel.O1"):
            purejit.jit(lambda x: x, compiler_options={key: CompilerEffortLevel.O1})(1.0)
