"""make_array_from_callback / _single_device_arrays / _process_local_data, live_arrays and
copy_to_host_async on 8 CPU devices, against JAX's."""

import jax
import numpy as np

import purejit
from purejit.sharding import Mesh, NamedSharding, SingleDeviceSharding
from purejit.sharding import PartitionSpec as P

DEVS = purejit.devices()
MESH = Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))
JMESH = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))
GLOBAL = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)


def _shards(arr) -> dict:
    return {s.device.id: np.asarray(s.data) for s in arr.addressable_shards}


def _same_layout(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    g, w = _shards(got), _shards(want)
    assert g.keys() == w.keys()
    for k in g:
        np.testing.assert_array_equal(g[k], w[k])


def case_from_callback():
    for spec in (P("x", "y"), P(None, "y"), P(("x", "y")), P()):
        calls = []

        def cb(idx):
            calls.append(idx)
            return GLOBAL[idx]

        got = purejit.make_array_from_callback(GLOBAL.shape, NamedSharding(MESH, spec), cb)
        want = jax.make_array_from_callback(
            GLOBAL.shape,
            jax.sharding.NamedSharding(JMESH, jax.sharding.PartitionSpec(*spec)),
            lambda i: GLOBAL[i],
        )
        _same_layout(got, want)
        assert got.sharding == NamedSharding(MESH, spec) or spec == P()
    one = purejit.make_array_from_callback(
        (3,), SingleDeviceSharding(DEVS[5]), lambda i: np.arange(3)[i], dtype=np.float32
    )
    assert one.devices() == {DEVS[5]} and one.dtype == np.float32


def case_from_single_device_arrays_and_process_local_data():
    ns = NamedSharding(MESH, P("x", "y"))
    parts = [
        purejit.device_put(GLOBAL[idx], d) for d, idx in ns.devices_indices_map((8, 6)).items()
    ]
    got = purejit.make_array_from_single_device_arrays((8, 6), ns, parts)
    np.testing.assert_array_equal(np.asarray(got), GLOBAL)
    assert {s.device.id for s in got.addressable_shards} == {d.id for d in DEVS}
    assert float(purejit.jit(lambda a: a.sum())(got)) == GLOBAL.sum()
    try:
        purejit.make_array_from_single_device_arrays((8, 6), ns, parts[:3])
    except ValueError as e:
        assert "3 arrays" in str(e)
    else:
        raise AssertionError("expected ValueError")
    local = purejit.make_array_from_process_local_data(ns, GLOBAL)
    _same_layout(local, got)


def case_live_arrays_and_copy_to_host_async():
    x = purejit.device_put(np.ones((5, 7), np.float32), DEVS[2])
    y = purejit.copy_to_host_async({"a": x, "b": 3})
    assert y["a"] is x
    live = purejit.live_arrays()
    assert all(isinstance(a, purejit.Array) for a in live)
    assert any(a.shape == (5, 7) and a.devices() == {DEVS[2]} for a in live)
    assert len(live) >= len(jax.live_arrays()) - 1
