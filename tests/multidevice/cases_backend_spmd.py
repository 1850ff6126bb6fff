"""Collective lowerings that only a multi-device run reaches, on 8 forced CPU devices (run
by _harness): an empty ppermute gives zeros."""

import functools

import numpy as np

import purejit
from purejit import lax
from purejit.sharding import Mesh
from purejit.sharding import PartitionSpec as P

DEVS = purejit.devices()
assert len(DEVS) == 8, DEVS
MESH1 = Mesh(np.array(DEVS), ("i",))
MESH2 = Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))


def smap(mesh, in_specs, out_specs):
    return functools.partial(purejit.shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs)


def case_ppermute_empty_permutation_gives_zeros():
    x = np.arange(24, dtype=np.float32).reshape(8, 3) + 1

    @purejit.jit
    @smap(MESH1, P("i"), (P("i"), P("i")))
    def f(b):
        return lax.ppermute(b, "i", []), b + lax.ppermute(b, "i", [])

    zeros, same = f(x)
    np.testing.assert_array_equal(np.asarray(zeros), np.zeros_like(x))
    np.testing.assert_array_equal(np.asarray(same), x)


def case_ppermute_empty_permutation_over_one_axis_of_two_int():
    x = np.arange(8 * 6, dtype=np.int32).reshape(8, 6)

    @purejit.jit
    @smap(MESH2, P("x", "y"), P("x", "y"))
    def f(b):
        return lax.ppermute(b, "x", []) - b

    np.testing.assert_array_equal(np.asarray(f(x)), -x)
