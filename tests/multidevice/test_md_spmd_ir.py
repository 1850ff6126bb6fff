"""Collective ops in the IR: types, text form, the SPMD interpreter, DCE, emission.

Runs in the pytest process: nothing here starts a backend with several devices.
"""

import numpy as np
import pytest

from purejit.backend import stablehlo
from purejit.ir import Builder, TensorType, interpret, parse, print_function, verify
from purejit.ir.interpreter import InterpretError
from purejit.ir.registry import IRTypeError, all_ops
from purejit.ir.spmd import (
    interpret_spmd,
    join_global,
    local_shape,
    replica_groups,
    split_global,
    SpmdError,
)
from purejit.passes.dce import DCE

F32 = np.float32
RNG = np.random.default_rng(0)
COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "collective_permute", "all_to_all"]


def one_op(name, shape, attrs, dtype=F32):
    b = Builder(name)
    x = b.param(TensorType(shape, dtype))
    (y,) = b.op(name, [x], attrs)
    return b.finish([y])


def test_replica_groups_follow_axis_order():
    assert replica_groups((4, 2), ("x", "y"), ("x",)) == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert replica_groups((4, 2), ("x", "y"), ("y",)) == ((0, 1), (2, 3), (4, 5), (6, 7))
    # ("z", "x") on a 2x2x2 mesh: z major, as JAX orders them
    assert replica_groups((2, 2, 2), ("x", "y", "z"), ("z", "x")) == ((0, 4, 1, 5), (2, 6, 3, 7))
    with pytest.raises(SpmdError, match="not in the mesh"):
        replica_groups((4,), ("x",), ("q",))


def test_split_join_round_trip_and_replication():
    x = RNG.standard_normal((8, 6)).astype(F32)
    spec = (("y",), ("x",))
    st = split_global(x, spec, (3, 2), ("x", "y"))
    assert st.shape == (6, 4, 2)
    np.testing.assert_array_equal(st[1], x[4:8, 0:2])  # device 1 = (x=0, y=1)
    np.testing.assert_array_equal(join_global(st, spec, (3, 2), ("x", "y")), x)
    rep = split_global(x, ((), ()), (3, 2), ("x", "y"))
    assert all((r == x).all() for r in rep)
    with pytest.raises(SpmdError, match="does not divide"):
        local_shape("t", (7, 2), (("x",), ()), {"x": 2})


@pytest.mark.parametrize(
    "computation,fn",
    [("add", np.sum), ("maximum", np.max), ("minimum", np.min), ("multiply", np.prod)],
)
def test_all_reduce_over_groups(computation, fn):
    g = replica_groups((4, 2), ("x", "y"), ("x",))
    f = one_op("all_reduce", (3,), {"replica_groups": g, "computation": computation})
    xs = RNG.standard_normal((8, 3)).astype(F32)
    (out,) = interpret_spmd(f, xs)
    for grp in g:
        for d in grp:
            np.testing.assert_allclose(out[d], fn(xs[list(grp)], axis=0), rtol=1e-6)


def test_gather_scatter_permute_all_to_all():
    g = ((0, 1, 2, 3),)
    xs = RNG.standard_normal((4, 4, 2)).astype(F32)
    (ag,) = interpret_spmd(
        one_op("all_gather", (4, 2), {"replica_groups": g, "all_gather_dim": 1}), xs
    )
    np.testing.assert_array_equal(ag[2], np.concatenate(list(xs), axis=1))
    (rs,) = interpret_spmd(
        one_op(
            "reduce_scatter",
            (4, 2),
            {"replica_groups": g, "scatter_dimension": 0, "computation": "add"},
        ),
        xs,
    )
    np.testing.assert_allclose(rs[3], xs.sum(0)[3:4], rtol=1e-6)
    (cp,) = interpret_spmd(
        one_op("collective_permute", (4, 2), {"source_target_pairs": ((0, 1), (1, 2), (3, 0))}), xs
    )
    np.testing.assert_array_equal(cp[1], xs[0])
    np.testing.assert_array_equal(cp[3], np.zeros((4, 2), F32))
    (a2a,) = interpret_spmd(
        one_op(
            "all_to_all",
            (4, 2),
            {"replica_groups": g, "split_dimension": 0, "concat_dimension": 1, "split_count": 4},
        ),
        xs,
    )
    assert a2a.shape == (4, 1, 8)
    np.testing.assert_array_equal(a2a[2], np.concatenate([xs[j][2:3] for j in range(4)], axis=1))


def test_ordinary_ops_run_per_device_and_partition_id():
    b = Builder("body")
    x = b.param(TensorType((2,), F32))
    (p,) = b.op("partition_id")
    (pf,) = b.op("convert", [p], {"dtype": np.dtype(F32)})
    (pb,) = b.op("broadcast_in_dim", [pf], {"shape": (2,), "broadcast_dimensions": ()})
    (y,) = b.op("multiply", [x, pb])
    f = b.finish([y])
    xs = np.ones((4, 2), F32)
    (out,) = interpret_spmd(f, xs)
    np.testing.assert_array_equal(out, np.arange(4, dtype=F32)[:, None] * xs)


def _manual_program():
    inner = Builder("body")
    y = inner.param(TensorType((2, 4), F32))
    g = replica_groups((4, 2), ("x", "y"), ("x",))
    (s,) = inner.op("all_reduce", [y], {"replica_groups": g, "computation": "add"})
    (a,) = inner.op(
        "all_gather",
        [y],
        {"replica_groups": replica_groups((4, 2), ("x", "y"), ("y",)), "all_gather_dim": 1},
    )
    body = inner.finish([s, a])
    b = Builder("main")
    x = b.param(TensorType((8, 8), F32))
    outs = b.op(
        "manual_computation",
        [x],
        {
            "axis_names": ("x", "y"),
            "mesh_shape": (4, 2),
            "device_ids": tuple(range(8)),
            "in_specs": ((("x",), ("y",)),),
            "out_specs": (((), ("y",)), (("x",), ())),
        },
        [body],
    )
    return b.finish(outs)


def test_manual_computation_interprets_whole_program():
    fn = verify(_manual_program())
    x = RNG.standard_normal((8, 8)).astype(F32)
    s, a = interpret(fn, x)
    np.testing.assert_allclose(s, x.reshape(4, 2, 8).sum(0), rtol=1e-5)
    np.testing.assert_array_equal(a, x)
    text = print_function(fn)
    assert print_function(parse(text)) == text
    assert "manual_computation" in text and "all_reduce" in text


def test_type_rules_reject_bad_collectives():
    with pytest.raises(IRTypeError, match="different sizes"):
        one_op("all_reduce", (2,), {"replica_groups": ((0, 1), (2,)), "computation": "add"})
    with pytest.raises(IRTypeError, match="does not divide"):
        one_op(
            "reduce_scatter",
            (3,),
            {"replica_groups": ((0, 1),), "scatter_dimension": 0, "computation": "add"},
        )
    with pytest.raises(IRTypeError, match="send or receive twice"):
        one_op("collective_permute", (2,), {"source_target_pairs": ((0, 1), (2, 1))})
    with pytest.raises(IRTypeError, match="split_count"):
        one_op(
            "all_to_all",
            (4,),
            {
                "replica_groups": ((0, 1),),
                "split_dimension": 0,
                "concat_dimension": 0,
                "split_count": 4,
            },
        )
    with pytest.raises(IRTypeError, match="computation"):
        one_op(
            "all_reduce", (2,), {"replica_groups": ((0,),), "computation": "add"}, dtype=np.bool_
        )


def test_plain_interpreter_is_one_device():
    f = one_op("all_reduce", (2,), {"replica_groups": ((0,),), "computation": "add"})
    np.testing.assert_array_equal(interpret(f, np.ones(2, F32))[0], np.ones(2, F32))
    g = one_op("all_reduce", (2,), {"replica_groups": ((0, 1),), "computation": "add"})
    with pytest.raises(InterpretError, match="interpret_spmd"):
        interpret(g, np.ones(2, F32))


def test_dce_keeps_unused_collectives():
    b = Builder("f")
    x = b.param(TensorType((2,), F32))
    b.op("all_reduce", [x], {"replica_groups": ((0,),), "computation": "add"})
    b.op("negate", [x])  # dead
    fn = b.finish([x])
    res = DCE()(fn)
    names = [op.name for op in res.fn.ops]
    assert names == ["all_reduce"], names
    for name in COLLECTIVES:
        assert "collective" in all_ops()[name].traits and "pure" not in all_ops()[name].traits


def test_lowering_is_valid_mlir():
    for name in COLLECTIVES + ["partition_id", "manual_computation"]:
        assert name in stablehlo.LOWERINGS
    text = stablehlo.emit(_manual_program(), num_partitions=8)
    assert 'sdy.mesh @mesh = <["x"=4, "y"=2]>' in text
    assert "use_global_device_ids" in text and "sdy.manual_computation" in text
    stablehlo.verify_module(text)


def test_cse_merges_partition_ids_but_never_collectives():
    from purejit.passes.cse import CSE

    b = Builder("f")
    x = b.param(TensorType((2,), F32))
    g = {"replica_groups": ((0,),), "computation": "add"}
    (s1,) = b.op("all_reduce", [x], g)
    (s2,) = b.op("all_reduce", [x], g)
    (p1,) = b.op("partition_id")
    (p2,) = b.op("partition_id")
    fn = verify(b.finish([s1, s2, p1, p2]))
    names = [op.name for op in CSE()(fn).fn.ops]
    assert names.count("all_reduce") == 2 and names.count("partition_id") == 1, names
