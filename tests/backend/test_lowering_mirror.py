"""The lowering rules mirror the op families: `ir/ops/<family>.py` has its rules in
`purejit/backend/lowering/<family>.py`, every op's rule defined in its own family's module.

An op's family is the module that defines its type rule (`OpDef.infer`), which is the module
that registers it; a rule's module is where its function is defined (`fn.__module__`).
"""

from __future__ import annotations

import pathlib

import pytest
from purejit.ir import all_ops

import purejit.backend.lowering
import purejit.ir.ops
from purejit.backend import stablehlo

OPS_DIR = pathlib.Path(purejit.ir.ops.__file__).parent
LOWERING_DIR = pathlib.Path(purejit.backend.lowering.__file__).parent
FAMILIES = sorted(p.stem for p in OPS_DIR.glob("*.py") if not p.stem.startswith("_"))


def _family_of(name: str) -> str:
    module = all_ops()[name].infer.__module__
    assert module.startswith("purejit.ir.ops."), f"{name}: type rule defined in {module}"
    return module.rsplit(".", 1)[1]


def test_the_families_are_found():
    assert {"elementwise", "reduce", "contraction", "control", "collective"} <= set(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_a_lowering_module(family):
    assert (LOWERING_DIR / f"{family}.py").is_file(), (
        f"ir/ops/{family}.py has no purejit/backend/lowering/{family}.py"
    )


def test_no_lowering_module_without_a_family():
    extra = {p.stem for p in LOWERING_DIR.glob("*.py") if not p.stem.startswith("_")}
    assert extra - set(FAMILIES) == set()


@pytest.mark.parametrize("name", sorted(all_ops()))
def test_rule_lives_in_its_family_module(name):
    family = _family_of(name)
    rule = stablehlo.LOWERINGS.get(name)
    assert rule is not None, f"{name}: no @lowering rule (add it to lowering/{family}.py)"
    want = f"purejit.backend.lowering.{family}"
    assert rule.__module__ == want, (
        f"{name} is registered by ir/ops/{family}.py, its lowering rule is defined in "
        f"{rule.__module__}; move it to {want}"
    )


def test_dot_general_is_a_contraction():
    assert _family_of("dot_general") == "contraction"
    assert "dot_general" not in {n for n in all_ops() if _family_of(n) == "reduce"}
