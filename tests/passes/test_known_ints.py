"""The row indices the host loop's split reads rows at (`passes/_known_ints.py`): constants,
and the results of `_row_index.py`'s loop, proved op by op to be its operands; a loop that
may change them proves nothing."""

from __future__ import annotations

import numpy as np

from purejit.ir import Op, TensorType, Value
from purejit.passes._known_ints import int_of
from purejit.passes._row_index import RowIndices

S32 = TensorType((), np.dtype(np.int32))


def _lookup(ops):
    made = {r: o for o in ops for r in o.results}
    return made.get


def test_row_index_loop_results_are_its_operands():
    out: list[Op] = []
    index = RowIndices(4, out)
    values = [index(i) for i in range(4)]
    lookup = _lookup(out)
    assert [int_of(v, lookup) for v in values] == [0, 1, 2, 3]
    assert int_of(index.constant(7), _lookup(out)) == 7


def _loop_with(compare_limit: int, step: int):
    """`_row_index.py`'s loop with the select's limit and the counter's step replaced."""
    out: list[Op] = []
    RowIndices(2, out)(0)
    loop = out[-1]
    cond, body = loop.regions
    ops = []
    for o in body.ops:
        if o.name == "constant" and int(np.asarray(o.attrs["value"])) == 0:
            o = Op("constant", [], {"value": np.asarray(compare_limit, np.int32)}, o.results)
        elif o.name == "constant" and int(np.asarray(o.attrs["value"])) == 1:
            o = Op("constant", [], {"value": np.asarray(step, np.int32)}, o.results)
        ops.append(o)
    body = type(body)(body.name, body.params, ops, body.results)
    new = Op("while", loop.operands, {}, [Value(S32) for _ in loop.results], [cond, body])
    return new.results, _lookup([*out[:-1], new])


def test_a_loop_that_may_change_its_carries_proves_nothing():
    results, lookup = _loop_with(0, 1)
    assert int_of(results[1], lookup) == 0  # as built: proved
    results, lookup = _loop_with(1, 1)  # i < 1 holds on the first trip: the select fires
    assert int_of(results[1], lookup) is None
    results, lookup = _loop_with(0, -1)  # the counter falls below 0
    assert int_of(results[1], lookup) is None
    assert int_of(results[0], lookup) is None  # the counter itself is never known
