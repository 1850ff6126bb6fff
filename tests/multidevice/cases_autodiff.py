"""Differentiating shard_map on 8 forced CPU devices, against JAX's shard_map in the same
process and against the unsharded program (run by _harness)."""

import jax
import jax.numpy as jjnp
import numpy as np
from jax.sharding import Mesh as JMesh
from jax.sharding import PartitionSpec as JP

import purejit
import purejit.numpy as jnp
from purejit import lax
from purejit.sharding import Mesh
from purejit.sharding import PartitionSpec as P

DEVS = purejit.devices()
assert len(DEVS) == 8, DEVS
MESH1 = Mesh(np.array(DEVS), ("i",))
MESH2 = Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))
JMESH1 = JMesh(np.array(jax.devices()), ("i",))
JMESH2 = JMesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))
RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(a, b, tol=1e-4):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=tol, atol=tol)


def smap(f, mesh, in_specs, out_specs, **kw):
    return purejit.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)


def jsmap(f, mesh, in_specs, out_specs, **kw):
    return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)


def jspec(spec):
    return JP(*spec)


# ---- a small MLP, written once for both libraries ------------------------------------------------


def mlp_loss(np_, params, x, y):
    h = np_.tanh(x @ params["w1"] + params["b1"])
    out = h @ params["w2"]
    return np_.mean((out - y) ** 2)


PARAMS = {"w1": rand(6, 16) * 0.5, "b1": rand(16) * 0.1, "w2": rand(16, 3) * 0.5}
X, Y = rand(32, 6), rand(32, 3)


def case_data_parallel_grad_outside_shard_map():
    """grad of a shard_map'd mean loss (pmean of per-shard means) = the unsharded gradient."""

    def loss(params, x, y):
        return lax.pmean(mlp_loss(jnp, params, x, y), "i")

    def jloss(params, x, y):
        return jax.lax.pmean(mlp_loss(jjnp, params, x, y), "i")

    specs = (P(), P("i"), P("i"))
    ours = purejit.jit(purejit.value_and_grad(smap(loss, MESH1, specs, P())))
    jspecs = (JP(), JP("i"), JP("i"))
    theirs = jax.jit(jax.value_and_grad(jsmap(jloss, JMESH1, jspecs, JP())))
    single = purejit.jit(purejit.value_and_grad(lambda p, x, y: mlp_loss(jnp, p, x, y)))
    v, g = ours(PARAMS, X, Y)
    close((v, g), theirs(PARAMS, X, Y))
    close((v, g), single(PARAMS, X, Y))
    close(g, purejit.grad(smap(loss, MESH1, specs, P()))(PARAMS, X, Y))  # eagerly too


def case_data_parallel_grad_inside_shard_map():
    """grad inside the body: of pvary'd params then pmean of the grads (the mean gradient),
    and of invariant params (JAX psums their cotangent itself, so pmean is then the sum)."""

    def step(params, x, y):
        g_local = purejit.grad(mlp_loss, argnums=1)(jnp, lax.pvary(params, "i"), x, y)
        g_inv = purejit.grad(mlp_loss, argnums=1)(jnp, params, x, y)
        return lax.pmean(g_local, "i"), lax.pmean(g_inv, "i")

    def jstep(params, x, y):
        g_local = jax.grad(mlp_loss, argnums=1)(
            jjnp, jax.lax.pcast(params, "i", to="varying"), x, y
        )
        g_inv = jax.grad(mlp_loss, argnums=1)(jjnp, params, x, y)
        return jax.lax.pmean(g_local, "i"), jax.lax.pmean(g_inv, "i")

    ours = purejit.jit(smap(step, MESH1, (P(), P("i"), P("i")), (P(), P())))
    theirs = jax.jit(jsmap(jstep, JMESH1, (JP(), JP("i"), JP("i")), (JP(), JP())))
    mean_g, summed = ours(PARAMS, X, Y)
    close((mean_g, summed), theirs(PARAMS, X, Y))
    single = purejit.grad(lambda p: mlp_loss(jnp, p, X, Y))(PARAMS)
    close(mean_g, single)
    close(summed, jax.tree_util.tree_map(lambda a: 8 * np.asarray(a), single), 1e-3)


def case_tensor_parallel_mlp_grad():
    """First weight split by columns, second by rows, psum of the output: the gradient of
    the unsharded MLP (inputs replicated)."""
    x, w1, w2 = rand(4, 8), rand(8, 32) * 0.3, rand(32, 8) * 0.3

    def mlp(np_, x, w1, w2):
        return np_.tanh(x @ w1) @ w2

    def body(x, w1, w2):
        return lax.psum(mlp(jnp, x, w1, w2), "i")

    def jbody(x, w1, w2):
        return jax.lax.psum(mlp(jjnp, x, w1, w2), "i")

    specs = (P(), P(None, "i"), P("i", None))
    tp = smap(body, MESH1, specs, P())
    jtp = jsmap(jbody, JMESH1, tuple(map(jspec, specs)), JP())

    def loss(f):
        return lambda x, w1, w2: jnp.sum(jnp.sin(f(x, w1, w2)))

    ours = purejit.jit(purejit.value_and_grad(loss(tp), argnums=(0, 1, 2)))(x, w1, w2)
    theirs = jax.jit(jax.value_and_grad(lambda *a: jjnp.sum(jjnp.sin(jtp(*a))), argnums=(0, 1, 2)))(
        x, w1, w2
    )
    unsharded = purejit.jit(
        purejit.value_and_grad(loss(lambda *a: mlp(jnp, *a)), argnums=(0, 1, 2))
    )(x, w1, w2)
    close(ours, theirs)
    close(ours, unsharded)


# ---- every collective: jvp and vjp against JAX ---------------------------------------------------

# (name, body for (namespace, lax), mesh, in_spec, out_spec, input shape)
COLLECTIVES = [
    ("psum", lambda n, lx: lambda b: lx.psum(n.sin(b), "i"), 1, P("i"), P(), (16, 3)),
    ("psum_invariant", lambda n, lx: lambda b: lx.psum(n.sin(b), "i"), 1, P(), P(), (2, 3)),
    (
        "pmean_2d",
        lambda n, lx: lambda b: lx.pmean(b * b, "x"),
        2,
        P("x", "y"),
        P(None, "y"),
        (8, 4),
    ),
    (
        "all_gather_tiled",
        lambda n, lx: lambda b: lx.all_gather(n.sin(b), "i", tiled=True),
        1,
        P("i"),
        P("i"),
        (16, 3),
    ),
    (
        "all_gather_invariant_in",
        lambda n, lx: lambda b: lx.all_gather(b * b, "x", axis=1),
        2,
        P(None, "y"),
        P("x", None, "y"),
        (3, 4),
    ),
    (
        "psum_scatter",
        lambda n, lx: lambda b: lx.psum_scatter(n.sin(b), "i", scatter_dimension=0, tiled=True),
        1,
        P("i"),
        P("i"),
        (128, 2),
    ),
    (
        "psum_scatter_untiled",
        lambda n, lx: lambda b: lx.psum_scatter(b * b, "y", scatter_dimension=1),
        2,
        P("x"),
        P(("x", "y")),
        (8, 2, 3),
    ),
    (
        "ppermute",
        lambda n, lx: lambda b: lx.ppermute(n.sin(b), "i", [(k, (k + 3) % 8) for k in range(8)]),
        1,
        P("i"),
        P("i"),
        (16, 3),
    ),
    (
        "ppermute_partial_2d",
        lambda n, lx: lambda b: lx.ppermute(b * b, "x", [(0, 1), (2, 0)]),
        2,
        P("x", "y"),
        P("x", "y"),
        (8, 4),
    ),
    (
        "all_to_all",
        lambda n, lx: lambda b: lx.all_to_all(n.sin(b), "i", 0, 1, tiled=True),
        1,
        P("i"),
        P("i"),
        (64, 8),
    ),
    (
        "all_to_all_untiled",
        lambda n, lx: lambda b: lx.all_to_all(b * b, "y", 0, 0),  # JAX's own transpose
        # of an untiled all_to_all with split != concat fails on shapes
        2,
        P("x"),
        P(("x", "y")),
        (8, 3),
    ),
]


def case_collectives_jvp_and_vjp_match_jax():
    failures = []
    for name, make, m, ins, outs, shape in COLLECTIVES:
        mesh, jmesh = (MESH1, JMESH1) if m == 1 else (MESH2, JMESH2)
        f = smap(make(jnp, lax), mesh, ins, outs)
        jf = jsmap(make(jjnp, jax.lax), jmesh, jspec(ins), jspec(outs))
        x, t = rand(*shape), rand(*shape)

        @purejit.jit
        def ours(x, t, ct):
            y, ty = purejit.jvp(f, (x,), (t,))
            _, pull = purejit.vjp(f, x)
            return y, ty, pull(ct)[0]

        @jax.jit
        def theirs(x, t, ct):
            y, ty = jax.jvp(jf, (x,), (t,))
            _, pull = jax.vjp(jf, x)
            return y, ty, pull(ct)[0]

        ct = rand(*jax.eval_shape(jf, x).shape)
        try:
            close(ours(x, t, ct), theirs(x, t, ct))
        except AssertionError as e:
            failures.append(f"{name}: {e}")
    assert not failures, "\n".join(failures)


def case_replicated_value_returned_split():
    """An invariant value returned under a split out_spec is implicitly pvary'd (as in JAX),
    so its cotangent is summed over the devices."""

    def body(w, b):
        return jnp.sin(w) * 2, b * w

    def jbody(w, b):
        return jjnp.sin(w) * 2, b * w

    specs = ((P(), P("i")), (P("i"), P("i")))
    f = smap(body, MESH1, *specs)
    jf = jsmap(jbody, JMESH1, (JP(), JP("i")), (JP("i"), JP("i")))
    w, b = rand(2, 3), rand(16, 3)

    def loss(fn, np_):
        return lambda w, b: np_.sum(fn(w, b)[0] ** 2) + np_.sum(np_.cos(fn(w, b)[1]))

    got = purejit.jit(purejit.value_and_grad(loss(f, jnp), argnums=(0, 1)))(w, b)
    close(got, jax.jit(jax.value_and_grad(loss(jf, jjnp), argnums=(0, 1)))(w, b))


def case_check_vma_false_transposes_as_jax():
    """Without the typing, a psum transposes to a psum and out_specs are trusted; the
    gradients are JAX's (check_vma=False) ones."""

    def body(w, b):
        return lax.psum(jnp.sum(jnp.sin(b * w)), "i"), lax.all_gather(b * w, "i", tiled=True)

    def jbody(w, b):
        return jax.lax.psum(jjnp.sum(jjnp.sin(b * w)), "i"), jax.lax.all_gather(
            b * w, "i", tiled=True
        )

    f = smap(body, MESH1, (P(), P("i")), (P(), P()), check_vma=False)
    jf = jsmap(jbody, JMESH1, (JP(), JP("i")), (JP(), JP()), check_vma=False)
    w, b = rand(3), rand(16, 3)

    def loss(fn, np_):
        return lambda w, b: fn(w, b)[0] + np_.sum(fn(w, b)[1] ** 2)

    ours = purejit.jit(purejit.grad(loss(f, jnp), argnums=(0, 1)))(w, b)
    theirs = jax.jit(jax.grad(loss(jf, jjnp), argnums=(0, 1)))(w, b)
    close(ours, theirs)


def case_control_flow_and_second_order_inside():
    """A scan carrying a psum, and a cond, inside the body; grad and a Hessian-vector
    product (jvp of grad) through shard_map."""

    def body(w, b, np_, l_):
        def step(c, xb):
            return c + l_.psum(np_.sum(np_.tanh(xb * w)), "i"), c * 2

        c, ys = l_.scan(step, np_.zeros(()), b)
        return l_.cond(c > 0, lambda: c * c, lambda: -c) + np_.sum(ys)

    f = smap(lambda w, b: body(w, b, jnp, lax), MESH1, (P(), P(None, "i")), P())
    jf = jsmap(lambda w, b: body(w, b, jjnp, jax.lax), JMESH1, (JP(), JP(None, "i")), JP())
    w, b, v = rand(3), rand(4, 16, 3), rand(3)
    g = purejit.jit(purejit.grad(f))(w, b)
    close(g, jax.jit(jax.grad(jf))(w, b))
    hvp = purejit.jit(lambda w, b, v: purejit.jvp(purejit.grad(f), (w, b), (v, 0 * b)))
    jhvp = jax.jit(lambda w, b, v: jax.jvp(jax.grad(jf), (w, b), (v, 0 * b)))
    close(hvp(w, b, v), jhvp(w, b, v), 1e-3)


def case_out_specs_error_is_jaxs():
    def body(b):
        return lax.all_gather(b, "i", tiled=True)

    f = smap(body, MESH1, P("i"), P())
    try:
        purejit.jit(f).lower(rand(16))
    except ValueError as e:
        msg = str(e)
    else:
        raise AssertionError("no error")
    want = (
        "out_specs is P() which implies that the corresponding output value is replicated "
        "across mesh axis 'i', but could not infer replication over any axes"
    )
    assert "shard_map applied to the function 'body'" in msg and want in msg, msg
    assert "cases_autodiff.py" in msg, msg
    ok = smap(lambda b: lax.psum(b, "i"), MESH1, P("i"), P())
    purejit.jit(ok).lower(rand(16))
    try:  # pvary over an axis that already varies: JAX's error
        purejit.jit(smap(lambda b: lax.pvary(b, "i"), MESH1, P("i"), P("i"))).lower(rand(16))
    except ValueError as e:
        assert "pvary" in str(e) and "must not be present" in str(e), e
    else:
        raise AssertionError("no pvary error")


def case_remat_saves_everything_over_several_devices_unless_forced():
    """A program over several devices (a shard_map body over 8 devices, a jit with
    shardings) saves every residual by default, as JAX does (measured faster on GPUs), and
    explain says why; remat=True in its compiler options plans it as on one device; the
    numbers are the same either way and equal JAX's."""
    from purejit.sharding import NamedSharding

    def loss(params, x, y):
        return lax.pmean(mlp_loss(jnp, lax.pvary(params, "i"), x, y), "i")

    def step(params, x, y):
        return purejit.value_and_grad(loss)(params, x, y)

    specs = (P(), P("i"), P("i"))
    body = smap(step, MESH1, specs, (P(), P()))
    default = purejit.jit(body)
    forced = purejit.jit(body, compiler_options={"remat": True})
    text = str(purejit.explain(default, PARAMS, X, Y))
    assert "remat off (the program runs over several devices" in text, text
    assert "remat auto" in str(purejit.explain(forced, PARAMS, X, Y))
    close(default(PARAMS, X, Y), forced(PARAMS, X, Y))
    jbody = jsmap(
        lambda p, x, y: jax.value_and_grad(
            lambda p, x, y: jax.lax.pmean(
                mlp_loss(jjnp, jax.lax.pcast(p, "i", to="varying"), x, y), "i"
            )
        )(p, x, y),
        JMESH1,
        (JP(), JP("i"), JP("i")),
        (JP(), JP()),
    )
    close(default(PARAMS, X, Y), jax.jit(jbody)(PARAMS, X, Y))
    # a jit with shardings (the partitioned program) too
    rows = NamedSharding(MESH1, P("i"))
    whole = NamedSharding(MESH1, P())
    single = purejit.value_and_grad(lambda p, x, y: mlp_loss(jnp, p, x, y))
    part = purejit.jit(single, in_shardings=(whole, rows, rows), out_shardings=whole)
    assert "remat off (the program runs over several devices" in str(
        purejit.explain(part, PARAMS, X, Y)
    )
    close(part(PARAMS, X, Y), purejit.jit(single)(PARAMS, X, Y))
