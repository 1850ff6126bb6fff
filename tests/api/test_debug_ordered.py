"""`ordered=True` callbacks across control flow, against JAX: a call before a `cond`,
`switch`, `scan`, `while_loop`, `fori_loop` or `map` runs before the calls of its body, one
after it runs after them, and consecutive jitted calls keep their order; the same under
`grad`, `vmap` and outside jit. The order token is threaded through the bodies as an extra
operand / loop carry, and the passes keep it."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as pnp


def _programs(debug, lax, jnp, log):
    """Programs for either library; each ordered callback appends (tag, values) to log."""

    def p(tag, *v):
        def record(*a):
            log.append((tag, *(float(np.asarray(x).ravel()[0]) for x in a)))

        debug.callback(record, *v, ordered=True)

    def scan(x):
        p("before", x)

        def body(c, xi):
            p("body", c, xi)
            return c + xi, c

        c, _ = lax.scan(body, x, jnp.arange(3.0))
        p("after", x)  # no data dependence on the loop: only the token orders it
        return c

    def cond(x):
        p("before", x)
        y = lax.cond(
            x > 1.5,
            lambda v: (p("true", v), v + 1)[1],
            lambda v: (p("false", v), v - 1)[1],
            x,
        )
        p("after", x)
        return y

    def while_(x):
        p("before", x)

        def cf(c):
            p("cond", c)
            return c < 3

        def bf(c):
            p("body", c)
            return c + 1

        y = lax.while_loop(cf, bf, 0)  # a constant start: XLA knows the trip count
        z = lax.while_loop(lambda c: c < x + 2, bf, x)
        p("after", x)
        return y + z

    def nested(x):
        p("n0", x)

        def body(c, xi):
            branches = [
                lambda v: (p("b0", v), v)[1],
                lambda v: (p("b1", v), v + 1)[1],
                lambda v: (p("b2", v), v * 2)[1],
            ]
            c = lax.switch(xi.astype(jnp.int32) % 3, branches, c)
            c = lax.fori_loop(0, 2, lambda i, v: (p("fori", v, i), v + 1)[1], c)
            return c, None

        c, _ = lax.scan(body, x, jnp.arange(4.0))
        ys = lax.map(lambda v: (p("map", v), v * 3)[1], jnp.arange(2.0) + c)
        p("n1", x)
        return ys

    def dead_loop(x):
        # nothing uses the loop: its calls still run, in order, before "end"
        lax.scan(lambda c, xi: (p("dead", c, xi), (c + xi, None))[1], x, jnp.arange(2.0))
        p("end", x)
        return x

    return {"scan": scan, "cond": cond, "while": while_, "nested": nested, "dead": dead_loop}


NAMES = ["scan", "cond", "while", "nested", "dead"]


def _logs(name, run_jax, run_pj):
    lj, lp = [], []
    run_jax(_programs(jax.debug, jax.lax, jjnp, lj)[name])
    jax.effects_barrier()
    run_pj(_programs(purejit.debug, purejit.lax, pnp, lp)[name])
    return lj, lp


@pytest.mark.parametrize("name", NAMES)
def test_order_across_control_flow_and_consecutive_calls_matches_jax(name):
    def calls(jit):
        def run(f):
            g = jit(f)
            for x in (1.0, 2.0):  # two consecutive calls of one executable
                g(np.float32(x))

        return run

    lj, lp = _logs(name, calls(jax.jit), calls(purejit.jit))
    assert lj and lp == lj


def test_order_under_grad_vmap_and_eager_matches_jax():
    x = np.float32(1.0)
    lj, lp = _logs(
        "scan", lambda f: jax.jit(jax.grad(f))(x), lambda f: purejit.jit(purejit.grad(f))(x)
    )
    assert lp == lj
    xs = np.arange(2.0, dtype=np.float32)
    lj, lp = _logs("scan", lambda f: jax.vmap(f)(xs), lambda f: purejit.vmap(f)(xs))
    assert lp == lj
    for name in ("cond", "while"):  # outside jit: each op dispatched on its own
        lj, lp = _logs(name, lambda f: f(x), lambda f: f(x))
        assert lp == lj, name


def test_the_token_is_threaded_through_bodies():
    log = []
    fns = _programs(purejit.debug, purejit.lax, pnp, log)
    ir = purejit.jit(fns["scan"]).lower(np.float32(1.0)).ir()
    # the loop carries the body's token (pred[]) beside the user's carry
    assert "num_carry=2" in ir and ir.count("ordered=true") == 3
    ir = purejit.jit(fns["dead"]).lower(np.float32(1.0)).ir()
    assert "scan(" in ir  # DCE keeps a loop whose body has effects, and its token carry
    # unordered callbacks add no token
    f = purejit.jit(
        lambda x: purejit.lax.scan(
            lambda c, xi: (purejit.debug.print("{}", c), (c + xi, None))[1], x, pnp.ones(2)
        )[0]
    )
    assert "num_carry=1" in f.lower(np.float32(1.0)).ir()
