"""Every registered op has a batching rule; the ops batched by looping over the examples are
listed here, each with its reason (the fallback is reported by `explain` where it is used)."""

from __future__ import annotations

from purejit.ir import all_ops
from purejit.transforms.batching import FALLBACKS, RULES
from purejit.transforms.batching.core import loop_rule

# op -> why it runs once per example instead of batched; keep in step with FALLBACKS
LOOPED: dict[str, str] = {
    "host_callback": "a host callback runs once per example (JAX's debug.callback)",
    "pure_callback": "a pure callback runs once per example (vmap_method='sequential')",
}


def test_every_op_has_a_batching_rule():
    missing = sorted(set(all_ops()) - set(RULES))
    assert not missing, f"ops without a batching rule: {missing}"


def test_fallbacks_are_listed_with_their_reason():
    looped = {name for name, rule in RULES.items() if getattr(rule, "func", None) is loop_rule}
    assert looped == set(FALLBACKS) == set(LOOPED), (looped, FALLBACKS, LOOPED)
    for name, reason in FALLBACKS.items():
        assert reason and reason == LOOPED[name], name


def test_rules_are_for_registered_ops():
    assert not set(RULES) - set(all_ops())
