"""The layout pass never hands a dot constant data in another order: XLA keeps a constant's
row-major layout and picks the dot's kernel (so the order of its sums) from the operands'
layouts, so `transpose(dot(ct, C))` rewritten as `dot(C^T, ct)` changes bits. IR text in ->
text out, the interpreter, and JAX's bits for a gradient whose data is a closure constant."""

import jax
import jax.numpy as jjnp
import numpy as np

import purejit
import purejit.numpy as pnp
from purejit.ir import interpret, parse, print_function, verify
from purejit.passes.layout import LayoutAssignment

_DOT = (
    "lhs_batching_dimensions=[], rhs_batching_dimensions=[], "
    "lhs_contracting_dimensions=[0], rhs_contracting_dimensions=[0]"
)


def _run(src: str) -> tuple[str, dict]:
    fn = verify(parse(src))
    res = LayoutAssignment()(fn)
    verify(res.fn)
    args = [np.random.default_rng(0).standard_normal(p.type.shape).astype(np.float32)
            for p in fn.params]  # fmt: skip
    for a, b in zip(interpret(fn, *args), interpret(res.fn, *args)):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    return print_function(res.fn), res.report


def _program(const: str) -> str:
    return f"""func @g(%0: f32[4,3]) -> (f32[2,3]) {{
  %1 = constant() {{value={const}}} : (f32[4,2])
  %2 = dot_general(%0, %1) {{{_DOT}}} : (f32[3,2])
  %3 = transpose(%2) {{permutation=[1, 0]}} : (f32[2,3])
  return %3
}}"""


def test_dot_of_constant_data_keeps_its_form():
    # must not change: pushing the transpose into the dot would read C^T, a new constant
    src = _program("array<f32[4,2]: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]>")
    out, report = _run(src)
    assert out == print_function(parse(src))
    assert report["dots_relaid"] == 0


def test_dot_of_a_splat_constant_is_still_relaid():
    # a constant whose elements are all equal has no order to change: the rewrite stays
    src = _program("array<f32[4,2]: [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]>")
    out, report = _run(src)
    assert "transpose" not in out and report["dots_relaid"] == 1


def test_gradient_with_closure_constant_data_is_jax_bits():
    """An MLP's gradient, the data captured as constants (optax training loops do this): the
    weight gradient `dot(ct, X)^T` used to become `dot(X^T, ct)`, 95 of 128 elements off."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype(np.float32)
    y = rng.normal(size=(64, 1)).astype(np.float32)
    p = {
        "w1": rng.normal(size=(8, 16)).astype(np.float32) * 0.3,
        "b1": np.zeros(16, np.float32),
        "w2": rng.normal(size=(16, 1)).astype(np.float32) * 0.3,
    }

    def loss(np_):
        return lambda p: np_.mean((np_.maximum(x @ p["w1"] + p["b1"], 0.0) @ p["w2"] - y) ** 2)

    got = purejit.jit(purejit.grad(loss(pnp)))(p)
    want = jax.jit(jax.grad(loss(jjnp)))(p)
    for k in p:
        np.testing.assert_array_equal(np.asarray(got[k]).view(np.uint32),
                                      np.asarray(want[k]).view(np.uint32))  # fmt: skip
