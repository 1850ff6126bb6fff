"""A library module that defines primitives the way Equinox does (`jax.extend.core.Primitive`,
`jax.interpreters.ad` / `batching` / `mlir`), imported once under real JAX and once in
drop-in mode: the same source gives the same numbers on purejit under jit, grad, vmap, scan
and cond."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import purejit
import purejit.extend
import purejit.traceback_util
import purejit.compat

SOURCE = """\
'''Primitives written as Equinox writes them (its _unvmap.py and a linear primitive).'''
import jax
import jax.core
import jax.extend.core
import jax.interpreters.ad as ad
import jax.interpreters.batching as batching
import jax.interpreters.mlir as mlir
import jax.numpy as jnp

unvmap_any_p = jax.extend.core.Primitive("unvmap_any")


def unvmap_any(x):
    return unvmap_any_p.bind(x)


def _unvmap_any_impl(x):
    return jnp.any(x)


def _unvmap_any_abstract_eval(x):
    return jax.core.ShapedArray(shape=(), dtype=jax.numpy.bool_.dtype)


def _unvmap_any_batch(x, batch_axes):
    (x,) = x
    return unvmap_any(x), None


unvmap_any_p.def_impl(_unvmap_any_impl)
unvmap_any_p.def_abstract_eval(_unvmap_any_abstract_eval)
batching.primitive_batchers[unvmap_any_p] = _unvmap_any_batch
mlir.register_lowering(unvmap_any_p, mlir.lower_fun(_unvmap_any_impl, multiple_results=False))

# a linear primitive: its JVP binds it on the tangent, its transpose on the cotangent
double_p = jax.extend.core.Primitive("double")
double_p.multiple_results = True


def _double_impl(x, y):
    return [2.0 * x, 2.0 * y]


double_p.def_impl(_double_impl)
double_p.def_abstract_eval(lambda x, y: [jax.core.ShapedArray(x.shape, x.dtype),
                                         jax.core.ShapedArray(y.shape, y.dtype)])


def _double_jvp(primals, tangents):
    tangents = [ad.instantiate_zeros(t) for t in tangents]
    return double_p.bind(*primals), double_p.bind(*tangents)


def _double_transpose(cts, x, y):
    assert ad.is_undefined_primal(x) and ad.is_undefined_primal(y)
    cts = [ad.instantiate_zeros(c) if type(c) is ad.Zero else c for c in cts]
    return double_p.bind(*cts)


ad.primitive_jvps[double_p] = _double_jvp
ad.primitive_transposes[double_p] = _double_transpose
batching.primitive_batchers[double_p] = lambda xs, dims: (double_p.bind(*xs), list(dims))
mlir.register_lowering(double_p, mlir.lower_fun(_double_impl, multiple_results=True))


def error_if_like(x, pred):
    '''Equinox's error_if pattern: a predicate reduced over the batch, then a branch.'''
    bad = unvmap_any(pred)
    return jax.lax.cond(bad, lambda v: jnp.zeros_like(v), lambda v: v, x)


def model(x):
    a, b = double_p.bind(x, jnp.sin(x))
    y = error_if_like(a * b, x > 100.0)
    return jnp.sum(y * y)


def run(x):
    '''Every transformation on the primitives: values, grads, vmap, scan.'''
    xs = jnp.stack([x, 2 * x])
    out = {
        "eager": model(x),
        "jit": jax.jit(model)(x),
        "grad": jax.grad(model)(x),
        "jit_grad": jax.jit(jax.grad(model))(x),
        "vmap_grad": jax.vmap(jax.grad(model))(xs),
        "scan": jax.jit(jax.grad(lambda v: jax.lax.scan(
            lambda c, _: (c + model(c) * 0.01, c), v, None, length=3)[0].sum()))(x),
        "unvmap": jax.vmap(unvmap_any)(xs > 3.0),
    }
    return out
"""


@pytest.fixture
def library(tmp_path):
    (tmp_path / "_eqx_like_prims.py").write_text(SOURCE)
    sys.path.insert(0, str(tmp_path))
    try:
        yield "_eqx_like_prims"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("_eqx_like_prims", None)


def test_equinox_style_primitives_run_in_dropin_mode(library):
    x = np.array([0.3, -1.2, 0.5, 2.0], np.float32)
    want = {k: np.asarray(v) for k, v in importlib.import_module(library).run(x).items()}
    sys.modules.pop(library)
    with purejit.compat.dropin():
        lib = importlib.import_module(library)
        got = lib.run(x)
        # the library's primitive is purejit's, and so are its results
        assert isinstance(lib.unvmap_any_p, purejit.extend.core.Primitive)
    assert set(got) == set(want)
    for k, v in got.items():
        assert isinstance(v, purejit.Array), k
        np.testing.assert_allclose(np.asarray(v), want[k], rtol=2e-6, atol=2e-6, err_msg=k)


def test_dropin_names_of_the_extension_surface():
    from purejit.compat import _views

    with purejit.compat.dropin():
        import jax
        import jax.core
        import jax.interpreters.ad as ad
        from jax._src.traceback_util import register_exclusion
        from jax._src.tree_util import _registry

        # reached as attributes too (purejit.extend is imported before the view exists)
        assert jax.extend.core is _views.resolve("jax.extend.core")
        assert jax.extend.core.Primitive is purejit.extend.core.Primitive
        assert jax.core.Primitive is purejit.extend.core.Primitive
        assert jax.core.get_opaque_trace_state is purejit.extend.core.get_opaque_trace_state
        assert ad.primitive_jvps is purejit.extend.ad.primitive_jvps
        assert ad.Zero is purejit.extend.ad.Zero and ad.UndefinedPrimal is not None
        assert jax.interpreters.batching.primitive_batchers is not None
        assert jax.interpreters.mlir.lower_fun is purejit.extend.mlir.lower_fun
        assert (
            tuple in _registry and register_exclusion is purejit.traceback_util.register_exclusion
        )
