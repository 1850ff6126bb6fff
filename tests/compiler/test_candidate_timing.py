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


def test_a_unit_is_timed_in_each_form_and_takes_the_best_ratio(monkeypatch):
    """`_time_all` times the plain unit against each form (its own share of the unit's
    budget, its own agreed numbers of calls) and takes the smallest form / plain time, when
    over `MARGIN` faster; every row is kept in the decision."""
    from types import SimpleNamespace

    class Runner:
        def __init__(self, name):
            self.name, self.compile_s, self.inputs_s = name, 0.25, 0.01
            self.like = "none yet"

        def inputs(self, like=None):
            self.like = like

    # per form: (plain, form) seconds; chunked2 has the best ratio though chunked4 is faster
    table = {"ring": (1.0, 1.2), "chunked2": (0.8, 0.6), "chunked4": (1.0, 0.8)}
    seen = []

    def fake(plain, alt, budget_s, agree):
        seen.append((plain, alt, budget_s, agree([1, 3])))
        return table[alt.name]

    forms = tuple(table)
    monkeypatch.setattr(ct, "programs", lambda unit, mc, unroll, tail, fs: ["plain", *fs])
    monkeypatch.setattr(ct, "_Runner", Runner)
    monkeypatch.setattr(ct.backend_spmd, "device_by_id", lambda i: SimpleNamespace(platform="x"))
    monkeypatch.setattr(ct, "time_pair", fake)
    unit = SimpleNamespace(describe=lambda: "a unit")
    mc = SimpleNamespace(attrs={"device_ids": [0, 1]})
    agreed = []
    got = ct._time_all(
        [("k", unit, mc, forms)], False, None, lambda what, v: agreed.append(what) or v
    )
    d = got["k"]
    assert [(p.name, a.name) for p, a, _, _ in seen] == [("plain", f) for f in forms]
    # the plain program makes the unit's inputs, every form takes them
    plain = seen[0][0]
    assert plain.like is None and all(alt.like is plain for _, alt, _, _ in seen)
    assert agreed == ["calls/0/0", "calls/0/1", "calls/0/2"]
    # the forms share what is left of the unit's budget: the first a third of it, each
    # later one what is left over the forms still to time (here every run took no time)
    budgets = [b for _, _, b, _ in seen]
    assert 0 < budgets[0] <= ct.BUDGET_S / 3 and budgets == sorted(budgets)
    assert budgets[2] <= ct.BUDGET_S
    assert (d.form, d.plain_s, d.ring_s, d.ring) == ("chunked2", 0.8, 0.6, True)
    assert d.forms == (
        ("ring", 1.0, 1.2, False),
        ("chunked2", 0.8, 0.6, True),
        ("chunked4", 1.0, 0.8, True),
    )
    assert d.compile_s == 4 * 0.25 and d.timed_with == "a unit"
    assert {f: v["ring"] for f, v in d.per_form().items()} == {
        "ring": False,
        "chunked2": True,
        "chunked4": True,
    }
    # nothing over the margin: the best ratio is kept, not taken
    table.update(ring=(1.0, 0.99), chunked2=(1.0, 1.5), chunked4=(1.0, 1.0))
    d = ct._time_all([("k", unit, mc, forms)], False, None, lambda what, v: v)["k"]
    assert (d.form, d.ring) == ("ring", False)


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
