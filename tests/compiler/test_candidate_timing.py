"""The timing loop of the collective-matmul pass's timed `auto` decision, with stand-in
programs (no devices): interleaved rounds, calls per round from the budget, medians, and
process 0's numbers of calls taken by every process."""

import numpy as np
import pytest

from purejit.compiler import candidate_timing as ct
from purejit.ir import dtypes


class Fake:
    """A program whose calls take `per_call` seconds each (`slow`: its k-th round of timed
    calls, counted from 0, takes ten times longer); records every run."""

    def __init__(self, name, per_call, log, slow=None):
        self.name, self.per_call, self.log, self.slow = name, per_call, log, slow
        self.rounds = 0

    def __call__(self, k):
        self.log.append((self.name, k))
        t = self.per_call * k
        if k > 1:
            t *= 10 if self.rounds == self.slow else 1
            self.rounds += 1
        return t


def test_rounds_interleave_and_medians_decide():
    log = []
    plain, ring = Fake("plain", 1e-3, log, slow=0), Fake("ring", 0.5e-3, log)
    p, r = ct._time_pair(plain, ring, 0.5, lambda v: v)
    # 2 warm-up calls and a probe each, then rounds that alternate which program goes first
    assert log[:6] == [("plain", 1), ("ring", 1)] * 3
    rounds = log[6:]
    assert len(rounds) == 2 * ct.ROUNDS
    first = [rounds[2 * k][0] for k in range(ct.ROUNDS)]
    assert first == ["plain", "ring", "plain", "ring", "plain"]
    # calls per round: a round of both lasts about budget / rounds
    calls = rounds[0][1]
    assert calls == int(0.5 / (2 * ct.ROUNDS * 1e-3)) and all(k == calls for _, k in rounds)
    # one slow round (plain's first) does not move the median
    assert p == pytest.approx(1e-3) and r == pytest.approx(0.5e-3)


def test_budget_bounds_calls_and_rounds():
    log = []
    big = Fake("plain", 0.4, log), Fake("ring", 0.3, log)
    ct._time_pair(*big, 2.0, lambda v: v)
    rounds = log[6:]
    # one call takes 0.4 s: the fewest rounds, one call each
    assert len(rounds) == 2 * ct.MIN_ROUNDS and {k for _, k in rounds} == {1}
    log.clear()
    tiny = Fake("plain", 1e-7, log), Fake("ring", 1e-7, log)
    ct._time_pair(*tiny, 2.0, lambda v: v)
    assert {k for _, k in log[6:]} == {ct.MAX_CALLS}


def test_every_process_runs_process_0s_calls():
    """`agree` gives process 0's [calls, rounds]; a process whose own probe asks for other
    numbers runs those (else the programs' collectives would hang)."""
    log = []
    seen = []

    def agree(v):
        seen.append(v)
        return [7, 3]

    ct._time_pair(Fake("plain", 1e-3, log), Fake("ring", 1e-3, log), 1.0, agree)
    assert seen and seen[0] != [7, 3]
    assert log[6:] == [("plain", 7), ("ring", 7), ("ring", 7), ("plain", 7)] + [
        ("plain", 7),
        ("ring", 7),
    ]


@pytest.mark.parametrize(
    "dtype, shape",
    [("bfloat16", (37, 11)), ("float32", (5, 3, 2)), ("int8", (9,)), ("bool", (4, 4))],
)
def test_timing_inputs_repeat_their_block_as_np_resize_does(dtype, shape):
    dt = np.dtype(dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    block = np.random.default_rng(0).standard_normal(13)
    fill = block.astype(dt) if dt.kind in "fc" else (block > 0).astype(dt)
    got = ct.repeated(fill, shape)
    want = np.resize(fill, shape)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()
