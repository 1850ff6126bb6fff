"""`purejit.vmap`'s API against `jax.vmap`: axis specifications, errors, compositions with jit,
scan and itself, collectives over nested axes, and what `explain` reports."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from vmap_harness import compare

import purejit
import purejit.numpy as jnp
from purejit import lax
from purejit.ir import interpret
from purejit.transforms import eval_function

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def both(make, *args, rtol=1e-5, jit=True, **vmap_kw):
    """`make(np_like, lax_like, vmap)` on both sides; compares the results."""
    want = make(jjnp, jax.lax, jax.vmap)(*args)
    got = make(jnp, lax, purejit.vmap)(*args)
    compare(got, want, "eager", rtol)
    if jit:
        got = purejit.jit(make(jnp, lax, purejit.vmap))(*args)
        compare(got, want, "jit", rtol)


def test_pytree_axes_negative_axes_and_kwargs():
    x, y, z, w = f32(4, 3), f32(3, 4), f32(3, 5, 4), f32(4)

    def make(n, lx, vmap):
        def f(tree, v, *, scale):
            a, (b, c) = tree
            return {"s": a @ b + scale, "t": (c.sum(0), v * 2)}

        def g(x, y, z, w, s):
            return vmap(f, in_axes=((0, (-1, 2)), None), out_axes={"s": -1, "t": (-1, None)})(
                (x, (y, z)), w, scale=s
            )

        return g

    both(make, x, y, z, w, f32(4))


def test_dict_in_axes_and_none_leaves():
    d = {"a": np.float32(0.5), "b": f32(5)}

    def make(n, lx, vmap):
        return lambda d, x: vmap(
            lambda d, x: d["a"] + d["b"] + x, in_axes=({"a": None, "b": 0}, None)
        )(d, x)

    both(make, d, np.float32(1.0))


def test_out_axes_none_and_broadcast_of_unmapped_outputs():
    def make(n, lx, vmap):
        return lambda x, y: vmap(
            lambda x, y: (x + y, y * 2.0), in_axes=(0, None), out_axes=(0, None)
        )(x, y)

    both(make, f32(3), np.float32(4.0))

    def make2(n, lx, vmap):
        return lambda x, y: vmap(lambda x, y: (x + y, y * 2.0), in_axes=(0, None))(x, y)

    both(make2, f32(3), np.float32(4.0))


def test_axis_size_without_mapped_inputs():
    def make(n, lx, vmap):
        return lambda x: vmap(lambda: x * 2.0, axis_size=3, in_axes=())()

    both(make, f32(2))


def test_sum_match_sums_a_mapped_output():
    x = f32(4, 3)
    got = purejit.vmap(lambda v: v * 2, out_axes=None, sum_match=True)(x)
    np.testing.assert_allclose(np.asarray(got), (x * 2).sum(0), rtol=1e-5)


def test_errors_like_jax():
    x, y = f32(3), f32(4)
    with pytest.raises(ValueError) as e:
        purejit.vmap(lambda x, y: x + y[:3])(x, y)
    msg = str(e.value)
    assert "inconsistent sizes" in msg
    assert "one axis had size 3: axis 0 of argument x of type f32[3]" in msg
    assert "one axis had size 4: axis 0 of argument y of type f32[4]" in msg
    with pytest.raises(ValueError, match="inconsistent sizes"):
        jax.vmap(lambda x, y: x + y[:3])(x, y)
    with pytest.raises(ValueError, match="the `axis_size` argument was 5"):
        purejit.vmap(lambda x: x, axis_size=5)(x)
    with pytest.raises(ValueError, match="len\\(in_axes\\)=2, len\\(args\\)=1"):
        purejit.vmap(lambda x: x, in_axes=(0, 0))(x)
    with pytest.raises(TypeError, match="vmap in_axes must be an int, None"):
        purejit.vmap(lambda x: x, in_axes=1.5)
    with pytest.raises(ValueError, match="rank should be at least 2, but is only 1"):
        purejit.vmap(lambda x: x, in_axes=1)(x)
    with pytest.raises(ValueError, match="tree prefix"):
        purejit.vmap(lambda t: t[0], in_axes=((0, 0, 0),))((x, x))
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        purejit.vmap(lambda x: x, in_axes=None)(x)
    with pytest.raises(ValueError, match="out_axes is None"):
        purejit.vmap(lambda x: x, out_axes=None)(x)
    with pytest.raises(NotImplementedError, match="spmd_axis_name"):
        purejit.vmap(lambda x: x, spmd_axis_name="d")
    with pytest.raises(NameError, match="axis names \\['j'\\] are not bound"):
        purejit.vmap(lambda x: lax.psum(x, "j"), axis_name="i")(x)


def test_vmap_of_vmap_and_jit_compositions():
    a, b = f32(2, 3, 4), f32(4, 3)

    def make(n, lx, vmap):
        inner = vmap(lambda u, v: u @ v, in_axes=(0, None))  # rows of u times v
        outer = vmap(inner, in_axes=(0, None), out_axes=-1)
        return lambda a, b: (
            outer(a, b),
            vmap(vmap(n.dot, in_axes=(0, None)), in_axes=(1, None))(a, b[:, 0]),
        )

    both(make, a, b)

    def make_jit_inside(n, lx, vmap):
        jit = purejit.jit if vmap is purejit.vmap else jax.jit
        return lambda a: vmap(jit(lambda m: n.tanh(m).sum(0)))(a)

    both(make_jit_inside, a)


def test_jit_of_vmap_is_one_program_with_batched_dot():
    w = f32(4, 3)
    lowered = purejit.jit(purejit.vmap(lambda x: x @ w)).lower(f32(8, 4))
    names = [op.name for op in lowered.fn.walk()]
    assert "dot_general" in names and "while" not in names and "scan" not in names
    ir = purejit.jit(purejit.vmap(lambda x, y: x @ y)).lower(f32(8, 2, 4), f32(8, 4, 3)).ir()
    assert "lhs_batching_dimensions=[0]" in ir.replace(" ", "")


def test_vmap_inside_scan_and_closures_over_tracers():
    def make(n, lx, vmap):
        def f(xs, w):
            def body(c, x):
                y = vmap(lambda r: n.sin(r * w) + c)(x)  # closes over the carry and w
                return c + y.sum(), y

            return lx.scan(body, np.float32(0.0), xs)

        return f

    both(make, f32(4, 3, 2), f32(2))


def test_nested_axis_names():
    x = f32(2, 3)

    def make(n, lx, vmap):
        def f(x):
            def per(v):
                return lx.psum(v, "i") - lx.psum(v, "j") * lx.axis_index("i")

            return vmap(vmap(per, axis_name="j"), axis_name="i")(x)

        return f

    both(make, x)


def test_explain_reports_what_control_flow_became():
    def f(x):
        y = lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: v - 1, x)
        z = lax.cond(True, lambda v: v + 1, lambda v: v, y)
        return lax.while_loop(lambda c: c.sum() < 10, lambda c: c + 1, z)

    text = str(purejit.explain(purejit.vmap(f), f32(4, 3)))
    line = f.__code__.co_firstlineno
    assert (
        f"cond (at test_vmap_api.py:{line + 1}) → select: both branches run for every example"
        in text
    )
    assert f"cond (at test_vmap_api.py:{line + 2}) → cond: the predicate does not vary" in text
    assert f"while_loop (at test_vmap_api.py:{line + 3}) → while over the batch" in text
    scanned = purejit.vmap(lambda x: lax.scan(lambda c, v: (c + v, c), 0.0, x))
    assert "→ scan: one loop of 3 steps for the whole batch (1 of 1 carries batched)" in str(
        purejit.explain(scanned, f32(4, 3))
    )


def test_fusion_ops_batch_through_their_region():
    x = f32(3, 4)
    fn = (
        purejit.jit(
            lambda a: jnp.tanh(a * 2 + 1).sum(0) * 3, compiler_options={"fusion": "purejit"}
        )
        .lower(x)
        .fn
    )
    assert any(op.name == "fusion" for op in fn.ops)
    xs = f32(3, 4, 2)
    got = purejit.vmap(lambda a: eval_function(fn, [a])[0], in_axes=2)(xs)
    want = np.stack([np.tanh(xs[..., i] * 2 + 1).sum(0) * 3 for i in range(2)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


def test_shard_map_inside_vmap_keeps_the_batch_unsharded():
    from purejit.sharding import PartitionSpec as P
    from purejit.sharding import make_mesh

    mesh = make_mesh((1,), ("x",))
    body = purejit.shard_map(
        lambda a: lax.psum(a * 2, "x"), mesh=mesh, in_specs=P("x"), out_specs=P()
    )
    x = f32(4, 3)
    fn = purejit.jit(purejit.vmap(body, in_axes=1)).lower(x).fn
    (op,) = [op for op in fn.ops if op.name == "manual_computation"]
    assert op.attrs["in_specs"][0][0] == ()  # the batch dimension is not sharded
    np.testing.assert_allclose(interpret(fn, x)[0], (x * 2).T, rtol=1e-6)


def test_loop_fallback_is_explained():
    """A reduce whose init varies over the batch runs once per example (a scan)."""

    def f(x, init):
        return lax.reduce(x, init, lax.add, (0,))

    x, init = f32(3, 4), np.zeros(3, np.float32)
    got = purejit.jit(purejit.vmap(f))(x, init)
    np.testing.assert_allclose(np.asarray(got), x.sum(1), rtol=1e-5)
    text = str(purejit.explain(purejit.vmap(f), x, init))
    assert "reduce (at test_vmap_api.py:" in text
    assert "loop over the 3 examples (scan): its init value varies over the batch" in text


def test_batched_cond_uniform_and_mixed_predicates():
    """A batched predicate takes the one-branch path when every example agrees, the select
    path otherwise; switch indices out of range pick the last branch in both."""
    x = f32(4, 3)
    same, mixed = np.abs(x), x.copy()
    mixed[:, 0] = [1.0, -1.0, 2.0, -2.0]
    idx_same, idx_mixed = np.full(4, 7, np.int32), np.array([-1, 0, 1, 5], np.int32)

    def make(n, lx, vmap):
        def c(v):
            return lx.cond(v[0] > 0, lambda u: n.sin(u) * 2, lambda u: u - 1, v)

        def s(i, v):
            return lx.switch(i, [lambda u: u + 1, lambda u: u * 3, lambda u: -u], v)

        return lambda a, b, i, j: (vmap(c)(a), vmap(c)(b), vmap(s)(i, a), vmap(s)(j, b))

    both(make, same, mixed, idx_same, idx_mixed)


def test_vmap_over_random_keys_equals_a_loop_and_jax():
    from purejit import random

    keys = random.split(random.PRNGKey(0), 4)

    def draw(k):
        return random.normal(k, (3,)), random.uniform(k, (2,)), random.split(k, 2)

    got = purejit.jit(purejit.vmap(draw))(keys)
    loop = [draw(keys[i]) for i in range(4)]
    for j, g in enumerate(got):
        np.testing.assert_array_equal(np.asarray(g), np.stack([np.asarray(r[j]) for r in loop]))
    jkeys = jax.random.split(jax.random.PRNGKey(0), 4)
    want = jax.vmap(lambda k: jax.random.normal(k, (3,)))(jkeys)
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want), rtol=1e-6)
