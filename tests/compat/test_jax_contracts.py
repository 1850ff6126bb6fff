"""The contracts JAX libraries rely on (issue #34): jit's full signature, array methods,
dtypes / typing / flatten_util / sharding / platform names, and the bugs found on the way
(static_argnames=None, np.array copies, iscomplexobj of scalar types, complex ordering)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import dtypes, flatten_util, platform, sharding


def test_jit_accepts_jax_keywords():
    f = purejit.jit(lambda x, n: x * n, static_argnums=None, static_argnames=None,
                    donate_argnums=None, donate_argnames=None, keep_unused=True, inline=True,
                    device=purejit.devices()[0], backend=platform.default_backend())  # fmt: skip
    np.testing.assert_array_equal(np.asarray(f(jnp.arange(3.0), 2.0)), [0.0, 2.0, 4.0])
    with pytest.raises(NotImplementedError, match="abstracted_axes"):
        purejit.jit(lambda x: x, abstracted_axes=("n",))
    with pytest.raises(NotImplementedError, match="backend='tpu'"):
        purejit.jit(lambda x: x, backend="tpu")


def test_array_methods():
    x = purejit.jit(lambda v: v + 0)(jnp.asarray([3.0, 0.0, 1.5]))
    assert f"{x.sum():.3f}" == "4.500" and f"{x}" == str(np.asarray(x))
    assert round(x[2]).tolist() == 2.0 and x.itemsize == 4 and x.nbytes == 12
    np.testing.assert_array_equal(np.asarray(x.take(jnp.asarray([2, 0]))), [1.5, 3.0])
    np.testing.assert_array_equal(np.asarray(x.repeat(2)), np.repeat(np.asarray(x), 2))
    np.testing.assert_array_equal(np.asarray(x.nonzero()[0]), [0, 2])
    np.testing.assert_array_equal(np.asarray(x.compress(x > 1)), [3.0, 1.5])

    def traced(v):
        assert v.itemsize == 4 and v.nbytes == 12
        return v.take(jnp.asarray([1])).repeat(2) + round(v[0])

    np.testing.assert_array_equal(np.asarray(purejit.jit(traced)(x)), [3.0, 3.0])


def test_numpy_copies_are_writable():
    x = purejit.jit(lambda v: v + 1)(jnp.arange(3.0))
    copy = np.array(x, copy=True)
    copy[0] = 7.0  # a copy is the caller's to change
    assert np.array(x).flags.writeable and not np.asarray(x).flags.writeable
    assert float(x[0]) == 1.0


def test_arrays_never_share_memory_with_numpy_writers():
    """As JAX's: an Array made from a NumPy array is a copy (the caller changing theirs leaves
    it be), and np.asarray of an eager Array is a read-only view (writing raises)."""
    n = np.arange(3.0, dtype=np.float32)
    made = [jnp.asarray(n), jnp.array(n), jnp.asarray(n, dtype=np.float32)]
    n[0] = 7.0
    for x in made:
        assert np.asarray(x).tolist() == [0.0, 1.0, 2.0]
    x = jnp.arange(3.0)
    view = np.asarray(x)
    assert not view.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 9.0
    assert np.asarray(x).tolist() == [0.0, 1.0, 2.0]
    np.array(x)[0] = 9.0  # a copy: the caller's to change
    assert float(x[0]) == 0.0


def test_iscomplexobj_of_scalar_types():
    assert jnp.iscomplexobj(jnp.complex64) and not jnp.iscomplexobj(jnp.float32)


def test_complex_ordering_is_lexicographic():
    a = np.array([1 + 2j, 1 + 1j, 5j, 2 + 0j], np.complex64)
    b = np.array([5j, 1 + 1j, 1 + 2j, 2 + 1j], np.complex64)
    expect = {  # JAX: by real part, ties by imaginary part
        "less": [False, False, True, True],
        "less_equal": [False, True, True, True],
        "greater": [True, False, False, False],
        "greater_equal": [True, True, False, False],
    }
    for name, want in expect.items():
        f = getattr(jnp, name)
        assert np.asarray(f(a, b)).tolist() == want, name
        assert np.asarray(purejit.jit(f)(a, b)).tolist() == want, name


def test_dtypes_names():
    key = purejit.random.key(0)
    assert dtypes.issubdtype(key.dtype, dtypes.prng_key)
    assert dtypes.issubdtype(key.dtype, dtypes.extended)
    assert not dtypes.issubdtype(np.float32, dtypes.prng_key)
    assert not dtypes.issubdtype(key.dtype, np.floating)
    assert dtypes.issubdtype(ml_dtypes.bfloat16, np.floating)
    assert dtypes.issubdtype(np.int8, np.signedinteger)
    assert dtypes.canonicalize_dtype(np.float64) == np.float32
    assert jnp.asarray(key) is key


def test_typing_array_value_covers_tracers_and_keys():
    from purejit.typing import ArrayValue

    seen = []
    purejit.jit(lambda v: seen.append(isinstance(v, ArrayValue)) or v)(jnp.ones(2))
    assert seen == [True] and isinstance(jnp.ones(2), ArrayValue)
    assert isinstance(purejit.random.key(1), ArrayValue) and not isinstance(1.0, ArrayValue)


def test_ravel_pytree_round_trip():
    tree = {"a": jnp.arange(3, dtype=jnp.int32), "b": (jnp.ones((2, 2)),)}
    flat, unravel = flatten_util.ravel_pytree(tree)
    assert flat.shape == (7,) and flat.dtype == np.float32
    back = unravel(flat)
    assert back["a"].dtype == np.int32 and back["b"][0].shape == (2, 2)
    np.testing.assert_array_equal(np.asarray(back["a"]), [0, 1, 2])
    with pytest.raises(ValueError, match="shape"):
        unravel(jnp.ones(3))
    empty, unravel_empty = flatten_util.ravel_pytree({})
    assert empty.shape == (0,) and unravel_empty(empty) == {}


def test_zeros_like_a_shape_spec():
    z = jnp.zeros_like(purejit.ShapeDtypeStruct((2, 3), np.int32))
    assert z.shape == (2, 3) and z.dtype == np.int32 and not np.asarray(z).any()
    assert purejit.typeof(jnp.ones(2)).sharding is None


def test_asarray_of_large_int_with_dtype():
    assert int(jnp.array(2**32 - 1, jnp.uint32)) == 2**32 - 1
    with pytest.raises(OverflowError):
        jnp.array(2**32, jnp.uint32)


def test_platform_and_sharding_names():
    dev = purejit.devices()[0]
    assert purejit.default_backend() == "cpu" or purejit.default_backend() in ("gpu", "tpu")
    assert purejit.device_count() == len(purejit.devices()) and purejit.process_index() == 0
    assert isinstance(dev, purejit.Device) and dev in purejit.local_devices()
    s = sharding.SingleDeviceSharding(dev)
    assert isinstance(s, sharding.Sharding) and s.device_set == {dev}
    mesh = sharding.Mesh(np.array([dev]), ("x",))
    assert isinstance(sharding.NamedSharding(mesh, purejit.P()), sharding.Sharding)
    y = purejit.device_put({"a": np.ones(2)}, s)
    assert type(y["a"]) is purejit.Array
    m = sharding.AbstractMesh((2, 4), ("a", "b"))
    assert m.shape == {"a": 2, "b": 4} and m.size == 8
    # JAX's mesh properties Flax reads (flax.core.meta.get_global_mesh, spmd.shard_value)
    assert not m.empty and m.are_all_axes_auto and not m.are_all_axes_explicit
    assert sharding.get_abstract_mesh().empty
    assert sharding.AbstractMesh((2,), ("a",), (sharding.AxisType.Explicit,)).are_all_axes_explicit
    # make_mesh takes JAX's axis_types (keyword or third): Auto only
    auto = (sharding.AxisType.Auto,)
    assert purejit.make_mesh((1,), ("x",), axis_types=auto).axis_names == ("x",)
    assert purejit.make_mesh((1,), ("x",), auto).axis_names == ("x",)
    with pytest.raises(NotImplementedError, match="AxisType.Auto"):
        purejit.make_mesh((1,), ("x",), axis_types=(sharding.AxisType.Explicit,))
    assert purejit.lax.broadcast_shapes((2, 1), (1, 3)) == (2, 3)
    with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
        purejit.lax.broadcast_shapes((2,), (3,))
    with purejit.named_scope("block"):
        out = purejit.named_call(lambda v: v * 2, name="double")(jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0])


def test_sparse_plus_and_sigmoid():
    x = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0], np.float32)
    want_plus = np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4))
    np.testing.assert_allclose(np.asarray(purejit.nn.sparse_plus(x)), want_plus, rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(purejit.nn.sparse_sigmoid(x)), 0.5 * np.clip(x + 1, 0, 2), rtol=1e-6
    )


def test_lowered_compiler_ir():
    lowered = purejit.jit(lambda v: v * v).lower(np.float32(3.0))
    assert "multiply" in lowered.compiler_ir(dialect="hlo").as_hlo_text()
    assert "stablehlo.multiply" in str(lowered.compiler_ir())


def test_pytree_aux_data_need_not_be_hashable():
    from purejit import tree_util

    class Scaled:  # JAX's "Common gotchas" example: aux data is a dict
        def __init__(self, x, meta):
            self.x, self.meta = x, meta

    tree_util.register_pytree_node(
        Scaled, lambda s: ((s.x,), s.meta), lambda meta, children: Scaled(children[0], meta)
    )
    f = purejit.jit(lambda s: s.x * s.meta["k"])
    x = jnp.ones(2)
    assert np.asarray(f(Scaled(x, {"k": 3.0}))).tolist() == [3.0, 3.0]
    assert np.asarray(f(Scaled(x, {"k": 4.0}))).tolist() == [4.0, 4.0]  # new aux: recompiles
    assert f.stats.compiles == 2
    assert tree_util.KeyPath is tuple


def test_ensure_compile_time_eval():
    def f(x):
        with purejit.ensure_compile_time_eval():
            n = jnp.arange(4).sum()  # concrete operands: computed now, readable by int()
            y = x * 2.0  # a tracer operand: still traced
        assert type(n) is purejit.Array
        return y + int(n)

    np.testing.assert_array_equal(np.asarray(purejit.jit(f)(jnp.ones(2))), [8.0, 8.0])
