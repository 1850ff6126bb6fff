"""The collective-matmul pass compiled on 8 CPU devices: same numbers, less temp memory."""

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit import lax
from purejit.passes import Pipeline
from purejit.passes.collective_matmul import CollectiveMatmul
from purejit.passes.pipeline import default_passes
from purejit.sharding import Mesh
from purejit.sharding import PartitionSpec as P

MESH = Mesh(np.array(purejit.devices()), ("i",))
B, D, F = 512, 1024, 1024
RNG = np.random.default_rng(2)
X = RNG.standard_normal((B, D)).astype(np.float32)
W1 = (RNG.standard_normal((D, F)) / 16).astype(np.float32)
W2 = (RNG.standard_normal((F, D)) / 32).astype(np.float32)


def body(x, w1, w2):  # sequence-parallel Megatron MLP
    h = jnp.tanh(lax.all_gather(x, "i", tiled=True) @ w1)
    return lax.psum_scatter(h @ w2, "i", scatter_dimension=0, tiled=True)


MLP = purejit.shard_map(body, mesh=MESH, in_specs=(P("i"), P(None, "i"), P("i")), out_specs=P("i"))


def compiled(mode, unroll=False):
    cm = CollectiveMatmul(mode=mode, unroll=unroll)
    f = purejit.jit(MLP, passes=Pipeline([cm, *default_passes()]))
    low = f.lower(X, W1, W2)
    return f, low, low.compile()


def case_pass_on_off_same_results_less_temp_memory():
    want = np.tanh(X @ W1) @ W2
    f_off, _, c_off = compiled("off")
    f_on, _, c_on = compiled("on")
    off, on = np.asarray(f_off(X, W1, W2)), np.asarray(f_on(X, W1, W2))
    np.testing.assert_allclose(off, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(on, off, rtol=1e-5, atol=1e-5)
    hlo_off, hlo_on = c_off.as_text(), c_on.as_text()
    assert "all-gather(" in hlo_off and "reduce-scatter(" in hlo_off
    assert "all-gather(" not in hlo_on and "reduce-scatter(" not in hlo_on
    assert hlo_on.count("collective-permute(") >= 2 and "while(" in hlo_on
    t_off = c_off.memory_analysis().temp_size_in_bytes
    t_on = c_on.memory_analysis().temp_size_in_bytes
    # off: the gathered x [B, D] and the unscattered product [B, D] (2 MiB); on: one ring
    # step's blocks and the [B, F/8] hidden activations
    assert t_on < 0.5 * t_off, (t_on, t_off)
    print(f"temp_size_in_bytes: pass off {t_off}, on {t_on}")


def case_unrolled_rings_same_results():
    f, _, comp = compiled("on", unroll=True)
    hlo = comp.as_text()
    assert hlo.count("collective-permute(") >= 2 * 7 and "all-gather(" not in hlo
    np.testing.assert_allclose(np.asarray(f(X, W1, W2)), np.tanh(X @ W1) @ W2, rtol=1e-4, atol=1e-4)


def case_auto_mode_reports_its_estimates():
    f = purejit.jit(MLP, passes=Pipeline([CollectiveMatmul(), *default_passes()]))
    low = f.lower(X, W1, W2)
    rec = next(r for r in low.records if r.name == "collective_matmul")
    kinds = sorted(c["kind"] for c in rec.report["candidates"])
    assert kinds == ["all_gather->dot", "dot->reduce_scatter"], rec.report
    np.testing.assert_allclose(np.asarray(f(X, W1, W2)), np.tanh(X @ W1) @ W2, rtol=1e-4, atol=1e-4)
