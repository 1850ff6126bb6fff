"""The differential fuzzer in the test suite: 200 random programs (two or three starting with
each op of the table), the op table's coverage of the registered IR ops, and every
regression the fuzzer found (IR text in, expected numbers out)."""

import math

import pytest
from hypothesis import HealthCheck, Phase, given, settings

import purejit  # noqa: F401  (registers every op)
from purejit.ir.registry import all_ops

from . import regress
from .check import check
from .ops import NOT_GENERATED, SPECS, covered_ir_ops
from .program import Program, programs

PROGRAMS = 200
PER_OP = math.ceil(PROGRAMS / len(SPECS))


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
        check(prog)

    run()


def test_every_registered_op_is_generated_or_excused():
    missing = sorted(set(all_ops()) - covered_ir_ops() - set(NOT_GENERATED))
    assert missing == [], (
        f"IR ops the fuzzer never generates: {missing}; add a Spec to tests/fuzz/ops.py "
        "or a line with the reason to NOT_GENERATED"
    )
    stale = sorted(set(NOT_GENERATED) - set(all_ops()))
    assert stale == [], f"NOT_GENERATED names ops that are not registered: {stale}"


@pytest.mark.parametrize("name", regress.names())
def test_regression(name):
    regress.replay(name)


@pytest.mark.parametrize("name", regress.names())
def test_regression_program_agrees_everywhere(name):
    check(regress.program(name))
