"""shard_map and every collective on 8 forced CPU devices, against NumPy (run by _harness)."""

import functools

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit import lax
from purejit.ir import interpret
from purejit.sharding import Mesh, NamedSharding
from purejit.sharding import PartitionSpec as P

DEVS = purejit.devices()
assert len(DEVS) == 8, DEVS
MESH1 = Mesh(np.array(DEVS), ("i",))
MESH2 = Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))
RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-50, 50, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def smap(mesh, in_specs, out_specs, check_vma=True):
    return functools.partial(
        purejit.shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_vma
    )


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def case_all_reduces_one_axis():
    x = rand(16, 3)
    blocks = x.reshape(8, 2, 3)

    @purejit.jit
    @smap(MESH1, P("i"), (P(), P(), P(), P()))
    def f(b):
        return lax.psum(b, "i"), lax.pmean(b, "i"), lax.pmax(b, "i"), lax.pmin(b, "i")

    s, m, hi, lo = f(x)
    close(s, blocks.sum(0))
    close(m, blocks.mean(0))
    close(hi, blocks.max(0))
    close(lo, blocks.min(0))
    xi = rand(16, 3, dtype=np.int32)
    si = purejit.jit(smap(MESH1, P("i"), P())(lambda b: lax.psum(b, "i")))(xi)
    assert np.asarray(si).dtype == np.int32
    np.testing.assert_array_equal(np.asarray(si), xi.reshape(8, 2, 3).sum(0))


def case_all_reduce_two_axes_and_pytree():
    x = rand(8, 6)
    blocks = x.reshape(4, 2, 2, 3).transpose(0, 2, 1, 3)  # [x, y, 2, 3]

    @purejit.jit
    @smap(MESH2, P("x", "y"), {"both": P(), "over_x": P(None, "y"), "over_y": P("x")})
    def f(b):
        return {
            "both": lax.psum(b, ("x", "y")),
            "over_x": lax.psum(b, "x"),
            "over_y": lax.psum({"v": b}, "y")["v"],
        }

    out = f(x)
    close(out["both"], blocks.sum((0, 1)))
    close(out["over_x"], np.concatenate(list(blocks.sum(0)), axis=1))
    close(out["over_y"], np.concatenate(list(blocks.sum(1)), axis=0))


def case_all_gather_tiled_untiled_axis():
    x = rand(8, 4)

    @purejit.jit
    # all_gather's result is typed varying (as in JAX), so replicated out_specs need this
    @smap(MESH2, P("x", "y"), (P(None, "y"), P(None, None, "y"), P("x")), check_vma=False)
    def f(b):  # b: [2, 2]
        return (
            lax.all_gather(b, "x", tiled=True),
            lax.all_gather(b, "x"),
            lax.all_gather(b, "y", axis=1, tiled=True),
        )

    tiled, stacked, by_y = f(x)
    close(tiled, x)
    assert stacked.shape == (4, 2, 4)
    close(stacked, x.reshape(4, 2, 4))
    close(by_y, x)


def case_psum_scatter_tiled_untiled():
    x = rand(8 * 16, 5)
    blocks = x.reshape(8, 16, 5)
    total = blocks.sum(0)

    @purejit.jit
    @smap(MESH1, P("i"), P("i"))
    def tiled(b):
        return lax.psum_scatter(b, "i", scatter_dimension=0, tiled=True)

    close(tiled(x), total, 1e-4)
    y = rand(8 * 8, 5)

    @purejit.jit
    @smap(MESH1, P("i"), P("i"))
    def untiled(b):  # b: [8, 5] -> [5] per device; out [8 * 5]
        return lax.psum_scatter(b, "i", scatter_dimension=0)

    close(untiled(y), y.reshape(8, 8, 5).sum(0).reshape(-1), 1e-4)


def case_ppermute_ring_and_partial():
    x = rand(8, 3)
    ring = [(k, (k + 1) % 8) for k in range(8)]
    part = [(0, 3), (5, 1)]

    @purejit.jit
    @smap(MESH1, P("i"), (P("i"), P("i")))
    def f(b):
        return lax.ppermute(b, "i", ring), lax.ppermute(b, "i", part)

    r, p = f(x)
    close(r, np.roll(x, 1, axis=0))
    want = np.zeros_like(x)
    want[3], want[1] = x[0], x[5]
    close(p, want)


def case_ppermute_over_one_axis_of_two():
    x = rand(4, 2, 3)

    @purejit.jit
    @smap(MESH2, P("x", "y"), P("x", "y"))
    def f(b):
        return lax.ppermute(b, "x", [(k, (k + 1) % 4) for k in range(4)])

    close(f(x), np.roll(x, 1, axis=0))


def case_all_to_all_tiled_untiled():
    x = rand(8, 8 * 8)

    @purejit.jit
    @smap(MESH1, P("i"), P(None, "i"))
    def tiled(b):  # [1, 64] -> split dim 1 in 8, concat dim 0 -> [8, 8]
        return lax.all_to_all(b, "i", 1, 0, tiled=True)

    close(tiled(x), x)
    y = rand(8 * 8, 3)

    @purejit.jit
    @smap(MESH1, P("i"), P("i"))
    def untiled(b):  # [8, 3]: piece k goes to device k, stacked on a new axis 1 -> [3, 8]
        return lax.all_to_all(b, "i", 0, 1)

    blocks = y.reshape(8, 8, 3)  # [src, piece, 3]
    want = np.stack([blocks[:, k, :].T for k in range(8)])  # device k: [3, src]
    close(untiled(y), want.reshape(8 * 3, 8))


def case_axis_index():
    @purejit.jit
    @smap(MESH2, (), (P(("x", "y")), P(("x", "y")), P(("x", "y"))))
    def f():
        return (
            lax.axis_index("x")[None],
            lax.axis_index("y")[None],
            lax.axis_index(("y", "x"))[None],
        )

    ix, iy, iyx = (np.asarray(a) for a in f())
    assert ix.dtype == np.int32
    np.testing.assert_array_equal(ix, np.repeat(np.arange(4), 2))
    np.testing.assert_array_equal(iy, np.tile(np.arange(2), 4))
    np.testing.assert_array_equal(iyx, np.tile(np.arange(2), 4) * 4 + np.repeat(np.arange(4), 2))


def _mixed(b, w):
    h = jnp.tanh(b @ w)
    s = lax.psum(h, "x")
    g = lax.all_gather(h, "y", axis=1, tiled=True)
    p = lax.ppermute(h, "x", [(k, (k + 1) % 4) for k in range(4)])
    a = lax.all_to_all(g, "x", 0, 0, tiled=True)
    return s + p * lax.axis_index("x").astype(jnp.float32), g, a


def case_compiled_matches_interpreter():
    x, w = rand(16, 6), rand(6, 4)
    specs = (P("x"), P(None, "y")), (P("x", "y"), P("x"), P("x"))
    f = purejit.jit(smap(MESH2, *specs, check_vma=False)(_mixed))
    low = f.lower(x, w)
    want = interpret(low.fn, x, w)
    got = f(x, w)
    for g, r in zip(got, want):
        close(g, r, 1e-4)
    text = low.as_text()
    for needle in (
        "sdy.mesh @mesh",
        "sdy.manual_computation",
        "stablehlo.all_reduce",
        "stablehlo.all_gather",
        "stablehlo.collective_permute",
        "stablehlo.all_to_all",
        "stablehlo.partition_id",
        "mhlo.num_partitions = 8",
    ):
        assert needle in text, needle


def case_same_as_jax_shard_map():
    import jax
    from jax.sharding import Mesh as JMesh
    from jax.sharding import PartitionSpec as JP

    x, w = rand(16, 6), rand(6, 4)
    specs = (P("x"), P(None, "y")), (P("x", "y"), P("x"), P("x"))
    ours = purejit.jit(smap(MESH2, *specs, check_vma=False)(_mixed))
    jmesh = JMesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))

    def jbody(b, w):
        h = jax.numpy.tanh(b @ w)
        s = jax.lax.psum(h, "x")
        g = jax.lax.all_gather(h, "y", axis=1, tiled=True)
        p = jax.lax.ppermute(h, "x", [(k, (k + 1) % 4) for k in range(4)])
        a = jax.lax.all_to_all(g, "x", 0, 0, tiled=True)
        return s + p * jax.lax.axis_index("x").astype(jax.numpy.float32), g, a

    theirs = jax.jit(
        jax.shard_map(
            jbody,
            mesh=jmesh,
            in_specs=(JP("x"), JP(None, "y")),
            out_specs=(JP("x", "y"), JP("x"), JP("x")),
            check_vma=False,
        )
    )
    for a, b in zip(ours(x, w), theirs(x, w)):
        close(a, b, 1e-4)


def case_eager_call_and_sharded_results():
    x = rand(8, 4)
    f = smap(MESH1, P("i"), P("i"))(lambda b: b * 2 + lax.axis_index("i").astype(jnp.float32))
    out = f(x)  # outside jit: compiled as a one-op program
    assert isinstance(out, purejit.Array)
    close(out, x * 2 + np.arange(8, dtype=np.float32)[:, None])
    sh = purejit.sharding.sharding_of(out)
    assert sh == NamedSharding(MESH1, P("i")), sh
    with purejit.disable_jit():
        close(f(x), out)
    shards = {s.device.id: np.asarray(s.data) for s in out.buffer.addressable_shards}
    for d, dev in enumerate(MESH1.devices.flat):
        close(shards[dev.id], np.asarray(out)[d : d + 1])


def case_closure_is_replicated():
    x, c = rand(8, 4), rand(4)

    @purejit.jit
    def f(x, c):
        scale = jnp.sum(c)
        return smap(MESH1, P("i"), P("i"))(lambda b: b * scale + c)(x)

    close(f(x, c), x * c.sum() + c, 1e-5)


def case_shape_errors_name_the_problem():
    bad = smap(MESH1, P("i"), P("i"))(lambda b: b)
    try:
        purejit.jit(bad).lower(np.zeros((6, 2), np.float32))
    except purejit.PurejitTypeError as e:
        assert "does not divide" in str(e) and "6" in str(e), e
    else:
        raise AssertionError("a 6-row array split 8 ways must fail")
    try:
        purejit.jit(smap(MESH1, P("i"), P("i"))(lambda b: lax.psum(b, "nope"))).lower(
            np.zeros((8, 2), np.float32)
        )
    except NameError as e:
        assert "nope" in str(e), e
    else:
        raise AssertionError("an unknown axis name must fail")


def case_many_pipelined_calls_complete():
    """200 unsynchronised calls, each feeding the next: a matmul, then a ring of ppermutes.
    Without purejit's pacing of SPMD calls on CPU this could hang in XLA's rendezvous (see
    purejit/backend/spmd.py)."""
    w = (np.eye(64) * 0.5).astype(np.float32)

    def step(b, w):
        y = jnp.tanh(b @ w)
        for _ in range(3):
            y = lax.ppermute(y, "i", [(k, (k + 1) % 8) for k in range(8)]) + y
        return y / 8

    f = purejit.jit(smap(MESH1, (P("i"), P()), P("i"))(step))
    x = purejit.device_put(rand(8 * 16, 64), NamedSharding(MESH1, P("i")))
    want = np.asarray(x)
    for _ in range(200):
        x = f(x, w)
    for _ in range(200):
        y = np.tanh(want @ w)
        for _ in range(3):
            y = np.roll(y.reshape(8, 16, 64), 1, axis=0).reshape(128, 64) + y
        want = y / 8
    close(x, want, 1e-4)
