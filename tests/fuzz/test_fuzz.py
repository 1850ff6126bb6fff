"""The differential fuzzer in the test suite: up to 236 random programs (two starting with each
op of the table) within a fixed time budget, the op table's coverage of the registered IR
ops, the drawn op set pinned so it never shrinks, and every regression the fuzzer found (IR
text in, expected numbers out)."""

import math
import os
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import purejit  # noqa: F401  (registers every op)
from purejit.ir.registry import all_ops

from . import regress
from .check import Mismatch, check, low_precision
from .ops import NOT_GENERATED, SPECS, covered_ir_ops
from .program import Program, programs

PROGRAMS = 200
PER_OP = math.ceil(PROGRAMS / len(SPECS))
# The CI time budget of the random programs, shared equally by the ops: an op's test checks
# its programs (always in the same order) until its share is spent, at least one.
BUDGET_S = float(os.environ.get("PUREJIT_FUZZ_BUDGET_S") or 60.0)
PINNED = os.path.join(os.path.dirname(__file__), "drawn_ops.txt")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_random_programs_agree_everywhere(name):
    @settings(
        max_examples=PER_OP,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        # no shrinking here: a failure is reported as drawn (shrinking a compiler program
        # can take minutes); `python -m tests.fuzz` shrinks it to a minimal one
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
    )
    @given(programs(first=name))
    def run(prog: Program):
        drawn.append(prog)
        if checked and time.perf_counter() > deadline:
            return  # this op's share of the budget is spent
        checked.append(prog)
        check(prog)

    drawn: list = []
    checked: list = []
    deadline = time.perf_counter() + BUDGET_S / len(SPECS)
    run()
    assert checked
    # the op is still drawn: an op whose applications all became invalid would silently
    # drop out of the programs (and of the pinned set below)
    assert any(p.ops[0][0] == name for p in drawn), f"{name} is no longer drawn"


def test_drawn_op_set_never_shrinks():
    """The fuzzer's op table still holds every op of drawn_ops.txt (each of which the test
    above checks is drawn); new ops are added to the file."""
    with open(PINNED) as f:
        pinned = [line.strip() for line in f if line.strip()]
    assert sorted(set(pinned) - set(SPECS)) == [], "ops removed from the fuzzer's table"
    assert sorted(set(SPECS) - set(pinned)) == [], "new ops: add them to drawn_ops.txt"


def test_every_registered_op_is_generated_or_excused():
    missing = sorted(set(all_ops()) - covered_ir_ops() - set(NOT_GENERATED))
    assert missing == [], (
        f"IR ops the fuzzer never generates: {missing}; add a Spec to tests/fuzz/ops.py "
        "or a line with the reason to NOT_GENERATED"
    )
    stale = sorted(set(NOT_GENERATED) - set(all_ops()))
    assert stale == [], f"NOT_GENERATED names ops that are not registered: {stale}"


def test_low_precision_rule_catches_float16_accumulation():
    """The float64-reference rule fails a float16 sum accumulated in float16 (the bug the
    old fuzzer could not see) and passes one accumulated in float32, as JAX's."""
    x = np.random.default_rng(0).uniform(-2.0, 3.0, 50_000).astype(np.float16)
    ref = np.array(x.astype(np.float64).sum())
    as_jax = np.array(x.astype(np.float32).sum(), np.float16)
    in_float16 = np.cumsum(x, dtype=np.float16)[-1:].reshape(())
    low_precision("float32 accumulation", as_jax, as_jax, ref)
    with pytest.raises(Mismatch, match="against a float64 reference"):
        low_precision("float16 accumulation", in_float16, as_jax, ref)


@pytest.mark.parametrize("name", regress.names())
def test_regression(name):
    regress.replay(name)


@pytest.mark.parametrize("name", regress.names())
def test_regression_program_agrees_everywhere(name):
    check(regress.program(name))
