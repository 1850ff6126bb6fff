"""Every registered op has a JVP rule, or is marked not differentiable for an allowed reason
(its results are integers or booleans, or JAX does not differentiate it either, saying why);
every op a tangent rule can put into a linear
program has a transpose rule. The test walks the registry, so an op added later without
rules fails here by name."""

from __future__ import annotations

from purejit.ir import all_ops
from purejit.transforms.autodiff import JVP_RULES, NOT_DIFFERENTIABLE, TRANSPOSE_RULES
from purejit.transforms.autodiff._core import LINEAR_OPS

ALLOWED_REASONS = {"integer or boolean results"}
JAX_DOES_NOT = "JAX does not differentiate it: "  # followed by why


def _allowed(reason: str) -> bool:
    why = reason.removeprefix(JAX_DOES_NOT)
    return reason in ALLOWED_REASONS or (why != reason and len(why) > 20)


def test_every_op_has_a_jvp_rule_or_an_allowed_reason():
    missing = sorted(n for n in all_ops() if n not in JVP_RULES and n not in NOT_DIFFERENTIABLE)
    assert not missing, f"ops without a JVP rule (add one in transforms/autodiff/): {missing}"
    bad = {n: r for n, r in NOT_DIFFERENTIABLE.items() if not _allowed(r)}
    assert not bad, f"ops marked not differentiable for a reason that is not allowed: {bad}"


def test_every_linear_op_has_a_transpose_rule():
    missing = sorted(n for n in LINEAR_OPS if n not in TRANSPOSE_RULES)
    assert not missing, f"linear ops without a transpose rule: {missing}"
    assert {"add", "dot_general", "scan", "case", "gather", "scatter"} <= LINEAR_OPS


def test_rules_live_in_the_family_file_of_their_op():
    for name, rule in {**JVP_RULES, **TRANSPOSE_RULES}.items():
        if name not in all_ops():
            continue
        family = all_ops()[name].infer.__module__.rsplit(".", 1)[1]
        module = rule.__module__.rsplit(".", 1)[1]
        assert module in (family, "_core"), f"{name}: rule in {rule.__module__}, op in {family}"
