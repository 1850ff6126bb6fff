"""The collective-matmul pass's chunked form compiled on 4 of 8 CPU devices: the numbers of
the pass off and of JAX's shard_map, and `auto` timing it beside the ring."""

import os
import re
import tempfile

import jax
import numpy as np

import purejit
import purejit.nn  # noqa: F401 (gelu)
import purejit.numpy as jnp
from purejit import lax
from purejit.compiler import candidate_timing
from purejit.passes import Pipeline
from purejit.passes.collective_matmul import CollectiveMatmul
from purejit.passes.pipeline import default_passes
from purejit.sharding import Mesh
from purejit.sharding import PartitionSpec as P

N = 4
MESH = Mesh(np.array(purejit.devices()[:N]), ("i",))
B, D, F = 64, 32, 64
RNG = np.random.default_rng(4)
X = RNG.standard_normal((B, D)).astype(np.float32)
W1 = (RNG.standard_normal((D, F)) / 8).astype(np.float32)
W2 = (RNG.standard_normal((F, D)) / 8).astype(np.float32)
SPECS = (P("i"), P(None, "i"), P("i"))


def body(x, w1, w2):  # sequence-parallel Megatron MLP: one candidate of each kind
    h = jnp.tanh(lax.all_gather(x, "i", tiled=True) @ w1)
    return lax.psum_scatter(h @ w2, "i", scatter_dimension=0, tiled=True)


MLP = purejit.shard_map(body, mesh=MESH, in_specs=SPECS, out_specs=P("i"))


def lowered(layer=MLP, args=(X, W1, W2), **options):
    # these cases are about timing several forms (the pass's default times the ring alone)
    options.setdefault("auto_forms", ("ring", "chunked2", "chunked4"))
    f = purejit.jit(layer, passes=Pipeline([CollectiveMatmul(**options), *default_passes()]))
    low = f.lower(*args)
    return f, low, next(r for r in low.records if r.name == "collective_matmul").report


# small integers through a relu: every product and sum is exact in f32, so the results do
# not depend on the order a matmul kernel adds in (XLA's CPU dot picks its kernel by the
# block's shape, and so does cuBLAS): any element out of place shows as inequality
XI = RNG.integers(-3, 4, (B, D)).astype(np.float32)
W1I = RNG.integers(-3, 4, (D, F)).astype(np.float32)
W2I = RNG.integers(-3, 4, (F, D)).astype(np.float32)


def relu_body(x, w1, w2):
    h = jnp.maximum(lax.all_gather(x, "i", tiled=True) @ w1, 0.0)
    return lax.psum_scatter(h @ w2, "i", scatter_dimension=0, tiled=True)


RELU_MLP = purejit.shard_map(relu_body, mesh=MESH, in_specs=SPECS, out_specs=P("i"))


def count(hlo: str, opcode: str) -> int:
    return len(re.findall(rf"\s{opcode}\(", hlo))


def jax_reference(act=jax.numpy.tanh, args=(X, W1, W2)):
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:N]), ("i",))
    js = jax.sharding.PartitionSpec

    def jbody(x, w1, w2):
        h = act(jax.lax.all_gather(x, "i", tiled=True) @ w1)
        return jax.lax.psum_scatter(h @ w2, "i", scatter_dimension=0, tiled=True)

    specs = (js("i"), js(None, "i"), js("i"))
    f = jax.jit(jax.shard_map(jbody, mesh=jmesh, in_specs=specs, out_specs=js("i")))
    return np.asarray(f(*args))


def case_chunked_forms_compute_what_the_plain_program_computes():
    f_off, low_off, _ = lowered(mode="off")
    off = np.asarray(f_off(X, W1, W2))
    want = jax_reference()
    np.testing.assert_allclose(off, want, rtol=1e-5, atol=1e-5)
    for form, k in (("chunked2", 2), ("chunked4", 4), ("pipelined2", 2), ("pipelined4", 4)):
        f, low, rep = lowered(mode="on", form=form)
        assert rep["rewritten"] == 2 and {c["form"] for c in rep["candidates"]} == {form}, rep
        hlo = low.compile().as_text()
        # k all-gathers and k reduce-scatters, no ring
        assert count(hlo, "all-gather") == k and count(hlo, "reduce-scatter") == k, hlo
        assert "collective-permute" not in hlo
        got = np.asarray(f(X, W1, W2))
        # the same dots on sub-blocks: equal up to the order the CPU's dot kernel adds in
        np.testing.assert_allclose(got, off, rtol=2e-6, atol=2e-6)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        # with sums that are exact in any order: equal element by element
        exact = (XI, W1I, W2I)
        f_int, _, rep = lowered(RELU_MLP, exact, mode="on", form=form)
        assert rep["rewritten"] == 2, rep
        f_int_off, _, _ = lowered(RELU_MLP, exact, mode="off")
        got, off_int = np.asarray(f_int(*exact)), np.asarray(f_int_off(*exact))
        assert np.array_equal(got, off_int) and np.abs(got).max() > 10, k
        relu = lambda h: jax.numpy.maximum(h, 0.0)  # noqa: E731
        assert np.array_equal(got, jax_reference(relu, exact))


def timed_by_form(plain, alt, budget_s, agree):
    """Stand-in timings by what the timed program holds: the ring slower than the plain
    program, 2 chunks faster, 4 chunks faster still."""
    hlo = alt.exe.hlo_text()
    if "collective-permute" in hlo:
        return 1e-3, 1.5e-3
    pieces = max(count(hlo, "all-gather"), count(hlo, "reduce-scatter"))
    return 1e-3, {2: 0.9e-3, 4: 0.7e-3}[pieces]


def case_auto_times_each_form_and_takes_the_best():
    calls = []

    def fake(plain, alt, budget_s, agree):
        calls.append((plain.exe.hlo_text(), alt.exe.hlo_text()))
        return timed_by_form(plain, alt, budget_s, agree)

    saved = candidate_timing.time_pair
    candidate_timing.forget()
    candidate_timing.time_pair = fake
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o700)
        purejit.config.update("cache_dir", d)
        try:
            f, low, rep = lowered()
            # the MLP is one timing unit (its two candidates joined through the tanh): the
            # ring, chunked2 and chunked4, each against the plain unit, every time with
            # both members in the same form (never a ring beside a chunked collective)
            assert len(calls) == 3, len(calls)
            for k, (plain, alt) in zip((0, 2, 4), calls):
                assert count(plain, "all-gather") == count(plain, "reduce-scatter") == 1
                assert "tanh" in plain and "tanh" in alt
                assert count(alt, "all-gather") == count(alt, "reduce-scatter") == k, alt
                assert ("collective-permute" in alt) == (k == 0)
            assert [c["form"] for c in rep["candidates"]] == ["chunked4", "chunked4"], rep
            unit = "all_gather->dot + dot->reduce_scatter with tanh"
            assert f"chose chunked4 (timed, as {unit})" in rep["timed"], rep["timed"]
            hlo = low.compile().as_text()
            assert count(hlo, "all-gather") == 4 and count(hlo, "reduce-scatter") == 4
            f_off, _, _ = lowered(mode="off")
            off = np.asarray(f_off(X, W1, W2))
            np.testing.assert_allclose(np.asarray(f(X, W1, W2)), off, rtol=2e-6, atol=2e-6)
            # one decision for the unit over its forms: one file
            files = [n for n in os.listdir(d) if n.startswith("collective-matmul-")]
            assert len(files) == 1, files
            candidate_timing.forget()
            _, _, again = lowered()
            assert len(calls) == 3 and [c["form"] for c in again["candidates"]] == [
                "chunked4",
                "chunked4",
            ]
            assert {c["timed"] for c in again["candidates"]} == {"loaded"}, again
            # the ring alone (auto_forms): its own decision (timed now), none of the others'
            candidate_timing.forget()
            _, _, ring_only = lowered(auto_forms=("ring",))
            assert len(calls) == 4 and ring_only["rewritten"] == 0, ring_only
            assert {c["timed"] for c in ring_only["candidates"]} == {"timed"}, ring_only
        finally:
            purejit.config.update("cache_dir", None)
            candidate_timing.time_pair = saved
            candidate_timing.forget()


def case_auto_with_real_timing_keeps_the_numbers():
    candidate_timing.forget()
    f, low, rep = lowered()
    for c in rep["candidates"]:
        assert set(c["forms"]) == {"ring", "chunked2", "chunked4"}, c
        for form, d in c["forms"].items():
            assert d["ring"] == (d["ring_s"] < 0.98 * d["plain_s"]), (form, d)
        assert c["rewritten"] == any(d["ring"] for d in c["forms"].values()), c
    print(rep["timed"], f"{low.timings['calibration']:.2f} s")
    np.testing.assert_allclose(np.asarray(f(X, W1, W2)), jax_reference(), rtol=1e-5, atol=1e-5)
    candidate_timing.forget()


def case_pipelined_gelu_layer_with_a_bias():
    """The traced GELU MLP (a bias per column, scalars behind shard_map's typing marks) is
    proved a layer; its numbers are JAX's."""
    b1 = RNG.standard_normal((F,)).astype(np.float32)

    def gelu_body(nn, ag, rs, x, w1, b, w2):
        h = nn.gelu(ag(x, "i", tiled=True) @ w1 + b)
        return rs(h @ w2, "i", scatter_dimension=0, tiled=True)

    specs = (P("i"), P(None, "i"), P("i"), P("i"))
    layer = purejit.shard_map(
        lambda *a: gelu_body(purejit.nn, lax.all_gather, lax.psum_scatter, *a),
        mesh=MESH, in_specs=specs, out_specs=P("i"),
    )  # fmt: skip
    args = (X, W1, b1, W2)
    f, low, rep = lowered(layer, args, mode="on", form="pipelined4")
    assert [c["form"] for c in rep["candidates"]] == ["pipelined4"] * 2, rep
    got = np.asarray(f(*args))
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:N]), ("i",))
    js = jax.sharding.PartitionSpec
    jlayer = jax.jit(jax.shard_map(
        lambda *a: gelu_body(jax.nn, jax.lax.all_gather, jax.lax.psum_scatter, *a),
        mesh=jmesh, in_specs=(js("i"), js(None, "i"), js("i"), js("i")), out_specs=js("i"),
    ))  # fmt: skip
    np.testing.assert_allclose(got, np.asarray(jlayer(*args)), rtol=1e-5, atol=1e-5)


def case_compiler_option_forces_each_form():
    f_off, _, _ = lowered(mode="off")
    off = np.asarray(f_off(X, W1, W2))
    for value, gathers, permutes in (("chunked2", 2, False), ("chunked4", 4, False),
                                     ("pipelined4", 4, False), ("ring", 0, True)):  # fmt: skip
        f = purejit.jit(MLP, compiler_options={"collective_matmul": value})
        low = f.lower(X, W1, W2)
        rep = next(r for r in low.records if r.name == "collective_matmul").report
        assert rep["rewritten"] == 2, (value, rep)
        hlo = low.compile().as_text()
        assert count(hlo, "all-gather") == gathers, (value, hlo)
        assert ("collective-permute" in hlo) == permutes, value
        np.testing.assert_allclose(np.asarray(f(X, W1, W2)), off, rtol=2e-6, atol=2e-6)
    low = purejit.jit(MLP).lower(X, W1, W2)
    assert not any(r.name == "collective_matmul" for r in low.records)


def case_auto_refuses_a_pipelined_form_before_timing():
    """auto does not time pipelinedK (forced only): naming it in auto_forms raises before any
    timing program is built or run."""
    calls = []
    saved = candidate_timing.time_pair
    candidate_timing.forget()
    candidate_timing.time_pair = lambda *a: calls.append(a) or (1e-3, 1e-3)
    try:
        lowered(auto_forms=("ring", "pipelined2"))
    except ValueError as e:
        assert "pipelined" in str(e), e
    else:
        raise AssertionError("auto_forms with pipelined2 was accepted")
    finally:
        candidate_timing.time_pair = saved
        candidate_timing.forget()
    assert not calls, calls
