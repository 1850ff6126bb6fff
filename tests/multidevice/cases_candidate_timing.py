"""The collective-matmul pass's timed `auto` decision, compiled on 4 of 8 CPU devices: each
shard_map body timed whole (pass off against every candidate a ring), and candidate by
candidate where a body is unfit for that.

The timing function is replaced (`candidate_timing.time_pair`) where a case needs a given
outcome; the programs it would time are still built and compiled.
"""

import contextlib
import os
import tempfile

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit import lax
from purejit.compiler import calibration, candidate_timing
from purejit.passes import Pipeline
from purejit.passes.collective_matmul import CollectiveMatmul
from purejit.passes.pipeline import default_passes
from purejit.sharding import Mesh
from purejit.sharding import PartitionSpec as P

MESH = Mesh(np.array(purejit.devices()[:4]), ("i",))
B, D, F = 64, 32, 64
RNG = np.random.default_rng(3)
X = RNG.standard_normal((B, D)).astype(np.float32)
W1 = (RNG.standard_normal((D, F)) / 8).astype(np.float32)
W2 = (RNG.standard_normal((F, D)) / 8).astype(np.float32)


def body(x, w1, w2):  # sequence-parallel Megatron MLP: one candidate of each kind
    h = jnp.tanh(lax.all_gather(x, "i", tiled=True) @ w1)
    return lax.psum_scatter(h @ w2, "i", scatter_dimension=0, tiled=True)


MLP = purejit.shard_map(body, mesh=MESH, in_specs=(P("i"), P(None, "i"), P("i")), out_specs=P("i"))


def lowered(mode="auto", fn=MLP):
    f = purejit.jit(fn, passes=Pipeline([CollectiveMatmul(mode=mode), *default_passes()]))
    low = f.lower(X, W1, W2)
    return f, low, next(r for r in low.records if r.name == "collective_matmul").report


@contextlib.contextmanager
def timings(plain_s, ring_s):
    """Every body (or candidate) times `plain_s` as written and `ring_s` with rings (either
    may be a function of the plain program's HLO text); yields the list of the timing calls
    made (each gets the two compiled programs)."""
    calls = []

    def fake(plain, ring, budget_s, agree):
        calls.append((plain, ring, budget_s))
        pick = [v(plain.exe.hlo_text()) if callable(v) else v for v in (plain_s, ring_s)]
        return tuple(pick)

    candidate_timing.forget()
    saved, candidate_timing.time_pair = candidate_timing.time_pair, fake
    try:
        yield calls
    finally:
        candidate_timing.time_pair = saved
        candidate_timing.forget()


@contextlib.contextmanager
def patched(**values):
    """candidate_timing's constants set to `values` for the block."""
    saved = {k: getattr(candidate_timing, k) for k in values}
    for k, v in values.items():
        setattr(candidate_timing, k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(candidate_timing, k, v)


def off_result():
    f, _, _ = lowered("off")
    return np.asarray(f(X, W1, W2))


def case_body_faster_is_rewritten():
    with timings(1e-3, 0.5e-3) as calls:
        f, low, rep = lowered()
        # explain's pass table says what was timed and chosen (nothing is timed again)
        text = str(purejit.explain(f, X, W1, W2))
    line = "shard_map body of 2 candidate(s) timed whole: off 1000.0 us, on 500.0 us, chose on"
    assert line in text and line in rep["timed"], rep["timed"]
    # one timing for the whole body; both candidates follow it
    assert rep["rewritten"] == 2 and len(calls) == 1, rep
    assert all(c["route"] == "body" and c["timed"] == "timed" for c in rep["candidates"]), rep
    assert [b["route"] for b in rep["bodies"]] == ["body"] and rep["bodies"][0]["ring_s"] == 5e-4
    hlo = low.compile().as_text()
    assert "all-gather(" not in hlo and "collective-permute(" in hlo
    # the timed programs are the whole body, as written and with both rings, compiled
    plain, ring, budget = calls[0]
    assert "all-gather(" in plain.exe.hlo_text() and "reduce-scatter(" in plain.exe.hlo_text()
    assert "tanh" in plain.exe.hlo_text() and "all-gather(" not in ring.exe.hlo_text()
    assert "reduce-scatter(" not in ring.exe.hlo_text()
    assert "collective-permute(" in ring.exe.hlo_text() and 0 < budget <= 2.0
    # its parameters are the shard_map's operands with the in_specs' shardings
    assert [a.shape for a in plain.args] == [X.shape, W1.shape, W2.shape]
    np.testing.assert_allclose(np.asarray(f(X, W1, W2)), off_result(), rtol=1e-5, atol=1e-5)


def case_plain_faster_or_within_margin_is_kept():
    for ring_s in (2e-3, 0.99e-3):  # slower, and faster by less than the 2% margin
        with timings(1e-3, ring_s):
            _, low, rep = lowered()
        assert rep["rewritten"] == 0, rep
        assert "chose off" in rep["timed"] and "all-gather(" in low.compile().as_text()
    with timings(1e-3, 0.97e-3):  # faster by more than the margin
        assert lowered()[2]["rewritten"] == 2


def case_second_compile_does_not_time_again():
    with timings(1e-3, 0.5e-3) as calls:
        _, low, _ = lowered()
        assert len(calls) == 1 and low.timings["calibration"] > 0
        _, low2, rep = lowered()
        assert len(calls) == 1 and rep["rewritten"] == 2, rep
        assert low2.timings["calibration"] < 0.05, low2.timings
        # on and off never time
        lowered("on"), lowered("off")
        assert len(calls) == 1


def case_decisions_persist_under_cache_dir():
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o700)
        purejit.config.update("cache_dir", d)
        try:
            with timings(1e-3, 0.5e-3) as calls:
                lowered()
                files = [n for n in os.listdir(d) if n.startswith("collective-matmul-")]
                assert len(calls) == 1 and len(files) == 1, (calls, os.listdir(d))
                candidate_timing.forget()  # this process forgets; the files stay
                _, _, rep = lowered()
                assert len(calls) == 1 and rep["rewritten"] == 2, rep
                assert {c["timed"] for c in rep["candidates"]} == {"loaded"}, rep
                assert {c["route"] for c in rep["candidates"]} == {"body"}, rep
        finally:
            purejit.config.update("cache_dir", None)


def _by_candidates(rep, calls, reason):
    """The body was decided candidate by candidate, for `reason`."""
    assert len(calls) == 2 and rep["bodies"] == [], rep  # one timing per candidate
    assert {c["route"] for c in rep["candidates"]} == {"candidates"}, rep
    assert "all_gather->dot timed plain 1000.0 us, ring 500.0 us, chose ring" in rep["timed"]
    assert reason in rep["timed"], rep["timed"]
    plain, ring, _ = calls[0]  # the candidate alone: no tanh, no reduce-scatter
    assert "tanh" not in plain.exe.hlo_text() and "reduce-scatter(" not in plain.exe.hlo_text()


def case_body_over_the_memory_cap_is_timed_by_candidates():
    # the body's inputs and outputs per device: four f32 blocks of 16 x 32, 8 KiB in all
    with patched(BODY_BYTES_CAP=1024), timings(1e-3, 0.5e-3) as calls:
        _, low, rep = lowered()
        assert rep["rewritten"] == 2, rep
        _by_candidates(rep, calls, "inputs and outputs take 0.00781 MiB per device, over 0.000977")
        # the reason is kept with the body: a second compile times nothing
        lowered()
        assert len(calls) == 2
    with patched(BODY_BYTES_CAP=1 << 20), timings(1e-3, 0.5e-3) as calls:
        assert lowered()[2]["bodies"][0]["route"] == "body" and len(calls) == 1


def case_body_too_slow_to_probe_is_timed_by_candidates():
    with patched(PROBE_SHARE=0.0), timings(1e-3, 0.5e-3) as calls:
        _, _, rep = lowered()
        _by_candidates(rep, calls, "one call takes")


def case_body_with_a_callback_is_timed_by_candidates():
    seen = []

    def noisy(x, w1, w2):
        purejit.debug.callback(lambda v: seen.append(1), x[0, 0])
        return body(x, w1, w2)

    fn = purejit.shard_map(noisy, mesh=MESH, in_specs=(P("i"), P(None, "i"), P("i")),
                           out_specs=P("i"))  # fmt: skip
    with timings(1e-3, 0.5e-3) as calls:
        _, _, rep = lowered(fn=fn)
        _by_candidates(rep, calls, "effects or callbacks in the body")
    assert seen == []  # deciding never ran the user's callback


def case_two_bodies_get_one_decision_each():
    def plain_mlp(x, w1, w2):  # no tanh: a second, different body
        h = lax.all_gather(x, "i", tiled=True) @ w1
        return lax.psum_scatter(h @ w2, "i", scatter_dimension=0, tiled=True)

    specs = dict(mesh=MESH, in_specs=(P("i"), P(None, "i"), P("i")), out_specs=P("i"))
    second = purejit.shard_map(plain_mlp, **specs)

    def two(x, w1, w2):
        return second(MLP(x, w1, w2), w1, w2)

    def twice(x, w1, w2):  # the same body twice: one decision, timed once
        return MLP(MLP(x, w1, w2), w1, w2)

    # the tanh body's rings win, the other's lose
    with timings(1e-3, lambda hlo: 0.5e-3 if "tanh" in hlo else 2e-3) as calls:
        f, low, rep = lowered(fn=two)
        assert len(calls) == 2, calls
        assert [b["rewritten"] for b in rep["bodies"]] == [True, False], rep["bodies"]
        assert rep["rewritten"] == 2 and rep["timed"].count("timed whole") == 2, rep["timed"]
        hlo = low.compile().as_text()
        assert "all-gather(" in hlo and "collective-permute(" in hlo
        want = np.asarray(second(MLP(X, W1, W2), W1, W2))
        np.testing.assert_allclose(np.asarray(f(X, W1, W2)), want, rtol=1e-5, atol=1e-5)
        _, _, rep = lowered(fn=twice)
        assert len(calls) == 2 and rep["rewritten"] == 4, rep  # decided above already
        assert [b["timed"] for b in rep["bodies"]] == ["timed", "timed"], rep["bodies"]


def case_real_timing_gives_the_pass_off_numbers():
    calibration.forget()
    f, low, rep = lowered()
    (b,) = rep["bodies"]
    assert b["route"] == "body" and b["timed"] == "timed" and b["plain_s"] > 0, b
    assert b["ring_s"] > 0 and b["rewritten"] == (b["ring_s"] < 0.98 * b["plain_s"]), b
    assert rep["rewritten"] == 2 * b["rewritten"], rep
    # the runs stay inside the budget; the two whole-body compiles come on top
    assert 0 < low.timings["calibration"] <= low.timings["passes"], low.timings
    print(rep["timed"], f"{low.timings['calibration']:.2f} s")
    np.testing.assert_allclose(np.asarray(f(X, W1, W2)), off_result(), rtol=1e-5, atol=1e-5)
    calibration.forget()
