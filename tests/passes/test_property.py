"""Property test: random programs of 5-40 ops give the same numbers in the interpreter
before and after the full pipeline, and the compiled program (flat, and with purejit's
groups as XLA's kernels where the back end allows) agrees."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from purejit.ir import Builder, TensorType, interpret, print_function, verify
from purejit.passes import Pipeline
from purejit.passes.cse import CSE
from purejit.passes.dce import DCE
from purejit.passes.pipeline import default_passes
from purejit.passes.simplify import Simplify

from purejit.backend import fusion as fb
from purejit.backend import pjrt, stablehlo
from tolerance import dot_tol

F32 = np.dtype(np.float32)
M, V, R = TensorType((4, 6), F32), TensorType((6,), F32), TensorType((4,), F32)
UNARY = ["sine", "cosine", "tanh", "logistic", "abs", "negate"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
KINDS = ["unary", "binary", "splat", "bcast_row", "reduce_bcast", "transpose2", "reshape2",
         "convert2", "select", "unary"]  # fmt: skip


def _add_reduce_region():
    b = Builder("region")
    p, q = b.param(TensorType((), F32)), b.param(TensorType((), F32))
    return b.finish(b.op("add", [p, q]))


def build(steps) -> "Function":  # noqa: F821
    """A random program over f32[4,6] values from a list of (kind, i, j, k) choices."""
    b = Builder("random")
    mats = [b.param(M), b.param(M)]
    vec = b.param(V)
    for kind, i, j, k in steps:
        if sum(1 + sum(len(r.ops) for r in o.regions) for o in b.ops) > 34:
            break  # programs of 5 to 40 ops (a step adds at most 5)
        x, y = mats[i % len(mats)], mats[j % len(mats)]
        if kind == "unary":
            (out,) = b.op(UNARY[k % len(UNARY)], [x])
        elif kind == "binary":
            (out,) = b.op(BINARY[k % len(BINARY)], [x, y])
        elif kind == "splat":  # constants 0, 1, 2, -1 broadcast: identities and folding
            (c,) = b.op("constant", [], {"value": np.array([0, 1, 2, -1][k % 4], F32)})
            (s,) = b.op("broadcast_in_dim", [c], {"shape": M.shape, "broadcast_dimensions": ()})
            (out,) = b.op(BINARY[k % len(BINARY)], [x, s] if i % 2 else [s, x])
        elif kind == "bcast_row":
            (r,) = b.op("broadcast_in_dim", [vec], {"shape": M.shape, "broadcast_dimensions": (1,)})
            (out,) = b.op("multiply", [x, r])
        elif kind == "reduce_bcast":  # a row reduction broadcast back (must not be duplicated)
            (z,) = b.op("constant", [], {"value": np.array(0, F32)})
            (r,) = b.op("reduce", [x, z], {"dimensions": (1,)}, [_add_reduce_region()])
            (rb,) = b.op("broadcast_in_dim", [r], {"shape": M.shape, "broadcast_dimensions": (0,)})
            (out,) = b.op("subtract", [y, rb])
        elif kind == "transpose2":
            (t,) = b.op("transpose", [x], {"permutation": (1, 0)})
            (t,) = b.op(UNARY[k % len(UNARY)], [t])
            (out,) = b.op("transpose", [t], {"permutation": (1, 0)})
        elif kind == "reshape2":
            (t,) = b.op("reshape", [x], {"shape": (24,)})
            (out,) = b.op("reshape", [t], {"shape": M.shape})
        elif kind == "convert2":  # exact round trip (collapses) or lossy one (stays)
            dt = np.dtype(np.float64) if k % 2 else np.dtype(np.float16)
            (t,) = b.op("convert", [x], {"dtype": dt})
            (out,) = b.op("convert", [t], {"dtype": F32})
        else:  # select(x > y, x, y)
            (p,) = b.op("compare", [x, y], {"comparison_direction": "GT"})
            (out,) = b.op("select", [p, x, y])
        mats.append(out)
    results = [mats[-1]] + [mats[len(mats) // 2]]
    return verify(b.finish(results))


STEP = st.tuples(st.sampled_from(KINDS), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99))


def _inputs(fn, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, p.type.shape).astype(np.float32) for p in fn.params]


@settings(max_examples=60, deadline=None)
@given(st.lists(STEP, min_size=5, max_size=20), st.integers(0, 2**31))
def test_pipeline_keeps_the_numbers(steps, seed):
    fn = build(steps)
    assert 5 <= fn.op_count() <= 40
    opt, _ = Pipeline().run(fn)
    args = _inputs(fn, seed)
    for a, b in zip(interpret(fn, *args), interpret(opt, *args)):
        np.testing.assert_array_equal(b, a)  # the same reference rules: the same numbers


@settings(max_examples=60, deadline=None)
@given(st.lists(STEP, min_size=5, max_size=20))
def test_passes_marked_idempotent_are(steps):
    # the pass manager skips an `idempotent` pass whose input is its own last output, so
    # running it again must find nothing to do
    fn = Simplify()(build(steps)).fn  # exposes duplicates for CSE and dead ops for DCE
    for p in (CSE(), DCE()):
        assert p.idempotent
        once = p(fn)
        twice = p(once.fn)
        assert not twice.changed, p.name
        assert print_function(twice.fn) == print_function(once.fn)


CAP = fb.probe_route()


def _compile_run(fn, route, args):
    text, off = fb.emit(fn, CAP) if route != "xla" else (stablehlo.emit(fn), ())
    exe = pjrt.compile(text, fn.param_types, fn.result_types, disable_xla_passes=off)
    return [np.asarray(o) for o in exe.execute([pjrt.to_device(a) for a in args])]


# derandomized so CI is deterministic. History: XLA CPU aborted the whole process
# (`Check failed: has_layout()`) on programs whose realised `mhlo.fusion` groups read or
# wrote pred values; the route now keeps pred values out of group boundaries
# (tests/passes/fusion_abort_repro.py runs 300 random programs without an abort)
@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(st.lists(STEP, min_size=5, max_size=20), st.integers(0, 2**31))
def test_compiled_program_agrees_with_the_interpreter(steps, seed):
    fn = build(steps)
    args = _inputs(fn, seed)
    want = interpret(fn, *args)
    flat, _ = Pipeline().run(fn)
    routes = [("xla", flat)]
    if CAP.realised:
        realised, _ = Pipeline(default_passes(**CAP.fusion_options())).run(fn)
        routes.append((CAP.route, realised))
    for route, prog in routes:
        for g, w in zip(_compile_run(prog, route, args), want):
            np.testing.assert_allclose(g, w, **dot_tol(2e-4, 2e-5), equal_nan=True)
