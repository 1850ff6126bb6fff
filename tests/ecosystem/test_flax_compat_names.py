"""The JAX names Flax reads at import, as drop-in mode gives them: `jax.experimental.layout`'s
`Layout`/`Format` values, `jax._src.dtypes`' `ExtendedDType`/`DType`, and `jnp.einsum`'s
`_dot_general` (Flax's attention contracts with its own dot_general)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import purejit
import purejit.compat
import purejit.numpy as pnp
from purejit import dtypes
from purejit.compat._layout import Format, Layout


def test_layout_and_format_are_values():
    import purejit.sharding as sh

    s = sh.SingleDeviceSharding(purejit.devices()[0])
    with purejit.compat.dropin():
        from jax.experimental.layout import Format as F
        from jax.experimental.layout import Layout as L
    assert (F, L) == (Format, Layout)
    lay = Layout((1, 0))
    assert lay == Layout([1, 0]) and hash(lay) == hash(Layout((1, 0)))
    assert lay.update(major_to_minor=(0, 1)) == Layout((0, 1)) != lay
    f = Format(lay, s)
    assert (f.layout, f.sharding) == (lay, s) and f == Format(Layout((1, 0)), s)
    assert Format().layout is None and repr(Format(Layout.AUTO)).startswith("Format(layout=AUTO")
    with pytest.raises(ValueError, match="concrete sharding"):
        Format(lay)
    with pytest.raises(TypeError, match="layout must be"):
        Format("row-major", s)
    with pytest.raises(TypeError, match="sharding must be"):
        Format(None, "cpu")
    with pytest.raises(ValueError, match="rank 2"):
        lay.check_compatible_aval((3,))


@dataclasses.dataclass(frozen=True)
class _Meta(dtypes.ExtendedDType):
    # as Flax's fp8 meta dtype: a physical float dtype and a scalar type under `extended`
    float_dtype: dtypes.DType
    type: type = dtypes.extended
    name = "meta32"


def test_extended_dtype_base():
    meta = _Meta(np.dtype(np.float32))
    assert isinstance(meta, dtypes.ExtendedDType) and dtypes.DType is np.dtype
    # a typed key's dtype is extended, as in JAX
    assert isinstance(purejit.random.key(0).dtype, dtypes.ExtendedDType)
    assert not isinstance(np.dtype(np.float32), dtypes.ExtendedDType)
    with pytest.raises(TypeError):
        dtypes.ExtendedDType()  # abstract: `type` is not given
    # purejit has no arrays of user-defined extended dtypes: making one says so
    with pytest.raises(NotImplementedError, match="_Meta.*user-defined extended dtypes"):
        purejit.lax.convert_element_type(pnp.ones(3), meta)


def test_einsum_contracts_with_the_given_dot_general():
    calls = []

    def dot(lhs, rhs, dims, precision=None, preferred_element_type=None):
        calls.append((lhs.shape, rhs.shape, dims, precision))
        return purejit.lax.dot_general(lhs, rhs, dims, precision, preferred_element_type)

    q = pnp.arange(24.0).reshape(2, 3, 4)
    k = pnp.arange(24.0).reshape(2, 3, 4) / 7
    got = pnp.einsum("bqd,bkd->bqk", q, k, _dot_general=dot, precision="highest")
    want = np.einsum("bqd,bkd->bqk", np.asarray(q), np.asarray(k))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    assert calls == [((2, 3, 4), (2, 3, 4), (((2,), (2,)), ((0,), (0,))), "highest")]


def test_no_value_is_a_ref():
    from purejit.compat import _state

    with purejit.compat.dropin():
        from jax._src.state.types import AbstractRef
        from jax.experimental import MutableArray

    assert (AbstractRef, MutableArray) == (_state.AbstractRef, _state.Ref)
    x = pnp.ones(3)
    assert not isinstance(x, AbstractRef | MutableArray)
    with pytest.raises(NotImplementedError, match="no mutable array refs"):
        MutableArray(x)


def test_hijax_declarations_load_and_binding_says_what_is_missing():
    from purejit.compat import _avals

    with purejit.compat.dropin():
        from jax.experimental import hijax as hjx

    class Box:
        def __init__(self, v):
            self.v = v

    class AbstractBox(hjx.MutableHiType):
        get = hjx.aval_method(lambda self: self.v)

    class Effect:
        pass

    class Get(hjx.HiPrimitive):
        def abstract_eval(self, box):
            return box

    # what a library does at import works: subclassing, marking, registering
    hjx.register_hitype(Box, lambda b: AbstractBox())
    hjx.control_flow_allowed_effects.add_type(Effect)
    assert hjx.control_flow_allowed_effects.contains(Effect())
    assert isinstance(_avals.typeof(Box(1.0)), AbstractBox)
    assert AbstractBox.get.fun(Box(2.0)) == 2.0 and AbstractBox.has_qdd
    get_p = Get("get_box")
    assert repr(get_p) == "get_box"
    # purejit's IR carries arrays only: binding one names it
    with pytest.raises(NotImplementedError, match="hijax primitive 'get_box'.*no hijax"):
        get_p.bind(Box(1.0))
    _avals._hitypes.pop(Box)


def test_typeof_a_typed_key_and_issubdtype():
    from purejit.compat import _avals

    keys = purejit.random.split(purejit.random.key(0), 3)
    aval = _avals.typeof(keys)
    assert aval.shape == (3,) and aval.dtype == keys.dtype and str(aval) == "key<fry>[3]"
    assert aval.to_tangent_aval().dtype == dtypes.float0
    assert pnp.issubdtype(keys.dtype, dtypes.prng_key)
    assert not pnp.issubdtype(pnp.ones(2).dtype, dtypes.prng_key)


def test_out_sharding_none_is_accepted_else_named():
    key = purejit.random.key(0)
    with purejit.compat.dropin():
        import jax

        got = jax.random.bernoulli(key, 0.5, (4,), out_sharding=None)
        np.testing.assert_array_equal(
            np.asarray(got), np.asarray(purejit.random.bernoulli(key, 0.5, (4,)))
        )
        with pytest.raises(NotImplementedError, match="random.normal: out_sharding="):
            jax.random.normal(key, (2,), out_sharding="x")
        # one device (nnx.Dropout passes jax.typeof(x).sharding of an eager array): the
        # result, put there
        one = jax.sharding.SingleDeviceSharding(purejit.devices()[0])
        placed = jax.random.bernoulli(key, 0.5, (4,), out_sharding=one)
        assert placed.sharding == one
        np.testing.assert_array_equal(np.asarray(placed), np.asarray(got))
        assert jax.numpy.dot(pnp.ones(3), pnp.ones(3), out_sharding=None) == 3.0
        with pytest.raises(NotImplementedError, match="lax.reshape: out_sharding="):
            jax.lax.reshape(pnp.ones(4), (2, 2), out_sharding="x")
        assert jax.lax.reshape(pnp.ones(4), (2, 2), out_sharding=None).shape == (2, 2)
    x = pnp.ones((2, 2))
    dims = (((1,), (0,)), ((), ()))
    assert purejit.lax.dot_general(x, x, dims, out_sharding=None).shape == (2, 2)
    with pytest.raises(NotImplementedError, match="dot_general: out_sharding="):
        purejit.lax.dot_general(x, x, dims, out_sharding="x")


def test_core_shaped_array_takes_jax_keywords_and_covers_purejit_avals():
    from purejit.compat import _views
    from purejit.tracing import ShapedArray as PjShapedArray

    with purejit.compat.dropin():
        import jax
        from jax import core

    a = core.ShapedArray((2, 3), np.float32, sharding=None)
    assert type(a) is PjShapedArray and a == PjShapedArray((2, 3), np.dtype(np.float32))
    s = purejit.sharding.SingleDeviceSharding(purejit.devices()[0])
    b = core.ShapedArray(shape=(4,), dtype=np.int32, weak_type=True, sharding=s)
    assert b.sharding is s and b.weak_type and isinstance(b, core.ShapedArray)
    aval = purejit.typeof(pnp.ones(2))
    assert isinstance(aval, core.ShapedArray) and isinstance(aval, core.AbstractValue)
    assert not isinstance(np.ones(2), core.ShapedArray | core.AbstractValue)
    with pytest.raises(NotImplementedError, match="memory_space"):
        core.ShapedArray((2,), np.float32, memory_space="host")
    # a library's hijax type subclasses AbstractValue without taking in purejit's avals
    with purejit.compat.dropin():
        from jax.experimental import hijax as hjx

    class Mine(hjx.MutableHiType):
        pass

    assert isinstance(Mine(), core.AbstractValue) and not isinstance(aval, Mine)
    # jax.version is the installed JAX's
    real = _views.real_jax()
    assert jax.version.__version_info__ == real.version.__version_info__
    assert jax.version.__version__ == real.__version__


def test_result_type_of_shape_dtype_structs():
    # Equinox's checkpointed while_loop compares result types of ShapeDtypeStructs, as JAX
    # allows: a struct stands for an array of its dtype (and weak type)
    f32 = purejit.ShapeDtypeStruct((2,), np.float32)
    i8 = purejit.ShapeDtypeStruct((), np.int8)
    assert pnp.result_type(f32) == np.float32 and pnp.result_type(i8, f32) == np.float32
    assert pnp.result_type(i8, 1) == np.int8
    weak_f32 = purejit.ShapeDtypeStruct((), np.float32, weak_type=True)
    # strong, as in JAX (jnp.result_type(weak f32 struct, float16) is float32 there)
    assert pnp.result_type(weak_f32, np.float16) == np.float32


@pytest.mark.parametrize("jit", [False, True])
def test_cond_traces_true_fun_first_as_jax(jit):
    # a branch's Python side effects happen in JAX's order (Flax's nn.cond draws each
    # branch's parameters from a shared rng counter while tracing)
    import jax

    got = {}
    for name, lib in (("jax", jax), ("purejit", purejit)):
        seen = []

        def f(x, lib=lib, seen=seen):
            return lib.lax.cond(
                x > 0, lambda x: seen.append("true") or x, lambda x: seen.append("false") or -x, x
            )

        (lib.jit(f) if jit else f)(np.float32(1.0))
        got[name] = seen
    assert got["purejit"] == got["jax"] == ["true", "false"]


def test_mesh_utils_create_device_mesh_lays_out_devices_as_jax():
    with purejit.compat.dropin():
        from jax.experimental import mesh_utils

    import jax.experimental.mesh_utils as real

    n = len(purejit.devices())
    got = mesh_utils.create_device_mesh((n, 1))
    want = real.create_device_mesh((n, 1))
    assert got.shape == want.shape == (n, 1)
    assert [d.id for d in got.flat] == [d.id for d in want.flat]
    assert mesh_utils.create_device_mesh((1,), purejit.devices()[:1])[0] is purejit.devices()[0]
    with pytest.raises(ValueError, match="must equal the product"):
        mesh_utils.create_device_mesh((n + 1,))
