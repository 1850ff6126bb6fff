"""Partial evaluation as Flax's `nn.scan` uses it (`linear_util.wrap_init`,
`api_util.flatten_fun_nokwargs`, `partial_eval.trace_to_jaxpr_nounits` with every input
unknown): which outputs are known and their values, checked against JAX's answers."""

from __future__ import annotations

import jax
import jax.api_util
import jax.extend.linear_util as jlu
import jax.interpreters.partial_eval as jpe
import jax.numpy as jjnp
import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit.extend import api_util, linear_util, partial_eval
from purejit.tracing import ShapedArray

W = np.arange(6, dtype=np.float32).reshape(2, 3)


def _body(np_):
    def body(carry, x):
        # the first output never reads the inputs (a broadcast variable); the others do
        return {"w": np_.asarray(W) * 2.0, "c": carry + x, "k": np_.ones(3) * 3.0}

    return body


def _partial(lu, api, pe, np_, aval, instantiate=False):
    tree = (
        jax.tree_util.tree_structure((0, 0))
        if lu is jlu
        else purejit.tree_util.tree_structure((0, 0))
    )
    flat, out_tree = api.flatten_fun_nokwargs(
        lu.wrap_init(_body(np_), debug_info=api.debug_info("t", _body, (tree,), {})), tree
    )
    avals = [aval((3,), np.dtype(np.float32)), aval((3,), np.dtype(np.float32))]
    _, out_pvals, _ = pe.trace_to_jaxpr_nounits(
        flat, [pe.PartialVal.unknown(a) for a in avals], instantiate=instantiate
    )
    return out_tree(), out_pvals


@pytest.mark.parametrize("instantiate", [False, True])
def test_known_outputs_match_jax(instantiate):
    jtree, jpv = _partial(jlu, jax.api_util, jpe, jjnp, jax.core.ShapedArray, instantiate)
    ptree, ppv = _partial(linear_util, api_util, partial_eval, jnp, ShapedArray, instantiate)
    assert jtree.num_leaves == ptree.num_leaves == 3
    assert [p.is_known() for p in ppv] == [pv is None for pv, _ in jpv]
    for (jav, jc), (pav, pc) in zip(jpv, ppv):
        if jc is not None:
            np.testing.assert_array_equal(np.asarray(pc), np.asarray(jc))
        else:
            assert (pav.shape, pav.dtype) == (jav.shape, jav.dtype)


def test_known_outputs_inside_jit_are_its_tracers():
    seen = []

    def outer(s):
        def f(x):
            return [s * 2.0, x + s]

        _, pv, _ = partial_eval.trace_to_jaxpr_nounits(
            linear_util.wrap_init(f),
            [partial_eval.PartialVal.unknown(ShapedArray((), np.dtype(np.float32)))],
        )
        seen.append([p.is_known() for p in pv])
        return pv[0][1]

    assert float(purejit.jit(outer)(np.float32(4.0))) == 8.0
    assert seen == [[True, False]]


def test_what_flax_linen_reads_at_import():
    import purejit.compat
    from purejit.nn import initializers

    # initializers are Initializers (a runtime-checkable protocol, as Flax annotates them)
    assert isinstance(initializers.lecun_normal(), initializers.Initializer)
    assert isinstance(jax.nn.initializers.lecun_normal(), jax.nn.initializers.Initializer)
    with purejit.compat.dropin():
        siu = __import__("jax.extend.source_info_util", fromlist=["*"])
        assert siu.register_exclusion is purejit.traceback_util.register_exclusion
        src_core = __import__("jax._src.core", fromlist=["*"])
        # JAX's constructor (Flax's nn.scan passes `sharding=`), purejit's avals
        aval = src_core.ShapedArray((2,), np.dtype(np.float32), sharding=None)
        assert type(aval) is purejit.core.ShapedArray
        assert isinstance(purejit.typeof(np.ones(2, np.float32)), src_core.ShapedArray)
