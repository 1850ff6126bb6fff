"""with_sharding_constraint, reshard, the mesh in context (set_mesh, get_mesh,
get_abstract_mesh, use_abstract_mesh), auto_axes / explicit_axes and shard_map without a
mesh argument, on 8 CPU devices, against JAX."""

import jax
import numpy as np

import purejit
from purejit import lax
from purejit.sharding import AbstractMesh, Mesh, NamedSharding
from purejit.sharding import PartitionSpec as P

DEVS = purejit.devices()
MESH = Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))
JMESH = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))
JP = jax.sharding.PartitionSpec
X = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)


def _shard_ids(a) -> dict:
    return {s.device.id: (s.index, np.asarray(s.data)) for s in a.addressable_shards}


def case_constraint_partitions_the_program_as_jax():
    def f(lx, ns):
        def g(x):
            y = lx.with_sharding_constraint(x * 2, ns)
            return (y + 1).sum(axis=1), y

        return g

    got = purejit.jit(f(lax, NamedSharding(MESH, P("x", "y"))))(X)
    want = jax.jit(f(jax.lax, jax.sharding.NamedSharding(JMESH, JP("x", "y"))))(X)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    # the constrained result is laid out as asked (the partitioner keeps it there)
    assert got[1].sharding == NamedSharding(MESH, P("x", "y")), got[1].sharding
    ir = purejit.jit(f(lax, NamedSharding(MESH, P("x", "y")))).lower(X).as_text()
    assert "sdy.sharding_constraint" in ir and "sdy.mesh @mesh" in ir


def case_constraint_under_grad_and_vmap():
    ns = NamedSharding(MESH, P("x"))

    def loss(x):
        return (lax.with_sharding_constraint(x, ns) ** 2).sum()

    np.testing.assert_allclose(np.asarray(purejit.jit(purejit.grad(loss))(X)), 2 * X)
    v = purejit.jit(
        purejit.vmap(lambda r: lax.with_sharding_constraint(r * 3, NamedSharding(MESH, P("y"))))
    )
    np.testing.assert_array_equal(np.asarray(v(X)), X * 3)


def case_eager_constraint_and_reshard_place_arrays():
    a = lax.with_sharding_constraint(X, NamedSharding(MESH, P(("x", "y"))))
    assert a.sharding == NamedSharding(MESH, P(("x", "y")))
    np.testing.assert_array_equal(np.asarray(a), X)
    b = purejit.reshard({"k": X}, NamedSharding(MESH, P(None, "y")))["k"]
    assert b.sharding == NamedSharding(MESH, P(None, "y"))


def case_mesh_in_context():
    assert purejit.sharding.get_mesh().empty
    assert purejit.sharding.get_abstract_mesh() == AbstractMesh((), ())
    try:
        purejit.device_put(X, P("x"))
    except ValueError as e:
        assert "mesh in context" in str(e)
    else:
        raise AssertionError("expected ValueError")
    with purejit.sharding.set_mesh(MESH) as m:
        assert m is MESH and purejit.sharding.get_mesh() is MESH
        assert purejit.sharding.get_abstract_mesh() == AbstractMesh((4, 2), ("x", "y"))
        a = purejit.device_put(X, P("x"))
        assert a.sharding == NamedSharding(MESH, P("x"))
        y = purejit.jit(lambda x: lax.with_sharding_constraint(x, P(None, "y")) * 2)(X)
        np.testing.assert_array_equal(np.asarray(y), X * 2)
        sm = purejit.shard_map(lambda v: lax.psum(v, "x"), in_specs=P("x"), out_specs=P(),
                               check_vma=False)  # fmt: skip
        np.testing.assert_array_equal(np.asarray(sm(X)), X.reshape(4, 2, 6).sum(0))
        with purejit.sharding.use_abstract_mesh(AbstractMesh((2,), ("z",))):
            assert purejit.sharding.get_abstract_mesh() == AbstractMesh((2,), ("z",))
        assert purejit.sharding.get_abstract_mesh() == AbstractMesh((4, 2), ("x", "y"))
    assert purejit.sharding.get_mesh().empty
    purejit.sharding.set_mesh(MESH)  # the global form
    assert purejit.sharding.get_mesh() is MESH
    purejit.sharding.set_mesh(None)
    assert purejit.sharding.get_mesh().empty


def case_auto_and_explicit_axes():
    ns = NamedSharding(MESH, P("x", "y"))
    f = purejit.sharding.auto_axes(lambda x: x * 2, axes=("x", "y"), out_sharding=ns)
    out = purejit.jit(f)(X)
    np.testing.assert_array_equal(np.asarray(out), X * 2)
    assert out.sharding == ns
    g = purejit.sharding.explicit_axes(lambda x: x + 1, axes=("x",),
                                       in_sharding=NamedSharding(MESH, P("x")))  # fmt: skip
    np.testing.assert_array_equal(np.asarray(purejit.jit(g)(X)), X + 1)
    one = purejit.sharding.make_single_device_sharding(DEVS[3])
    assert purejit.device_put(X, one).devices() == {DEVS[3]}


def case_abstract_mesh_sharding_and_equivalence():
    """A NamedSharding over an AbstractMesh (Flax builds one from get_abstract_mesh) takes
    the mesh in context; is_equivalent_to compares placements, as JAX's."""
    am = AbstractMesh((4, 2), ("x", "y"))
    with purejit.sharding.set_mesh(MESH):
        a = lax.with_sharding_constraint(X, NamedSharding(am, P("x")))
        assert a.sharding == NamedSharding(MESH, P("x"))
        np.testing.assert_array_equal(np.asarray(a), X)
    try:
        lax.with_sharding_constraint(X, NamedSharding(am, P("x")))
    except ValueError as e:
        assert "mesh of those axes in context" in str(e)
    else:
        raise AssertionError("expected ValueError")
    jm = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))
    for s1, s2 in [(P("x"), P("x", None)), (P("x"), P(("x", "y"))), (P(), P(None, "y")),
                   (P("y"), P(None, "y"))]:  # fmt: skip
        want = jax.sharding.NamedSharding(jm, JP(*s1)).is_equivalent_to(
            jax.sharding.NamedSharding(jm, JP(*s2)), 2
        )
        got = NamedSharding(MESH, s1).is_equivalent_to(NamedSharding(MESH, s2), 2)
        assert got == want, (s1, s2, got, want)
    one = Mesh(np.array(DEVS[:1]).reshape(1, 1), ("x", "y"))
    single = purejit.sharding.make_single_device_sharding(DEVS[0])
    assert NamedSharding(one, P("x", "y")).is_equivalent_to(single, 2)
    assert single.is_equivalent_to(NamedSharding(one, P()), 2)
    assert not NamedSharding(MESH, P()).is_equivalent_to(single, 2)
