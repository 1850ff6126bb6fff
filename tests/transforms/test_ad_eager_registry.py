"""Eager and staged differentiation agree for every differentiable op.

One set of JVP and transpose rules serves both: outside `jit`, `grad` and `jvp` apply each
op's rule on concrete values (`purejit/transforms/autodiff/eager.py`); under `jit` they
apply it to the traced program. The test walks the JVP rule table: each op is exercised by
an application from the fuzzer's op table (`tests/fuzz/ops.py`, one per op, picked so that
few cover all) or by a case written here, and the gradient and a JVP computed eagerly must
equal the ones computed by `jit(grad(f))` / `jit(jvp)`. An op with neither is listed in
`NOT_HERE` with the reason; a new op with a JVP rule fails the coverage test by name.
"""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.transforms.autodiff import JVP_RULES, NonDifferentiableError
from tests.fuzz.ops import SPECS
from tests.fuzz.program import JX, PJ

# ops with a JVP rule that no single-device application without custom rules produces
NOT_HERE = {
    "constant": "no operands: a tangent never flows into it",
    "iota": "no operands: a tangent never flows into it",
    "fusion": "made by the fusion pass after differentiation, never traced from user code",
    "all_gather": "collective: needs shard_map over several devices (tests/multidevice)",
    "all_reduce": "collective: needs shard_map over several devices (tests/multidevice)",
    "all_to_all": "collective: needs shard_map over several devices (tests/multidevice)",
    "collective_permute": "collective: needs shard_map over several devices",
    "reduce_scatter": "collective: needs shard_map over several devices (tests/multidevice)",
    "manual_computation": "shard_map's region: needs a mesh",
    "pvary": "varying-axes typing inside a check_vma shard_map over several devices",
    "sharding_constraint": "a layout over a mesh of several devices; its derivatives run in "
    "tests/multidevice/cases_sharding_context.py",
    "dot_product_attention_lin": "made by differentiating dot_product_attention, never "
    "traced from user code; its higher-order derivatives are checked against JAX in "
    "tests/nn/test_attention.py",
    "dot_product_attention_bwd": "made by differentiating dot_product_attention, never "
    "traced from user code; checked against JAX in tests/nn/test_attention.py",
}


def _effectful_sin():
    """sin as a user-defined primitive declared with an effect, with a JVP rule."""
    from purejit.extend import ad, core, mlir

    p = core.Primitive("effectful_sin")
    p.def_impl(jnp.sin)
    p.def_effectful_abstract_eval(lambda x: (x, {"io"}))
    ad.primitive_jvps[p] = lambda xs, ts: (p.bind(xs[0]), jnp.cos(xs[0]) * ts[0])
    mlir.register_lowering(p, mlir.lower_fun(jnp.sin, multiple_results=False))
    return p


def _cases():
    """Hand-written applications for ops the fuzzer does not generate: name -> (ir, f, args)."""
    c = np.array([0.5, -1.0, 2.0], np.float32)

    def complex_parts(x):
        z = jnp.asarray(x) * (1.0 + 2.0j)
        return purejit.lax.real(z) * purejit.lax.imag(z)

    def custom(x):
        @purejit.custom_jvp
        def f(x):
            return jnp.sin(x)

        @f.defjvp
        def f_jvp(p, t):
            return f(p[0]), jnp.cos(p[0]) * t[0] * 2.0

        return f(x) * x

    def converts(x):
        h = purejit.lax.convert_element_type(x, np.float16)
        bits = purejit.lax.bitcast_convert_type(x, np.float32)  # zero derivative, as JAX
        return purejit.lax.convert_element_type(h * h, np.float32) + bits * x

    def effectful(x):
        return _effectful_sin().bind(x) * x

    def new_in_011(x):
        # jax 0.11's ops: the fuzzer's reference (jax 0.10.2) lacks them
        return purejit.lax.log2(x * x + 1.0) * purejit.lax.one_minus_square(x)

    def tridiagonal(x):
        # a diagonally dominant system built from x, so every operand carries a tangent
        zero = jnp.zeros(1, x.dtype)
        dl = jnp.concatenate([zero, x[1:] * 0.5])
        du = jnp.concatenate([x[:-1] * 0.25, zero])
        b = jnp.stack([x, x * x], axis=-1)
        return purejit.lax.linalg.tridiagonal_solve(dl, x + 4.0, du, b)

    return {
        "user_primitive_effect": (("user_primitive_effect",), effectful, (c,)),
        "convert/bitcast": (("convert", "bitcast_convert"), converts, (c,)),
        "real/imag": (("real", "imag"), complex_parts, (c,)),
        "custom_jvp": (("custom_jvp_call",), custom, (c,)),
        "tridiagonal_solve": (("tridiagonal_solve",), tridiagonal, (c,)),
        "log2/one_minus_square": (("log2", "one_minus_square"), new_in_011, (c,)),
    }


def _draw(seed):
    rng = np.random.default_rng(seed)
    return lambda label, options: options[int(rng.integers(len(options)))]


def _valid(spec, params, types) -> bool:
    structs = [jax.ShapeDtypeStruct(s, d) for s, d in types]
    try:
        out = jax.eval_shape(lambda *a: spec.apply(JX, params, *a), *structs)
    except Exception:  # noqa: BLE001 - an invalid combination: draw another
        return False
    return hasattr(out, "dtype") and np.dtype(out.dtype) == np.float32 and 0 not in out.shape


def _application(spec):
    """(params, arg types) of a valid float32 application of `spec`, or None."""
    for seed in range(8):
        for shape in [(3,), (2, 3)]:
            params = (
                spec.params(_draw(seed), [(shape, "float32")] * spec.arity) if spec.params else {}
            )
            types = [(shape, np.float32)] * spec.arity
            if _valid(spec, params, types):
                return params, types
    return None


def _cover():
    """One fuzzer application per op (greedy: the spec covering most uncovered ops first)."""
    todo = set(JVP_RULES) - set(NOT_HERE)
    for ir, *_ in _cases().values():
        todo -= set(ir)
    chosen = []
    specs = [s for s in SPECS.values() if "f" in s.kinds and not s.needs_exact]
    specs += [s for s in SPECS.values() if "f" in s.kinds and s.needs_exact]
    while todo:
        best = max(specs, key=lambda s: len(todo & set(s.ir)))
        if not todo & set(best.ir):
            break
        specs.remove(best)
        app = _application(best)
        if app is None:
            continue
        chosen.append((best, *app))
        todo -= set(best.ir)
    return chosen, todo


CHOSEN, UNCOVERED = _cover()


def test_every_differentiable_op_is_compared():
    assert not UNCOVERED, (
        f"ops with a JVP rule that no eager-vs-staged case exercises: {sorted(UNCOVERED)}; "
        "add a case to _cases() or, with the reason, to NOT_HERE"
    )
    assert not set(NOT_HERE) - set(JVP_RULES), "NOT_HERE names ops without a JVP rule"


def _check(f, args, allow_refusal=True):
    """Eager and staged gradient and JVP of `f` agree (or both refuse, where allowed)."""
    rng = np.random.default_rng(1)
    out = np.asarray(f(*args))
    w = rng.standard_normal(out.shape).astype(np.float32)

    def loss(*xs):
        return jnp.sum(f(*xs) * w)

    nums = tuple(range(len(args)))
    tangents = tuple(rng.standard_normal(np.shape(a)).astype(np.float32) for a in args)
    modes = {
        "grad": (
            lambda: purejit.grad(loss, argnums=nums)(*args),
            lambda: purejit.jit(purejit.grad(loss, argnums=nums))(*args),
        ),
        "jvp": (
            lambda: purejit.jvp(f, args, tangents)[1],
            lambda: purejit.jit(lambda *a: purejit.jvp(f, a, tangents)[1])(*args),
        ),
    }
    for mode, (eager, staged) in modes.items():
        try:
            want = staged()
        except NonDifferentiableError as e:  # e.g. reverse mode through a while_loop
            if not allow_refusal:
                raise
            with pytest.raises(NonDifferentiableError, match=re.escape(str(e)[:40])):
                eager()
            continue
        got = eager()
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-6)


def _args(types, seed):
    rng = np.random.default_rng(seed)
    return tuple(
        jnp.asarray(
            (rng.integers(-24, 25, size=s) / 8.0 + rng.uniform(0.01, 0.1, size=s)).astype(d)
        )
        for s, d in types
    )


def _joint(group):
    """One function of every application's arguments returning their outputs, flattened and
    joined, so that a group compiles once per mode."""

    def f(*xs):
        outs, k = [], 0
        for spec, params, types in group:
            outs.append(jnp.ravel(spec.apply(PJ, params, *xs[k : k + len(types)])))
            k += len(types)
        return jnp.concatenate(outs)

    return f


GROUPS = [CHOSEN[k : k + 8] for k in range(0, len(CHOSEN), 8)]


@pytest.mark.parametrize("group", GROUPS, ids=["+".join(c[0].name for c in g) for g in GROUPS])
def test_fuzzer_ops_eager_equal_staged(group):
    args = sum((_args(types, k) for k, (_, _, types) in enumerate(group)), ())
    try:
        _check(_joint(group), args, allow_refusal=False)
    except NonDifferentiableError:  # one application refuses a mode: check each alone
        for k, app in enumerate(group):
            _check(_joint([app]), _args(app[2], k))


@pytest.mark.parametrize("name", sorted(_cases()))
def test_written_case_eager_equals_staged(name):
    _, f, args = _cases()[name]
    _check(f, args)
