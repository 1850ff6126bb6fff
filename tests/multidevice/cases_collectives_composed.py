"""pshuffle, pswapaxes, pbroadcast, psend/precv and ragged_all_to_all on 8 CPU devices,
against JAX where JAX runs them on CPU (pshuffle, pswapaxes) and against their definitions
in NumPy where it does not (JAX runs the others only on GPU/TPU)."""

import functools

import jax
import numpy as np

import purejit
from purejit import lax
from purejit.sharding import Mesh
from purejit.sharding import PartitionSpec as P

DEVS = purejit.devices()
MESH = Mesh(np.array(DEVS), ("i",))
JMESH = jax.sharding.Mesh(np.array(jax.devices()), ("i",))
RNG = np.random.default_rng(0)


def both(body, x, in_specs=P("i"), out_specs=P("i"), check_vma=False):
    got = purejit.jit(purejit.shard_map(functools.partial(body, lax), mesh=MESH,
                                        in_specs=in_specs, out_specs=out_specs,
                                        check_vma=check_vma))(x)  # fmt: skip
    js = jax.sharding.PartitionSpec
    want = jax.jit(jax.shard_map(functools.partial(body, jax.lax), mesh=JMESH,
                                 in_specs=js(*in_specs), out_specs=js(*out_specs),
                                 check_vma=check_vma))(x)  # fmt: skip
    return np.asarray(got), np.asarray(want)


def case_pshuffle_and_pswapaxes_match_jax():
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    perm = [3, 0, 7, 1, 2, 6, 4, 5]
    got, want = both(lambda L, v: L.pshuffle(v, "i", perm), x)
    np.testing.assert_array_equal(got, want)
    got, want = both(lambda L, v: L.pswapaxes(v, "i", 1), x)
    np.testing.assert_array_equal(got, want)


def case_pbroadcast_is_the_masked_psum():
    x = RNG.standard_normal((16, 3)).astype(np.float32)

    def body(L, v):
        if L is lax:
            return L.pbroadcast(v, "i", 5)
        masked = jax.numpy.where(L.axis_index("i") == 5, v, 0)  # JAX's stated equivalent
        return L.psum(masked, "i")

    got, want = both(body, x)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, np.tile(x[10:12], (8, 1)))


def case_psend_precv_is_ppermute():
    x = RNG.standard_normal((16, 3)).astype(np.float32)
    perm = [(0, 1), (1, 2), (2, 3), (6, 0)]

    def body(v):
        tok = lax.psend(v, "i", perm)
        tok = lax.after_all(lax.create_token(), tok)
        return lax.precv(tok, v, "i", perm)

    f = purejit.jit(purejit.shard_map(body, mesh=MESH, in_specs=P("i"), out_specs=P("i"),
                                      check_vma=False))  # fmt: skip
    want = np.zeros_like(x).reshape(8, 2, 3)
    for s, t in perm:
        want[t] = x.reshape(8, 2, 3)[s]
    np.testing.assert_array_equal(np.asarray(f(x)), want.reshape(16, 3))
    try:
        lax.precv(lax.create_token(), x, "i", perm)
    except ValueError as e:
        assert "carries no psend" in str(e)
    else:
        raise AssertionError("expected ValueError")


def case_ragged_all_to_all_follows_its_definition():
    n, m, r = 8, 6, 10
    data = RNG.standard_normal((n, m, 2)).astype(np.float32)
    send = RNG.integers(0, 2, (n, n)).astype(np.int32)  # send[s, d]: rows s sends to d
    in_off = np.zeros((n, n), np.int32)
    for s in range(n):
        in_off[s] = np.concatenate([[0], np.cumsum(send[s])[:-1]])
    recv = send.T.copy()  # recv[d, s] = send[s, d]
    # receiver d places source s's rows at offset sum_{s' < s} recv[d, s']
    place = np.zeros((n, n), np.int32)
    for d in range(n):
        place[d] = np.concatenate([[0], np.cumsum(recv[d])[:-1]])
    out_off = place.T.copy()  # out_off[s, d]: where s's rows land on d

    def body(v, io, ss, oo, rs):
        out = lax.ragged_all_to_all(v[0], np.full((r, 2), -1, np.float32), io[0], ss[0],
                                    oo[0], rs[0], axis_name="i")  # fmt: skip
        return out[None]

    f = purejit.jit(purejit.shard_map(body, mesh=MESH, in_specs=(P("i"),) * 5,
                                      out_specs=P("i"), check_vma=False))  # fmt: skip
    got = np.asarray(f(data, in_off, send, out_off, recv))
    for d in range(n):
        want = np.full((r, 2), -1, np.float32)
        for s in range(n):
            rows = data[s, in_off[s, d] : in_off[s, d] + send[s, d]]
            want[place[d, s] : place[d, s] + len(rows)] = rows
        np.testing.assert_array_equal(got[d], want)
