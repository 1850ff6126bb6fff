"""lax.rng_bit_generator against jax.lax.rng_bit_generator: the same bits and new state for
THREE_FRY, PHILOX and DEFAULT (PHILOX on CPU), every narrow dtype, odd and even shapes, a
counter that wraps; uint64 bits and uint64[2] keys under x64; per-lane under vmap; no gradient through the bits."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import lax as jlax

import purejit
from purejit import lax as plax

KEYS = [
    np.array([1, 2, 3, 4], np.uint32),
    np.array([0xDEADBEEF, 7, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32),  # the counter wraps
]
SHAPES = [(), (1,), (3,), (4,), (13,), (2, 3), (3, 5), (3, 1, 5), (6, 4, 3)]
ALGORITHMS = ["RNG_THREE_FRY", "RNG_PHILOX"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_bits_and_state_are_jaxs(algorithm):
    alg = getattr(plax.RandomAlgorithm, algorithm)
    # every shape, the dtypes in turn (narrow types are the 32-bit bits truncated)
    cases = [(s, (np.uint32, np.uint8, np.uint16)[i % 3]) for i, s in enumerate(SHAPES)]

    @purejit.jit
    def every_case(keys):  # one program: one compile for the whole table
        return [plax.rng_bit_generator(k, s, d, alg) for k in keys for s, d in cases]

    got = every_case(KEYS)
    want = [
        jlax.rng_bit_generator(jjnp.asarray(k), s, d, getattr(jlax.RandomAlgorithm, algorithm))
        for k in KEYS
        for s, d in cases
    ]
    for (pk, pb), (jk, jb), (s, d) in zip(got, want, cases * len(KEYS)):
        assert np.asarray(pb).dtype == np.dtype(d) and np.asarray(pb).shape == s
        np.testing.assert_array_equal(np.asarray(pb), np.asarray(jb), err_msg=f"{s} {d}")
        np.testing.assert_array_equal(np.asarray(pk), np.asarray(jk), err_msg=f"{s} {d}")


def test_eager_and_default_match_jax():
    if purejit.default_backend() != "cpu":
        pytest.skip("DEFAULT is matched on CPU only (PHILOX)")
    for alg in ("RNG_THREE_FRY", "RNG_DEFAULT"):  # eager: one op at a time
        ek, eb = plax.rng_bit_generator(
            KEYS[1], (5,), np.uint16, getattr(plax.RandomAlgorithm, alg)
        )
        jk, jb = jlax.rng_bit_generator(
            jjnp.asarray(KEYS[1]), (5,), np.uint16, getattr(jlax.RandomAlgorithm, alg)
        )
        np.testing.assert_array_equal(np.asarray(eb), np.asarray(jb))
        np.testing.assert_array_equal(np.asarray(ek), np.asarray(jk))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_uint64_bits_and_keys_under_x64(algorithm):
    cases = [
        (k, s)
        for k in (KEYS[1], np.array([3 << 40 | 7, 2**64 - 1], np.uint64))
        for s in [(3,), (2, 3)]
    ]
    with jax.enable_x64(True), purejit.enable_x64(True):
        alg = getattr(plax.RandomAlgorithm, algorithm)
        got = purejit.jit(
            lambda keys: [
                plax.rng_bit_generator(k, s, np.uint64, alg) for k, (_, s) in zip(keys, cases)
            ]
        )([k for k, _ in cases])
        for (pk, pb), (k, s) in zip(got, cases):
            jk, jb = jlax.rng_bit_generator(
                jjnp.asarray(k), s, np.uint64, getattr(jlax.RandomAlgorithm, algorithm)
            )
            assert np.asarray(pb).dtype == np.uint64 and np.asarray(pk).dtype == k.dtype
            np.testing.assert_array_equal(np.asarray(pb), np.asarray(jb))
            np.testing.assert_array_equal(np.asarray(pk), np.asarray(jk))


def test_vmap_draws_each_lane_from_its_own_key():
    keys = np.stack([KEYS[0], KEYS[1], KEYS[0] + np.uint32(9)])
    alg = plax.RandomAlgorithm.RNG_THREE_FRY
    nk, bits = purejit.vmap(lambda k: plax.rng_bit_generator(k, (2, 3), algorithm=alg))(keys)
    for i, key in enumerate(keys):
        jk, jb = jlax.rng_bit_generator(jjnp.asarray(key), (2, 3), algorithm=alg)
        np.testing.assert_array_equal(np.asarray(bits[i]), np.asarray(jb))
        np.testing.assert_array_equal(np.asarray(nk[i]), np.asarray(jk))


def test_bits_carry_no_gradient():
    def f(x):
        _, bits = plax.rng_bit_generator(KEYS[0], (3,), algorithm=plax.RandomAlgorithm.RNG_PHILOX)
        return (x * bits.astype(np.float32)).sum()

    x = np.ones(3, np.float32)
    _, bits = plax.rng_bit_generator(KEYS[0], (3,), algorithm=plax.RandomAlgorithm.RNG_PHILOX)
    np.testing.assert_array_equal(np.asarray(purejit.grad(f)(x)), np.asarray(bits, np.float32))


def test_default_raises_where_xlas_choice_is_unmatched(monkeypatch):
    from purejit.lax import bit_generator

    monkeypatch.setattr(bit_generator.pjrt, "platform", lambda: "cuda")
    with pytest.raises(
        NotImplementedError, match="RNG_DEFAULT .* 'cuda'.*RNG_THREE_FRY or RNG_PHILOX"
    ):
        plax.rng_bit_generator(KEYS[0], (3,))


def test_bad_arguments_raise_clearly():
    with pytest.raises(TypeError, match="unsupported dtype int32"):
        plax.rng_bit_generator(KEYS[0], (3,), np.int32)
    with pytest.raises(TypeError, match=r"key must be uint32\[4\]"):
        plax.rng_bit_generator(np.zeros(2, np.uint32), (3,))
    with pytest.raises(TypeError, match="enable_x64"):
        plax.rng_bit_generator(KEYS[0], (3,), np.uint64)
    assert str(plax.RandomAlgorithm.RNG_PHILOX) == "RNG_PHILOX"
    assert int(plax.RandomAlgorithm.RNG_THREE_FRY) == int(jax.lax.RandomAlgorithm.RNG_THREE_FRY)
