"""The pass manager: verification after every pass, disabling by name, dumps, fixed-point
groups, per-pass records, and `compiler_options` of `purejit.jit`."""

import os
from dataclasses import dataclass, field

import numpy as np
import pytest
from purejit.ir import Function, Op, parse, print_function
from purejit.ir.verifier import VerifyError
from purejit.passes import Pipeline
from purejit.passes.cse import CSE
from purejit.passes.dce import DCE
from purejit.passes.pipeline import FixedPoint, PassResult, default_passes
from purejit.passes.simplify import Simplify

import purejit
import purejit.numpy as jnp
from tolerance import dot_tol

SRC = """func @f(%0: f32[4]) -> (f32[4]) {
  %1 = constant() {value=array<f32[]: [1.0]>} : (f32[])
  %2 = broadcast_in_dim(%1) {shape=[4], broadcast_dimensions=[]} : (f32[4])
  %3 = multiply(%0, %2) : (f32[4])
  %4 = negate(%3) : (f32[4])
  %5 = negate(%4) : (f32[4])
  %6 = sine(%5) : (f32[4])
  %7 = sine(%5) : (f32[4])
  %8 = add(%6, %7) : (f32[4])
  return %8
}"""

CLEAN = """func @f(%0: f32[4]) -> (f32[4]) {
  %1 = sine(%0) : (f32[4])
  %2 = add(%1, %1) : (f32[4])
  return %2
}"""


def test_fixed_point_group_repeats_until_nothing_changes():
    group = FixedPoint([Simplify(), CSE(), DCE()], name="cleanup", max_iterations=8)
    fn, records = Pipeline([group]).run(parse(SRC))
    assert print_function(fn) == CLEAN
    rounds = sorted({r.iteration for r in records[1:]})
    assert rounds[0] == 1 and len(rounds) >= 2  # at least one round that changed, one that did not
    last = [r for r in records if r.iteration == rounds[-1]]
    assert not any(r.changed for r in last)
    assert all(r.group == "cleanup" for r in records[1:])
    # records carry op counts, time, report and the IR after each pass
    first = records[1]
    assert first.name == "simplify" and first.ops_before == 8 and first.seconds >= 0
    assert first.report["rewrites"] >= 2 and first.ir.startswith("func @f")


def test_fixed_point_runs_alone_as_a_pass():
    res = FixedPoint([Simplify(), CSE(), DCE()])(parse(SRC))
    assert res.changed and print_function(res.fn) == CLEAN


def test_disable_by_name_inside_a_group_and_whole_group():
    group = FixedPoint([Simplify(), CSE(), DCE()], name="cleanup")
    fn, records = Pipeline([group], disable=["cse"]).run(parse(SRC))
    assert "cse" not in {r.name for r in records}
    assert print_function(fn).count("sine(") == 2  # not merged
    fn, records = Pipeline([group], disable=["cleanup"]).run(parse(SRC))
    assert [r.name for r in records] == ["trace"]
    assert print_function(fn) == SRC


def test_unknown_disabled_name_is_an_error_listing_the_names():
    with pytest.raises(ValueError, match=r"unknown passes \['nope'\].*'cse'"):
        Pipeline(default_passes(), disable=["nope"]).run(parse(SRC))


def test_dump_dir_writes_every_stage(tmp_path):
    group = FixedPoint([Simplify(), DCE()], name="cleanup")
    _, records = Pipeline([group], dump_dir=str(tmp_path)).run(parse(SRC))
    files = sorted(os.listdir(tmp_path))
    assert files[0] == "00_trace.pjir" and files[1] == "01_simplify.1.pjir"
    assert len(files) == len(records)
    text = (tmp_path / files[-1]).read_text()
    assert parse(text)  # each dump is valid IR text
    assert text.strip() == records[-1].ir


@dataclass(frozen=True)
class _Broken:
    """A pass that returns ill-typed IR: the verifier must catch it and name the pass."""

    name: str = "broken"

    def __call__(self, fn: Function) -> PassResult:
        op = fn.ops[0]
        bad = Op("sine", op.operands, {}, [op.results[0]], (), op.loc)
        bad.operands = [fn.params[0], fn.params[0]]
        return PassResult(Function(fn.name, fn.params, [bad, *fn.ops[1:]], fn.results), True)


@pytest.mark.parametrize("each", [True, False])
def test_verifier_names_the_pass_that_broke_the_ir(each):
    # checking only the result (the default outside tests) re-runs the pipeline checking
    # every stage when the result is malformed, so the culprit is named either way
    with pytest.raises(VerifyError, match="after pass 'broken'"):
        Pipeline([CSE(), _Broken(), DCE()], verify_each=each).run(parse(SRC))


@dataclass(frozen=True)
class _Counting:
    name: str = "counting"
    idempotent: bool = True
    calls: list = field(default_factory=list)

    def __call__(self, fn: Function) -> PassResult:
        self.calls.append(fn)
        return PassResult(fn, False)


def test_idempotent_pass_is_not_rerun_on_its_own_output():
    # round 1: simplify changes the function, `counting` sees it; round 2: simplify changes
    # nothing, so `counting` would see exactly its own output again and is skipped
    counting = _Counting()
    _, records = Pipeline([FixedPoint([Simplify(), counting])], verify_each=True).run(parse(SRC))
    assert len(counting.calls) == 1
    assert [(r.name, r.iteration, r.changed) for r in records[1:]] == [
        ("simplify", 1, True),
        ("counting", 1, False),
        ("simplify", 2, False),
    ]


def test_default_pipeline_names():
    names = Pipeline().names()
    for n in ("cleanup", "fold", "simplify", "cse", "dce", "fusion"):
        assert n in names


def _mlp(x, w1, w2, gating1):
    h = jnp.maximum(x @ w1, 0.0)
    _ = x @ gating1  # dead
    return h @ w2


def _mlp_args():
    r = np.random.default_rng(0)
    return [r.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 16), (16, 8), (8, 16)]]


def test_compiler_options_disable_passes_and_dump_dir(tmp_path):
    args = _mlp_args()
    options = {"disable_passes": ["fusion"], "dump_dir": str(tmp_path)}
    f = purejit.jit(_mlp, compiler_options=options)
    lowered = f.lower(*args)
    assert "fusion" not in {r.name for r in lowered.records}
    assert "fusion(" not in lowered.ir()
    assert any(name.endswith("_dce.1.pjir") for name in os.listdir(tmp_path))
    np.testing.assert_allclose(
        np.asarray(f(*args)), np.maximum(args[0] @ args[1], 0) @ args[2], **dot_tol(1e-5, 0)
    )
    assert "fusion(" in purejit.jit(_mlp).lower(*args).ir()  # on by default


def test_compiler_options_are_checked():
    with pytest.raises(ValueError, match="unknown keys \\['fuse'\\]"):
        purejit.jit(_mlp, compiler_options={"fuse": "xla"})
    with pytest.raises(ValueError, match="fusion='tpu'"):
        purejit.jit(_mlp, compiler_options={"fusion": "tpu"})
    with pytest.raises(ValueError, match="unknown passes"):
        purejit.jit(_mlp, compiler_options={"disable_passes": ["nope"]}).lower(*_mlp_args())


def test_seed_mlp_with_dead_matmul_compiles_to_two_dot_generals():
    lowered = purejit.jit(_mlp).lower(*_mlp_args())
    assert sum(op.name == "dot_general" for op in lowered.traced.walk()) == 3
    assert sum(op.name == "dot_general" for op in lowered.fn.walk()) == 2
    assert lowered.as_text().count('"stablehlo.dot_general"') == 2
    hlo = lowered.compile().as_text()
    assert hlo.count(" dot(") == 2


def test_split_defers_a_tail_of_reporting_passes():
    pipe = Pipeline(default_passes())
    head, tail = pipe.split(("fusion", "buffer_assignment"))
    assert head.names()[-1] == "guard_aliased_update"
    assert tail.names() == ["fusion", "buffer_assignment"]
    fn = parse(SRC)
    full, records = pipe.run(fn)
    mid, head_records = head.run(fn)
    done, tail_records = tail.run(mid)
    names = [r.name for r in head_records] + [r.name for r in tail_records[1:]]
    assert names == [r.name for r in records]
    assert print_function(done) == print_function(full)
    # nothing to defer when the tail is not all deferrable, or when stages are dumped
    assert pipe.split(("fusion",)) == (pipe, None)
    assert Pipeline(dump_dir="/tmp/x").split(("fusion", "buffer_assignment"))[1] is None


def test_jit_runs_reporting_passes_when_they_are_read():
    lowered = purejit.jit(lambda x: jnp.sin(x) * 2.0 + 1.0).lower(np.ones(8, np.float32))
    assert "deferred_passes" not in lowered.timings
    assert [r.name for r in lowered.records][-2:] == ["fusion", "buffer_assignment"]
    assert "deferred_passes" in lowered.timings
    np.testing.assert_allclose(
        lowered.compile()(np.ones(8, np.float32)), np.sin(1.0) * 2 + 1, rtol=1e-6
    )
