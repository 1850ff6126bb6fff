"""What a function's IR objects remember about themselves, and who may read it: the copy
class `Function.copy` gives its copies (which `passes._isomorphism.compare` reads instead of
proving them isomorphic op by op), the effect of an op with regions (`passes.base.has_effect`)
and the pipeline's op counts per function. Each must never be shared by IR that differs."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from purejit.ir import Function, Op, Value, parse, print_function
from purejit.passes import _isomorphism
from purejit.passes._isomorphism import bucket_key, compare
from purejit.passes.base import has_effect
from purejit.passes.pipeline import FixedPoint, Pipeline
from purejit.passes.cse import CSE
from purejit.passes.dce import DCE
from purejit.passes.simplify import Simplify

import purejit

_F = """func @f(%0: f32[4], %1: f32[4]) -> (f32[4], f32[4]) {
  %2 = multiply(%0, %1) : (f32[4])
  %3 = constant() {value=array<f32[]: [2.0]>} : (f32[])
  %4 = reduce(%2, %3) {dimensions=[0]} : (f32[]) region(%5: f32[], %6: f32[]) {
    %7 = add(%5, %6) : (f32[])
    return %7
  }
  %8 = broadcast_in_dim(%4) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %9 = ACT(%8) : (f32[4])
  return %9, %2
}"""


def _fn(act: str = "tanh", const: str = "2.0") -> Function:
    return parse(_F.replace("ACT", act).replace("2.0", const))


@pytest.fixture
def proofs(monkeypatch):
    """The pairs `compare` proved op by op (top level and regions)."""
    made = []
    prove = _isomorphism._prove

    def counted(a, b, constants_ok):
        made.append((a, b))
        return prove(a, b, constants_ok)

    monkeypatch.setattr(_isomorphism, "_prove", counted)
    return made


def test_copies_share_a_class_and_compare_reads_it(proofs):
    a = _fn()
    assert a.copy_class is None
    b = a.copy()
    c = b.copy()
    assert a.copy_class is not None and a.copy_class is b.copy_class is c.copy_class
    # the reduce's region was copied with its function: one class per region too
    assert b.ops[2].regions[0].copy_class is a.ops[2].regions[0].copy_class is not None
    assert compare(a, b).same and compare(c, a).same
    assert compare(b, c, constants_may_differ=False).same
    assert proofs == []  # no op was walked


def _values_and_ops(fn: Function) -> tuple[set, set, set]:
    values, ops, regions = {id(p) for p in fn.params}, set(), set()
    for op in fn.walk():
        ops.add(id(op))
        values.update(id(v) for v in op.results)
        for r in op.regions:
            regions.add(id(r))
            values.update(id(p) for p in r.params)
    return values, ops, regions


def test_a_copy_is_its_source_with_fresh_values_whichever_member_it_is_made_from():
    # one class keeps how to copy its members (made from the first one copied): copies of
    # a copy and of the source print alike and share no value, op or region with either
    a = _fn()
    b = a.copy()
    c = b.copy()
    d = a.copy()
    text = print_function(a)
    assert print_function(b) == print_function(c) == print_function(d) == text
    seen = [_values_and_ops(f) for f in (a, b, c, d)]
    for i in range(4):
        for j in range(i + 1, 4):
            assert all(not (x & y) for x, y in zip(seen[i], seen[j]))
    # another function's class copies that function, not the first one
    other = _fn("logistic", "5.0")
    assert print_function(other.copy()) == print_function(other) != text
    assert other.copy_class is not a.copy_class


def test_functions_that_are_not_copies_are_proved(proofs):
    a, same_text = _fn(), _fn()  # two parses: equal, but no copy of each other
    b = a.copy()
    assert same_text.copy_class is None and compare(b, same_text).same
    assert proofs and proofs[0] == (b, same_text)
    # copies of two different functions are in two classes, and compare says where
    other = _fn("logistic")
    oc = other.copy()
    assert oc.copy_class is not b.copy_class
    assert compare(b, oc).reason == "op 4 is `tanh` vs `logistic`"
    # a differing constant: listed, or a difference when constants must be equal
    k = _fn(const="3.0").copy()
    assert k.copy_class is not b.copy_class
    assert compare(b, k).constants == [1]
    assert compare(b, k, constants_may_differ=False).reason == "op 1 `constant`: a constant differs"
    # a function made from a copy's ops with other results is no copy: proved, and differs
    fewer = Function(b.name, b.params, b.ops, b.results[:1])
    assert fewer.copy_class is None
    assert compare(a, fewer).reason == "2 vs 1 results"


def test_an_unpickled_copy_starts_its_own_class(proofs):
    a = _fn()
    b = a.copy()
    back = pickle.loads(pickle.dumps(b))
    assert back.copy_class is not None and back.copy_class is not a.copy_class
    # still isomorphic, now proved op by op
    assert compare(a, back).same and proofs


def _traced(f, *args) -> Function:
    return purejit.jit(f).trace(*args).jaxpr.fn


def test_an_op_with_regions_knows_its_effect_and_a_rebuilt_op_asks_again():
    def printing(x, pred):
        def loud(v):
            purejit.debug.print("v {}", v)
            return v + 1

        return purejit.lax.cond(pred, loud, lambda v: v - 1, x)

    def quiet(x, pred):
        return purejit.lax.cond(pred, lambda v: v + 1, lambda v: v - 1, x)

    args = (np.float32(1), True)
    (loud,) = [op for op in _traced(printing, *args).ops if op.regions]
    (calm,) = [op for op in _traced(quiet, *args).ops if op.regions]
    assert has_effect(loud) and has_effect(loud)  # the second answer is the one kept
    assert not has_effect(calm) and not has_effect(calm)
    assert loud._effect is True and calm._effect is False
    # the quiet op with the loud one's branches is another op: its own answer
    swapped = calm.rebuilt(calm.operands, loud.regions)
    assert swapped is not calm and has_effect(swapped) and not has_effect(calm)


def test_the_pipelines_op_counts_follow_each_stage():
    # a region that CSE changes and one that no pass touches: every record's counts are
    # those of the function it records
    src = """func @f(%0: f32[4]) -> (f32[], f32[]) {
  %1 = constant() {value=array<f32[]: [0.0]>} : (f32[])
  %2 = reduce(%0, %1) {dimensions=[0]} : (f32[]) region(%3: f32[], %4: f32[]) {
    %5 = add(%3, %4) : (f32[])
    %6 = add(%3, %4) : (f32[])
    %7 = multiply(%5, %6) : (f32[])
    return %7
  }
  %8 = reduce(%0, %1) {dimensions=[0]} : (f32[]) region(%9: f32[], %10: f32[]) {
    %11 = maximum(%9, %10) : (f32[])
    return %11
  }
  %12 = add(%0, %0) : (f32[4])
  return %2, %8
}"""
    fn = parse(src)
    out, records = Pipeline([FixedPoint([Simplify(), CSE(), DCE()])], keep_ir=True).run(fn)
    assert records[0].ops_after == fn.op_count() == 8
    for r in records[1:]:
        assert r.ops_after == r.ir_source.op_count(), r.name
    assert records[-1].ops_after == out.op_count() == 6  # one add and the unused add gone


def test_the_pipelines_op_counts_of_copies_and_of_other_functions():
    # copies of one layer count once; a function of other ops in the same program is
    # counted on its own (never the layer's count)
    layer = _fn()
    shorter = Function("g", layer.params, layer.ops[:1], layer.ops[0].results)
    x, w = parse(_F.replace("ACT", "tanh")).params
    ops = []
    for body in [layer.copy() for _ in range(3)] + [shorter]:
        results = [Value(r.type) for r in body.results]
        ops.append(Op("call", [x, w], {"callee": body.name}, results, [body]))
    fn = Function("main", [x, w], ops, [ops[0].results[0]])
    _, records = Pipeline([DCE()], keep_ir=True).run(fn)
    assert records[0].ops_after == fn.op_count() == 4 + 3 * layer.op_count() + 1


def test_a_copy_class_keeps_its_bucket_key_and_another_function_has_its_own():
    a = _fn()
    b = a.copy()
    key = bucket_key(b)
    assert a.copy_class.bucket == key == bucket_key(_fn())  # as computed for a fresh parse
    assert bucket_key(a) is key  # the class's, not made again
    other = _fn("logistic").copy()
    assert bucket_key(other) != key and other.copy_class.bucket != key
