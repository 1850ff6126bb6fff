"""The collective-matmul pass's timed `auto` decision, compiled on 4 of 8 CPU devices.

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


def lowered(mode="auto"):
    # the ring alone: these cases follow one form's decisions (every form of the default
    # auto_forms: cases_collective_matmul_chunked.py)
    cm = CollectiveMatmul(mode=mode, auto_forms=("ring",))
    f = purejit.jit(MLP, passes=Pipeline([cm, *default_passes()]))
    low = f.lower(X, W1, W2)
    return f, low, next(r for r in low.records if r.name == "collective_matmul").report


@contextlib.contextmanager
def timings(plain_s, ring_s):
    """Every candidate times `plain_s` plain and `ring_s` as a ring; yields the list of the
    timing calls made (each gets the two compiled programs)."""
    calls = []

    def fake(plain, ring, budget_s, agree):
        calls.append((plain, ring, budget_s))
        return plain_s, ring_s

    candidate_timing.forget()
    saved, candidate_timing.time_pair = candidate_timing.time_pair, fake
    try:
        yield calls
    finally:
        candidate_timing.time_pair = saved
        candidate_timing.forget()


def off_result():
    f, _, _ = lowered("off")
    return np.asarray(f(X, W1, W2))


def case_ring_faster_is_rewritten():
    with timings(1e-3, 0.5e-3) as calls:
        f, low, rep = lowered()
        # explain's pass table says what was timed and chosen (nothing is timed again)
        text = str(purejit.explain(f, X, W1, W2))
    assert (
        "dot->reduce_scatter timed plain 1000.0 us, ring 500.0 us, chose ring (timed, as "
        "all_gather->dot + dot->reduce_scatter with tanh)" in text
    )
    # the MLP's two candidates are one joint timing unit: timed once, both rings taken
    assert rep["rewritten"] == 2 and len(calls) == 1, rep
    assert all(c["timed"] == "timed" and c["ring_s"] == 0.5e-3 for c in rep["candidates"]), rep
    assert "timed plain 1000.0 us, ring 500.0 us, chose ring" in rep["timed"], rep["timed"]
    joint = "all_gather->dot + dot->reduce_scatter with tanh"
    assert {c["timed_with"] for c in rep["candidates"]} == {joint}, rep
    hlo = low.compile().as_text()
    assert "all-gather(" not in hlo and "collective-permute(" in hlo
    # the timed programs are the unit, plain and as the pass's rings, compiled: both hold
    # the tanh between the matmuls
    plain, ring, budget = calls[0]
    p, r = plain.exe.hlo_text(), ring.exe.hlo_text()
    assert "all-gather(" in p and "reduce-scatter(" in p and "all-gather(" not in r
    assert "collective-permute(" in r and "reduce-scatter(" not in r and 0 < budget <= 2.0
    assert "tanh(" in p and "tanh(" in r
    np.testing.assert_allclose(np.asarray(f(X, W1, W2)), off_result(), rtol=1e-5, atol=1e-5)


def case_plain_faster_or_within_margin_is_kept():
    for ring_s in (2e-3, 0.99e-3):  # slower, and faster by less than the 2% margin
        with timings(1e-3, ring_s):
            _, low, rep = lowered()
        assert rep["rewritten"] == 0, rep
        assert "chose plain" in rep["timed"] and "all-gather(" in low.compile().as_text()
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
        finally:
            purejit.config.update("cache_dir", None)


def case_real_timing_gives_the_pass_off_numbers():
    calibration.forget()
    f, low, rep = lowered()
    for c in rep["candidates"]:
        assert c["timed"] == "timed" and c["plain_s"] > 0 and c["ring_s"] > 0, c
        assert c["rewritten"] == (c["ring_s"] < 0.98 * c["plain_s"]), c
    # the runs stay inside the budget; two small compiles per candidate come on top
    assert 0 < low.timings["calibration"] <= low.timings["passes"], low.timings
    print(rep["timed"], f"{low.timings['calibration']:.2f} s")
    np.testing.assert_allclose(np.asarray(f(X, W1, W2)), off_result(), rtol=1e-5, atol=1e-5)
    calibration.forget()


def body_exp(x, w1, w2):  # the same two candidates with another chain between the matmuls
    h = jnp.exp(lax.all_gather(x, "i", tiled=True) @ w1)
    return lax.psum_scatter(h @ w2, "i", scatter_dimension=0, tiled=True)


MLP_EXP = purejit.shard_map(
    body_exp, mesh=MESH, in_specs=(P("i"), P(None, "i"), P("i")), out_specs=P("i")
)


def case_another_epilogue_is_decided_apart():
    """The candidates alone are the same in both MLPs; their chains differ (tanh, exp), so
    the second is timed, not given the first's decision."""
    with timings(1e-3, 0.5e-3) as calls:
        _, _, rep = lowered()
        assert len(calls) == 1 and rep["rewritten"] == 2, rep
        cm = CollectiveMatmul(auto_forms=("ring",))
        f = purejit.jit(MLP_EXP, passes=Pipeline([cm, *default_passes()]))
        low = f.lower(X, W1, W2)
        rep = next(r for r in low.records if r.name == "collective_matmul").report
        assert len(calls) == 2, calls
        assert {c["timed_with"] for c in rep["candidates"]} == {
            "all_gather->dot + dot->reduce_scatter with exponential"
        }, rep
        plain, ring, _ = calls[1]
        assert "exponential(" in plain.exe.hlo_text() and "exponential(" in ring.exe.hlo_text()
        want = np.exp(X @ W1) @ W2
        np.testing.assert_allclose(np.asarray(f(X, W1, W2)), want, rtol=1e-4, atol=1e-4)
        # the first MLP timed over another set of forms is decided apart too: each form
        # against the plain unit
        cm = CollectiveMatmul(auto_forms=("ring", "chunked2"))
        low = purejit.jit(MLP, passes=Pipeline([cm, *default_passes()])).lower(X, W1, W2)
        rep = next(r for r in low.records if r.name == "collective_matmul").report
        assert len(calls) == 4, calls
        assert [set(c["forms"]) for c in rep["candidates"]] == [{"ring", "chunked2"}] * 2, rep


def _seen():
    """The function `auto` decides for (after the passes before collective_matmul)."""
    got = []
    saved = candidate_timing._decisions

    def spy(fn, unroll, tail):
        got.append(fn)
        return saved(fn, unroll, tail)

    candidate_timing._decisions = spy
    try:
        lowered()
    finally:
        candidate_timing._decisions = saved
    return got[0]


def case_records_of_another_format_are_not_read():
    """A lone candidate's record (the format before timing units) and a unit's record
    without the format mark both say "ring"; the plain program is faster and must win."""
    from purejit.compiler.cache_files import read_record, write_record
    from purejit.passes.collective_matmul import shard_map_candidates, signature

    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o700)
        purejit.config.update("cache_dir", d)
        try:
            with timings(1e-3, 0.5e-3):
                fn = _seen()
            kind = str(purejit.devices()[0].device_kind)
            ring = {"plain_s": 1.0, "ring_s": 0.1, "ring": True, "source": "timed"}
            # the older records: keyed by each candidate's own signature
            for mc, c in shard_map_candidates(fn):
                key = (kind, 4, signature(c, 4, False))
                write_record(d, "collective-matmul", key, {"decision": ring})
            # the unit's record as this format writes it, its format mark taken out
            cm = CollectiveMatmul(auto_forms=("ring",))  # as lowered() times
            ((mc, unit, text),) = candidate_timing.units(fn, cm)
            key = (f"format {candidate_timing.FORMAT}", kind, 4, text)
            rec = read_record(d, "collective-matmul", key)
            assert rec is not None and rec["format"] == candidate_timing.FORMAT, rec
            write_record(d, "collective-matmul", key, {"decision": ring})
            with timings(1e-3, 2e-3) as calls:
                _, _, rep = lowered()
            assert len(calls) == 1 and rep["rewritten"] == 0, rep
            assert {c["timed"] for c in rep["candidates"]} == {"timed"}, rep
            # what was timed now is stored in this format and read back
            assert read_record(d, "collective-matmul", key)["format"] == candidate_timing.FORMAT
            candidate_timing.forget()
            with timings(1e-3, 0.5e-3) as calls:
                _, _, rep = lowered()
            assert not calls and {c["timed"] for c in rep["candidates"]} == {"loaded"}, rep
            assert rep["rewritten"] == 0, rep
        finally:
            purejit.config.update("cache_dir", None)
