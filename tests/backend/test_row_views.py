"""Zero-copy views of a stacked device buffer (`purejit.backend.row_views`): each view's
address is the stack's plus its piece's offset, it reads the piece's values, the stack lives
until its last view dies (the keep-alive table empties), an unaligned piece is a copy, and a
view is an argument of a purejit program like any buffer."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import purejit
import purejit.numpy as pnp
from purejit.backend import pjrt, row_views
from purejit.runtime.array import Array
from purejit.tracing import ShapedArray

pytestmark = pytest.mark.skipif(not row_views.available(), reason="no DLPack import here")


def _stack(n=6, width=64):
    host = np.arange(n * width, dtype=np.float32).reshape(n, width)
    return host, pjrt.to_device(np.array(host))


def test_views_of_rows_are_the_stacks_memory_and_values():
    host, stack = _stack()
    base = stack.unsafe_buffer_pointer()
    bufs, viewed = row_views.views(stack, [(k * 64, (8, 8)) for k in range(6)])
    assert viewed == [True] * 6
    for k, b in enumerate(bufs):
        assert b.unsafe_buffer_pointer() == base + k * 64 * 4  # no copy
        assert row_views.is_view_of(b, stack, k * 64)
        assert not row_views.is_view_of(b, stack, (k + 1) * 64)
        np.testing.assert_array_equal(np.asarray(b), host[k].reshape(8, 8))


def test_the_stack_lives_until_its_last_view_dies():
    before = row_views.live_views()
    host, stack = _stack()
    bufs, _ = row_views.views(stack, [(k * 64, (64,)) for k in range(6)])
    assert row_views.live_views() == before + 6
    assert row_views.live_views_of(stack) == 6
    del stack
    gc.collect()
    # the stack is gone from here; its views still read its memory
    np.testing.assert_array_equal(np.asarray(bufs[5]), host[5])
    del bufs[:3]
    gc.collect()
    assert row_views.live_views() == before + 3
    np.testing.assert_array_equal(np.asarray(bufs[0]), host[3])
    del bufs
    gc.collect()
    assert row_views.live_views() == before  # nothing kept: no leak


def test_an_unaligned_piece_is_a_copy():
    host, stack = _stack(2, 64)
    # element 1 is 4 bytes into the stack: not aligned, so a copy of the right values
    bufs, viewed = row_views.views(stack, [(1, (4,)), (64, (64,))])
    assert viewed == [False, True]
    assert bufs[0].unsafe_buffer_pointer() != stack.unsafe_buffer_pointer() + 4
    np.testing.assert_array_equal(np.asarray(bufs[0]), host[0, 1:5])
    assert row_views.live_views_of(stack) == 1


def test_a_view_is_an_argument_of_a_purejit_program():
    host, stack = _stack()
    bufs, _ = row_views.views(stack, [(k * 64, (8, 8)) for k in range(6)])
    aval = ShapedArray((8, 8), np.dtype(np.float32))
    arrays = [Array.from_buffer(b, aval) for b in bufs]
    f = purejit.jit(lambda a, b: a @ b + 1.0)
    got = f(arrays[1], arrays[4])
    want = host[1].reshape(8, 8) @ host[4].reshape(8, 8) + 1.0
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    # and in an eager op
    np.testing.assert_array_equal(np.asarray(pnp.sum(arrays[2])), host[2].sum())


_CHILD = """
import atexit, sys
# registered first, so it runs last: after row_views' handler
atexit.register(lambda: print("left at exit:", sys.modules[
    "purejit.backend.row_views"].live_views(), flush=True))
import numpy as np
from purejit.backend import pjrt, row_views
stack = pjrt.to_device(np.arange(6 * 64, dtype=np.float32))
KEPT, viewed = row_views.views(stack, [(k * 64, (64,)) for k in range(6)])
assert viewed == [True] * 6
print("live:", row_views.live_views(), flush=True)
"""


def test_views_alive_at_exit_are_deleted_before_python_goes_away():
    # jaxlib destroying views while the interpreter finalises called the ctypes deleter too
    # late (a segfault on a GPU): the atexit handler deletes them while Python is whole
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "live: 6" in run.stdout
    assert "left at exit: 0" in run.stdout, run.stdout
