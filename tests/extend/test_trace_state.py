"""What libraries read about traces (JAX's names): trace-state identity
(`get_opaque_trace_state`), `core.Tracer` as the base of every tracer, pytree-registry
membership (`tree_util._registry`), and `traceback_util.register_exclusion`; each checked
against what JAX answers."""

from __future__ import annotations

import importlib
import sys
import warnings

import jax
import jax.core
import jax.extend.core
import numpy as np
import pytest
from jax._src import tree_util as jax_tree_util

import purejit
import purejit.core
import purejit.numpy as jnp
from purejit import errors, traceback_util, tree_util
from purejit.extend import core as pcore


def _same_state_inside(lib, state_fn, transform: str) -> list[bool]:
    """Whether the trace state inside a transformation equals the one outside (and whether
    two taken in the same place are equal)."""
    outside = state_fn()
    seen = []

    def f(x):
        seen.append(state_fn() == outside)
        seen.append(state_fn() == state_fn())
        return x * 2.0

    x = np.ones(2, np.float32)
    if transform == "jit":
        lib.jit(f)(x)
    elif transform == "grad":
        lib.grad(lambda v: f(v).sum())(x)
    elif transform == "vmap":
        lib.vmap(f)(x)
    else:
        f(x)
    return seen


@pytest.mark.parametrize("transform", ["none", "jit", "grad", "vmap"])
def test_opaque_trace_state_matches_jax(transform):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = _same_state_inside(jax, jax.extend.core.get_opaque_trace_state, transform)
    got = _same_state_inside(purejit, purejit.core.get_opaque_trace_state, transform)
    assert got == want == ([True, True] if transform == "none" else [False, True])
    with pytest.raises(TypeError):
        hash(purejit.core.get_opaque_trace_state())  # compared, never a key (as JAX's)


class _Variable:
    """The check Flax's nnx Variables make: mutation only under the trace that made them."""

    def __init__(self, state_fn, value):
        self._state_fn, self._state, self.value = state_fn, state_fn(), value

    def set(self, value):
        if self._state_fn() != self._state:
            raise RuntimeError("Cannot mutate Variable from a different trace level")
        self.value = value


@pytest.mark.parametrize("lib", ["purejit", "jax"])
def test_mutating_an_outer_variable_inside_jit_raises(lib):
    top = purejit if lib == "purejit" else jax
    state_fn = (
        purejit.core.get_opaque_trace_state
        if lib == "purejit"
        else jax.extend.core.get_opaque_trace_state
    )
    v = _Variable(state_fn, 1.0)

    def step(x):
        v.set(x)  # would leak the tracer into v
        return x

    with pytest.raises(RuntimeError, match="different trace level"):
        top.jit(step)(np.float32(2.0))
    assert v.value == 1.0

    def inner(x):  # a Variable made inside the trace may be mutated there
        w = _Variable(state_fn, x)
        w.set(x * 2)
        return w.value

    assert float(top.jit(inner)(np.float32(3.0))) == 6.0
    v.set(5.0)
    assert v.value == 5.0


def test_every_tracer_is_a_core_tracer():
    kinds = []

    def f(x):
        kinds.append(isinstance(x, purejit.core.Tracer))
        return x * 2.0

    x = np.ones(2, np.float32)
    purejit.jit(f)(x)
    purejit.grad(lambda v: f(v).sum())(x)
    purejit.vmap(f)(x)
    purejit.jit(purejit.grad(lambda v: f(v).sum()))(x)
    assert kinds == [True] * 4
    assert not isinstance(jnp.ones(2), purejit.core.Tracer)


def test_pytree_registry_membership_as_jax():
    class Point:
        def __init__(self, x, y):
            self.x, self.y = x, y

    tree_util.register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda _, c: Point(*c))
    jax.tree_util.register_pytree_node(Point, lambda p: ((p.x, p.y), None), lambda _, c: Point(*c))

    class Plain:
        pass

    for t in (tuple, list, dict, type(None), Point, Plain):
        assert (t in tree_util._registry) == (t in jax_tree_util._registry), t
    entry = tree_util._registry[Point]
    children, aux = entry.to_iter(Point(1, 2))
    again = entry.from_iter(aux, list(children))
    assert (again.x, again.y) == (1, 2)
    assert len(tree_util._registry) == len(list(tree_util._registry))


def test_register_exclusion_points_errors_past_library_frames(tmp_path):
    lib = tmp_path / "_mylib_for_exclusion.py"
    lib.write_text(
        "import purejit.errors as errors\n\n\ndef where():\n    return errors.user_location()\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("_mylib_for_exclusion")
        assert mod.where().startswith("_mylib_for_exclusion.py:")
        traceback_util.register_exclusion(str(lib))
        assert mod.where().startswith("test_trace_state.py:")  # the caller's line
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("_mylib_for_exclusion", None)
        errors._EXCLUDED.remove(str(lib))
        errors._internal_cache.clear()
    assert traceback_util.api_boundary(len) is len
    assert pcore.get_opaque_trace_state is purejit.core.get_opaque_trace_state


def test_aval_helpers_match_jax():
    pc, jc, jx = purejit.core, jax.core, jax.extend.core
    f4, i4 = np.dtype("f4"), np.dtype("i4")
    pairs = [
        (pc.mapped_aval(2, 0, pc.ShapedArray((2, 3), f4)),
         jx.mapped_aval(2, 0, jc.ShapedArray((2, 3), f4))),
        (pc.unmapped_aval(4, 1, pc.ShapedArray((2, 3), f4)),
         jx.unmapped_aval(4, 1, jc.ShapedArray((2, 3), f4))),
        (pc.ShapedArray((2,), i4).to_tangent_aval(), jc.ShapedArray((2,), i4).to_tangent_aval()),
        (pc.ShapedArray((2,), f4).at_least_vspace(), jc.ShapedArray((2,), f4).to_tangent_aval()),
        (pc.get_aval(np.ones(3, f4)), jax.typeof(np.ones(3, f4))),
    ]  # fmt: skip
    for got, want in pairs:
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
    with pytest.raises(ValueError, match="not of size 5"):
        pc.mapped_aval(5, 0, pc.ShapedArray((2,), f4))
    assert issubclass(type("E", (pcore.Effect,), {}), pc.Effect)
