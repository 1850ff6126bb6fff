"""purejit.pmap on 8 forced CPU devices against jax.pmap (run by _harness)."""

import functools

import jax
import numpy as np

import purejit
import purejit.numpy as jnp
from purejit import lax

assert len(purejit.devices()) == 8
RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def case_psum_normalise_matches_jax():
    x = rand(8, 5)
    f = purejit.pmap(lambda v: v / lax.psum(v, "i"), axis_name="i")
    g = jax.pmap(lambda v: v / jax.lax.psum(v, "i"), axis_name="i")
    out = f(x)
    same(out, g(x))
    assert out.shape == (8, 5) and len(out.sharding.device_set) == 8


def case_in_axes_out_axes_static_and_kwargs():
    y = rand(3, 8)

    def body(a, b, k, *, c):
        return {"m": a * b * k + c, "mean": lax.pmean(a.sum(), "j")}

    def jbody(a, b, k, *, c):
        return {"m": a * b * k + c, "mean": jax.lax.pmean(a.sum(), "j")}

    opts = dict(
        axis_name="j",
        in_axes=(1, None, None),
        out_axes={"m": 1, "mean": None},
        static_broadcasted_argnums=2,
    )
    c = rand(8)
    got = purejit.pmap(body, **opts)(y, 2.0, 3, c=c)
    want = jax.pmap(jbody, **opts)(y, 2.0, 3, c=c)
    assert got["m"].shape == (3, 8) and got["mean"].shape == ()
    same(got["m"], want["m"])
    same(got["mean"], want["mean"])


def case_fewer_devices_axis_index_and_axis_size():
    f = purejit.pmap(lambda x: x * lax.axis_index("k"), axis_name="k")
    same(f(np.ones((4, 2), np.float32)), np.arange(4, dtype=np.float32)[:, None] * np.ones((4, 2)))
    g = purejit.pmap(lambda s: lax.axis_index("k") + s, axis_name="k", in_axes=None, axis_size=8)
    same(g(1), np.arange(1, 9))
    devs = purejit.devices()[4:6]
    h = purejit.pmap(lambda x: x + 1, devices=devs)
    out = h(np.zeros((2, 3), np.float32))
    assert {d.id for d in out.sharding.device_set} == {d.id for d in devs}


def case_grad_inside_and_pmap_of_a_training_step():
    w = rand(8, 4)
    x = rand(8, 16, 4)

    def step(w, x):
        g = purejit.grad(lambda w: jnp.mean((x @ w) ** 2))(w)
        return w - 0.1 * lax.pmean(g, "b")

    def jstep(w, x):
        g = jax.grad(lambda w: jax.numpy.mean((x @ w) ** 2))(w)
        return w - 0.1 * jax.lax.pmean(g, "b")

    np.testing.assert_allclose(
        purejit.pmap(step, "b")(w, x), jax.pmap(jstep, "b")(w, x), rtol=1e-6, atol=1e-6
    )


def case_errors_are_clear():
    for call, words in [
        (lambda: purejit.pmap(lambda x: x)(np.zeros((9, 2))), "requires 9 logical devices"),
        (lambda: purejit.pmap(lambda x: x, backend="tpu")(np.zeros((2,))), "backend='tpu'"),
        (lambda: purejit.pmap(lambda x, y: x)(np.zeros(2), np.zeros(3)), "inconsistent sizes"),
        (lambda: purejit.pmap(lambda x: x, in_axes=None)(1.0), "axis_size must be specified"),
    ]:
        try:
            call()
        except (ValueError, NotImplementedError) as e:
            assert words in str(e), (words, str(e))
        else:
            raise AssertionError(f"no error for {words}")


def case_donation_and_recompile_on_new_static():
    calls = []

    @functools.partial(purejit.pmap, static_broadcasted_argnums=1, donate_argnums=0)
    def f(x, k):
        calls.append(k)
        return x * k

    x = purejit.device_put(np.ones((8, 2), np.float32))
    same(f(np.ones((8, 2), np.float32), 2), 2 * np.ones((8, 2)))
    same(f(np.ones((8, 2), np.float32), 3), 3 * np.ones((8, 2)))
    same(f(np.ones((8, 2), np.float32), 3), 3 * np.ones((8, 2)))
    assert calls == [2, 3], calls
    del x
