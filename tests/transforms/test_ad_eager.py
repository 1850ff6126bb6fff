"""Differentiation outside `jit` runs on concrete values, as JAX's: Python control flow on
values and `float(x)` work, results match JAX, and under `jit` the same calls stage."""

import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest

import purejit as pj
import purejit.numpy as jnp
from purejit import lax


def piecewise(x):  # JAX's documentation, "Control flow" (autodiff of Python control flow)
    return 3 * x**2 if x < 3 else -4 * x


def piecewise_ref(x):
    return 3 * x**2 if x < 3 else -4 * x


def test_grad_of_python_if_matches_jax_docs():
    assert float(pj.grad(piecewise)(2.0)) == 12.0
    assert float(pj.grad(piecewise)(4.0)) == -4.0


def loop(x):
    n = 0
    while x < 10.0:  # a Python while on a value
        x = x * 2.0 + jnp.sin(x)
        n += 1
    return x * float(lax.stop_gradient(x)) + n * x.item()


def loop_ref(x):
    n = 0
    while x < 10.0:
        x = x * 2.0 + jnp_ref.sin(x)
        n += 1
    return x * float(jax.lax.stop_gradient(x)) + n * x.item()


@pytest.mark.parametrize("x0", [0.5, 3.0, 11.0])
def test_grad_value_and_grad_of_python_while(x0):
    v, g = pj.value_and_grad(loop)(x0)
    rv, rg = jax.value_and_grad(loop_ref)(x0)
    np.testing.assert_allclose(v, rv, rtol=1e-5)
    np.testing.assert_allclose(g, rg, rtol=1e-5)


def test_jvp_vjp_linearize_on_values():
    x = np.float32(1.7)
    y, t = pj.jvp(loop, (x,), (np.float32(1.0),))
    ry, rt = jax.jvp(loop_ref, (x,), (np.float32(1.0),))
    np.testing.assert_allclose([y, t], [ry, rt], rtol=1e-5)
    y, f_vjp = pj.vjp(loop, x)
    np.testing.assert_allclose(f_vjp(np.float32(1.0))[0], rt, rtol=1e-5)
    y, f_jvp = pj.linearize(loop, x)
    np.testing.assert_allclose(f_jvp(np.float32(2.0)), 2 * rt, rtol=1e-5)


def branchy(x):  # vector input, branch on a reduction
    s = jnp.sum(x)
    if s > 0:
        return jnp.tanh(x) * s
    return jnp.exp(x) - s


def branchy_ref(x):
    s = jnp_ref.sum(x)
    if s > 0:
        return jnp_ref.tanh(x) * s
    return jnp_ref.exp(x) - s


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_jacobians_and_hessian_on_values(sign):
    x = sign * np.array([0.3, 0.5, 0.7], np.float32)
    for ours, ref in [(pj.jacfwd, jax.jacfwd), (pj.jacrev, jax.jacrev)]:
        np.testing.assert_allclose(ours(branchy)(x), ref(branchy_ref)(x), rtol=1e-5, atol=1e-6)

    def scalar(x):
        return jnp.sum(branchy(x) ** 2)

    def scalar_ref(x):
        return jnp_ref.sum(branchy_ref(x) ** 2)

    np.testing.assert_allclose(
        pj.hessian(scalar)(x), jax.hessian(scalar_ref)(x), rtol=1e-4, atol=1e-5
    )


def test_higher_order_on_values():
    assert float(pj.grad(pj.grad(piecewise))(2.0)) == 6.0
    assert float(pj.grad(pj.grad(piecewise))(4.0)) == 0.0
    x = np.float32(0.8)
    np.testing.assert_allclose(
        pj.grad(pj.grad(loop))(x), jax.grad(jax.grad(loop_ref))(x), rtol=1e-4
    )


def test_under_jit_still_stages():
    with pytest.raises(pj.ConcretizationTypeError):
        pj.jit(pj.grad(piecewise))(2.0)
    f = pj.jit(pj.grad(lambda x: jnp.sum(jnp.sin(x) ** 2)))
    x = np.linspace(0, 1, 5, dtype=np.float32)
    np.testing.assert_allclose(f(x), jax.grad(lambda x: jnp_ref.sum(jnp_ref.sin(x) ** 2))(x))


def test_control_flow_ops_and_closures_under_eager_grad():
    def f(x, w):
        y = lax.cond(x > 0, lambda v: v * w, lambda v: v - w, x)  # closes over w
        z = lax.fori_loop(0, 3, lambda i, c: c * w + y, y)
        m = pj.vmap(lambda r: r * w * x)(jnp.arange(3.0))  # vmap body closes over tracers
        return z + jnp.sum(m)

    def f_ref(x, w):
        y = jax.lax.cond(x > 0, lambda v: v * w, lambda v: v - w, x)
        z = jax.lax.fori_loop(0, 3, lambda i, c: c * w + y, y)
        m = jax.vmap(lambda r: r * w * x)(jnp_ref.arange(3.0))
        return z + jnp_ref.sum(m)

    for x in (0.7, -0.7):
        got = pj.grad(f, argnums=(0, 1))(x, 1.3)
        want = jax.grad(f_ref, argnums=(0, 1))(x, 1.3)
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_has_aux_and_integer_inputs():
    def f(x, k):
        y = jnp.sum(x * k)
        return y, {"k2": k * 2, "y": y}

    (v, aux), g = pj.value_and_grad(f, has_aux=True)(np.ones(3, np.float32), 3)
    assert float(v) == 9.0 and int(aux["k2"]) == 6 and float(aux["y"]) == 9.0
    np.testing.assert_allclose(g, [3.0, 3.0, 3.0])
    _, f_vjp = pj.vjp(f, np.ones(3, np.float32), 3, has_aux=True)[:2]
    gx, gk = f_vjp(np.float32(1.0))
    assert gk.dtype == pj.float0


def test_tracer_to_numpy_names_the_transformation():
    def f(x):
        return np.asarray(x).sum()

    with pytest.raises(pj.TracerArrayConversionError, match="purejit.grad|purejit.vjp"):
        pj.grad(f)(1.0)


def test_float_of_a_differentiated_value_refuses_as_in_jax():
    with pytest.raises(pj.ConcretizationTypeError, match=r"float\(\).*purejit.grad"):
        pj.grad(lambda x: x * float(x))(2.0)
    assert float(pj.grad(lambda x: x * int(x) + x * float(jnp.floor(2.5)))(2.0)) == 4.0


@pytest.fixture
def eager_ops(monkeypatch):
    """How many primitives run op by op on the eager trace (a list, one name per op)."""
    from purejit.runtime import eval_trace

    seen = []
    process = eval_trace.process

    def counting(name, *a, **k):
        seen.append(name)
        return process(name, *a, **k)

    monkeypatch.setattr(eval_trace, "process", counting)
    return seen


def _mlp(xp):
    def loss(w1, w2, x):
        return xp.mean(xp.tanh(xp.tanh(x @ w1) @ w2) ** 2)

    return loss


def _mlp_args(rng):
    return [rng.standard_normal(s).astype(np.float32) for s in [(8, 16), (16, 4), (5, 8)]]


def test_grad_vjp_jvp_of_jit_run_compiled_not_op_by_op(eager_ops):
    args = _mlp_args(np.random.default_rng(0))
    jf = pj.jit(_mlp(jnp))
    want = jax.grad(_mlp(jnp_ref), argnums=(0, 1))(*args)
    g = pj.grad(jf, argnums=(0, 1))
    np.testing.assert_allclose(g(*args)[0], want[0], rtol=1e-5, atol=1e-6)
    out, f_vjp = pj.vjp(jf, *args)
    np.testing.assert_allclose(f_vjp(np.float32(1.0))[1], want[1], rtol=1e-5, atol=1e-6)
    t = [np.ones_like(a) for a in args]
    y, ty = pj.jvp(jf, tuple(args), tuple(t))
    ry, rty = jax.jvp(_mlp(jnp_ref), tuple(args), tuple(t))
    np.testing.assert_allclose([y, ty], [ry, rty], rtol=1e-5, atol=1e-6)
    eager_ops.clear()
    for _ in range(3):
        g(*args)
        out, f_vjp = pj.vjp(jf, *args)
        f_vjp(np.float32(1.0))
        pj.jvp(jf, tuple(args), tuple(t))
    assert eager_ops == []  # every call ran cached executables
    vg = jf.derived(("value_and_grad", (0, 1), False, False, False, "grad"), None)
    assert vg is not None and len(vg.cache) == 1  # compiled once, by the first call
    # vjp keeps two: the forward (outputs and residuals) and the backward
    assert f_vjp.func.jitted is not None and len(f_vjp.func.jitted.cache) == 1


def test_vmap_of_jit_runs_one_batched_executable(eager_ops):
    rng = np.random.default_rng(1)
    w1, w2, _ = _mlp_args(rng)
    xs = rng.standard_normal((3, 5, 8)).astype(np.float32)
    f = pj.vmap(pj.jit(_mlp(jnp)), in_axes=(None, None, 0))
    want = jax.vmap(_mlp(jnp_ref), in_axes=(None, None, 0))(w1, w2, xs)
    np.testing.assert_allclose(f(w1, w2, xs), want, rtol=1e-5, atol=1e-6)
    eager_ops.clear()
    f(w1, w2, xs)
    assert eager_ops == []


def test_errors_name_the_transformation_in_use():
    with pytest.raises(pj.ConcretizationTypeError, match="under purejit.vmap"):
        pj.vmap(lambda x: x if x > 0 else -x)(jnp.arange(3.0))
    with pytest.raises(pj.ConcretizationTypeError, match="under purejit.jit"):
        pj.jit(lambda x: x if x > 0 else -x)(1.0)
    with pytest.raises(pj.ConcretizationTypeError, match="under purejit.lax.cond"):
        lax.cond(True, lambda x: x if x > 0 else -x, lambda x: x, 1.0)
    with pytest.raises(pj.ConcretizationTypeError, match="by purejit.value_and_grad"):
        pj.value_and_grad(lambda x: x * float(x))(1.0)
    with pytest.raises(pj.ConcretizationTypeError, match="by purejit.jvp"):
        pj.jvp(lambda x: x * float(x), (1.0,), (1.0,))


def test_jacobians_of_jit_run_compiled(eager_ops):
    x = np.array([0.3, -0.5, 0.7], np.float32)
    jf = pj.jit(lambda x: jnp.sum(jnp.tanh(x) ** 3) * x[0])
    ref = lambda x: jnp_ref.sum(jnp_ref.tanh(x) ** 3) * x[0]  # noqa: E731
    for ours, theirs in [
        (pj.jacfwd, jax.jacfwd),
        (pj.jacrev, jax.jacrev),
        (pj.hessian, jax.hessian),
    ]:
        f = ours(jf)
        np.testing.assert_allclose(f(x), theirs(ref)(x), rtol=1e-5, atol=1e-6)
        eager_ops.clear()
        f(x)
        assert eager_ops == [], ours.__name__


def test_numpy_conversion_error_names_the_transformation():
    with pytest.raises(pj.TracerArrayConversionError, match="traced by purejit.vmap"):
        pj.vmap(lambda x: np.asarray(x))(jnp.arange(3.0))
    with pytest.raises(pj.TracerArrayConversionError, match="traced by purejit.jit"):
        pj.jit(lambda x: np.asarray(x))(1.0)
