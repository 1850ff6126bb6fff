"""Meshes, shardings, device_put and automatically partitioned jit on 8 CPU devices."""

import numpy as np

import purejit
import purejit.numpy as jnp
from purejit.backend import spmd as backend_spmd
from purejit.sharding import Mesh, NamedSharding, make_mesh, sharding_of
from purejit.sharding import PartitionSpec as P

DEVS = purejit.devices()
MESH = Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))
RNG = np.random.default_rng(1)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def raises(exc, fn, *needles):
    try:
        fn()
    except exc as e:
        for n in needles:
            assert n in str(e), (n, str(e))
        return e
    raise AssertionError(f"expected {exc.__name__}")


def case_mesh_and_specs():
    assert MESH.shape == {"x": 4, "y": 2} and MESH.size == 8
    assert MESH.device_ids == tuple(d.id for d in DEVS)
    assert make_mesh((2, 4), ("a", "b")).mesh_shape == (2, 4)
    raises(ValueError, lambda: Mesh(np.array(DEVS).reshape(4, 2), ("x", "x")), "repeated")
    raises(ValueError, lambda: Mesh(np.array(DEVS), ("x", "y")), "2 axis names")
    assert P("x", None, ("x", "y")).dims(4) == (("x",), (), ("x", "y"), ())
    raises(ValueError, lambda: NamedSharding(MESH, P("z")), "'z'")
    ns = NamedSharding(MESH, P(("y", "x")))
    assert ns.shard_shape((16, 3)) == (2, 3)
    starts = sorted(idx[0].start for idx in ns.devices_indices_map((16, 3)).values())
    assert starts == list(range(0, 16, 2))
    # device (x=1, y=0) is partition 2; with ("y", "x") it is shard 0 * 4 + 1 = 1
    assert ns.devices_indices_map((16, 3))[MESH.devices[1, 0]][0] == slice(2, 4)
    assert NamedSharding(MESH, P("x")) == NamedSharding(MESH, P("x", None))
    assert hash(NamedSharding(MESH, P("x"))) == hash(NamedSharding(MESH, P("x", None)))


def case_device_put_places_each_shard():
    x = rand(8, 6)
    ns = NamedSharding(MESH, P("x", "y"))
    a = purejit.device_put(x, ns)
    close(a, x)
    assert sharding_of(a) == ns and a.sharding == ns
    want = ns.devices_indices_map(x.shape)
    for shard in a.addressable_shards:
        close(shard.data, x[want[shard.device]])
        assert shard.data.shape == (2, 3)
    replicated = purejit.device_put(x, NamedSharding(MESH, P()))
    assert all(s.data.shape == (8, 6) for s in replicated.buffer.addressable_shards)
    raises(Exception, lambda: purejit.device_put(rand(6, 6), ns), "does not divide")
    single = purejit.device_put(x, DEVS[3])
    assert single.device == DEVS[3] and sharding_of(single) is None


def case_jit_in_out_shardings_partitions_automatically():
    a, b = rand(8, 16), rand(16, 8)
    f = purejit.jit(
        lambda a, b: jnp.tanh(a @ b),
        in_shardings=(NamedSharding(MESH, P("x", None)), NamedSharding(MESH, P(None, "y"))),
        out_shardings=NamedSharding(MESH, P(None, ("x", "y"))),
    )
    low = f.lower(a, b)
    assert '#sdy.sharding<@mesh, [{"x"}, {}]>' in low.as_text()
    out = f(a, b)
    close(out, np.tanh(a @ b))
    assert sharding_of(out) == NamedSharding(MESH, P(None, ("x", "y")))
    assert {s.data.shape for s in out.buffer.addressable_shards} == {(8, 1)}
    hlo = low.compile().as_text()
    assert "all-gather" in hlo or "collective-permute" in hlo, hlo[-2000:]


def case_partitioner_inserts_all_reduce_for_sharded_contraction():
    a, b = rand(4, 32), rand(32, 5)
    f = purejit.jit(
        lambda a, b: a @ b,
        in_shardings=(NamedSharding(MESH, P(None, ("x", "y"))), NamedSharding(MESH, P(("x", "y")))),
    )
    out = f(a, b)
    close(out, a @ b, 1e-4)
    assert sharding_of(out) == NamedSharding(MESH, P())
    assert "all-reduce" in f.lower(a, b).compile().as_text()


def case_arguments_are_resharded_to_fit():
    x = rand(8, 4)
    f = purejit.jit(
        lambda v: v * 3,
        in_shardings=NamedSharding(MESH, P("x")),
        out_shardings=NamedSharding(MESH, P("x")),
    )
    for given in (
        x,
        purejit.device_put(x, NamedSharding(MESH, P(None, "y"))),
        purejit.device_put(x, DEVS[5]),
    ):
        close(f(given), x * 3)
    same = purejit.device_put(x, NamedSharding(MESH, P("x")))
    assert (
        backend_spmd.place(
            same.buffer, NamedSharding(MESH, P("x")), purejit.ir.TensorType((8, 4), np.float32)
        )
        is same.buffer
    )


def case_shard_shapes_checked_before_execute():
    x = rand(8, 4)
    f = purejit.jit(lambda v: v + 1, in_shardings=NamedSharding(MESH, P("x")))
    compiled = f.lower(x).compile()
    exe = compiled.exe
    assert isinstance(exe, backend_spmd.SpmdExecutable)
    wrong = purejit.device_put(x, NamedSharding(MESH, P(None, "y"))).buffer
    raises(
        backend_spmd.ShardingMismatchError,
        lambda: exe._validate(0, wrong, False),
        "shard on device",
    )
    raises(
        backend_spmd.ShardingMismatchError,
        lambda: exe.execute([purejit.device_put(rand(8, 5), NamedSharding(MESH, P("x"))).buffer]),
        "f32[8,4]",
    )
    close(exe.execute([purejit.device_put(x, NamedSharding(MESH, P("x"))).buffer])[0], x + 1)


def case_shard_map_inside_sharded_jit():
    x = rand(8, 8)
    inner = purejit.shard_map(
        lambda b: purejit.lax.psum(b, "x"), mesh=MESH, in_specs=P("x", "y"), out_specs=P(None, "y")
    )
    f = purejit.jit(
        lambda v: inner(v * 2) + 1,
        in_shardings=NamedSharding(MESH, P()),
        out_shardings=NamedSharding(MESH, P()),
    )
    want = (
        np.concatenate(
            [(2 * x).reshape(4, 2, 8).sum(0)[:, :4], (2 * x).reshape(4, 2, 8).sum(0)[:, 4:]], axis=1
        )
        + 1
    )
    close(f(x), want, 1e-5)


def case_memory_stats_available():
    x = rand(64, 64)
    f = purejit.jit(lambda v: jnp.sum(v @ v, axis=0), in_shardings=NamedSharding(MESH, P("x")))
    stats = f.lower(x).compile().memory_analysis()
    assert stats.argument_size_in_bytes == 16 * 64 * 4, stats


def case_plain_jit_runs_where_arguments_are_committed():
    # JAX's rule, on the C++ dispatch and on the Python one alike: a program without
    # shardings runs on the device its committed arguments are on, else on the default one
    from purejit.compiler import cpp_dispatch

    x = rand(8)
    f = purejit.jit(lambda v, w: v * 2 + w)
    g = purejit.jit(lambda v, w, n: v * n + w, static_argnums=2)  # Python dispatch only
    assert f._cpp is not None or not cpp_dispatch.available()
    assert g._cpp is None
    d3, d0 = purejit.device_put(x, DEVS[3]), purejit.device_put(x, DEVS[0])
    sharded = purejit.device_put(x, NamedSharding(MESH, P("x")))
    for v, want in [(d3, 3), (d0, 0), (sharded, 0), (d3, 3), (sharded, 0), (d0, 0)]:
        for _ in range(3):
            for out in (f(v, jnp.ones(8)), g(v, jnp.ones(8), 2)):
                assert {d.id for d in out.devices()} == {want}, (out.devices(), want)
                close(out, x * 2 + 1)
    assert f.stats.compiles == 2 and g.stats.compiles == 2
    d5 = purejit.device_put(x, DEVS[5])
    raises(ValueError, lambda: f(d3, d5), "committed to", "device_put")
