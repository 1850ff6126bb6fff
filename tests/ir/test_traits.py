"""The closed list of op traits: every op's traits come from it, and nothing else does."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

from purejit.ir import Builder, OpDef, TensorType, all_ops, register
from purejit.ir.registry import _REGISTRY
from purejit.ir.traits import TRAIT_DOCS, TRAITS


def _infer(types, attrs, regions):
    return list(types)


def _reference(args, attrs, regions, run_region):
    return list(args)


def test_every_registered_op_has_only_listed_traits():
    bad = {name: sorted(d.traits - TRAITS) for name, d in all_ops().items() if d.traits - TRAITS}
    assert not bad, f"ops with traits outside purejit.ir.traits: {bad}"


def test_every_trait_says_what_it_promises():
    assert TRAITS == frozenset(TRAIT_DOCS)
    assert all(doc.strip() for doc in TRAIT_DOCS.values())


def test_register_rejects_an_unknown_trait_naming_op_trait_and_the_list():
    opdef = OpDef("test_op_with_typo", _infer, _reference, frozenset({"pure", "elementwsie"}))
    with pytest.raises(ValueError) as e:
        register(opdef)
    msg = str(e.value)
    assert "test_op_with_typo" in msg and "elementwsie" in msg
    assert "elementwise" in msg and "side_effect" in msg  # the valid ones are listed
    assert "test_op_with_typo" not in all_ops()


def test_register_accepts_listed_traits():
    opdef = OpDef("test_op_listed_traits", _infer, _reference, frozenset({"pure", "cheap"}))
    try:
        assert register(opdef) is opdef
        assert all_ops()["test_op_listed_traits"].traits == {"pure", "cheap"}
    finally:
        _REGISTRY.pop("test_op_listed_traits", None)


def test_has_trait_rejects_a_query_for_an_unknown_trait():
    b = Builder()
    x = b.param(TensorType((3,), np.float32))
    (y,) = b.op("add", [x, x])
    (op,) = b.finish([y]).ops
    assert op.has_trait("commutative") and op.has_trait("cheap")
    assert not op.has_trait("reduction")
    with pytest.raises(ValueError, match="comutative"):
        op.has_trait("comutative")


@pytest.mark.parametrize(
    "trait, ops",
    [
        ("view", {"reshape"}),
        ("fusion", {"fusion"}),
        ("control_flow", {"while", "case"}),
        ("contraction", {"dot_general"}),
    ],
)
def test_single_purpose_traits_sit_on_their_ops(trait, ops):
    assert ops <= {name for name, d in all_ops().items() if trait in d.traits}


def test_cheap_ops_are_elementwise_and_transcendentals_are_not_cheap():
    cheap = {name for name, d in all_ops().items() if "cheap" in d.traits}
    assert {"add", "multiply", "compare", "select", "convert"} <= cheap
    assert not cheap & {"exponential", "log", "divide", "tanh", "power"}
    assert all("elementwise" in all_ops()[name].traits for name in cheap)


def _asked_traits(source: str):
    """(line, trait) for each literal trait asked in `source`: `x.has_trait("t")`,
    `_has(op, "t")` and `"t" in <...>.traits` / `"t" in traits`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("has_trait", "_has"):
                for a in node.args:
                    if isinstance(a, ast.Constant) and isinstance(a.value, str):
                        yield node.lineno, a.value
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant):
            right = node.comparators[0]
            named = getattr(right, "attr", None) or getattr(right, "id", None)
            if named == "traits" and isinstance(node.left.value, str):
                yield node.lineno, node.left.value


def test_the_trait_scan_finds_queries():
    src = 'a = op.has_trait("pure")\nb = "cheap" in op.opdef.traits\nc = _has(op, "view")\n'
    assert sorted(_asked_traits(src)) == [(1, "pure"), (2, "cheap"), (3, "view")]


def test_ir_and_passes_ask_only_listed_traits():
    root = pathlib.Path(__file__).resolve().parents[2]
    files = sorted([*(root / "ir").rglob("*.py"), *(root / "passes").rglob("*.py")])
    asked = [(p, line, t) for p in files for line, t in _asked_traits(p.read_text())]
    assert len(asked) > 20, "the scan found too few trait queries to be looking right"
    bad = [f"{p.relative_to(root)}:{line}: {t!r}" for p, line, t in asked if t not in TRAITS]
    assert not bad, "traits asked but not in purejit.ir.traits:\n" + "\n".join(bad)
