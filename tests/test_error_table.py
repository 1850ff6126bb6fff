"""Error messages, table-driven: each case runs eager and under `jit`, `grad` and `vmap`, and
every message must name the op or function, the shapes or dtypes involved, what was asked,
and the user's source line (the line of the case below); the traceback is filtered the same
way under every transformation (it ends at the user's line, purejit's frames removed).

A case is one line: a function of a float32[2, 3] array `x` that makes one mistake, the
exception type, and regular expressions the message must match (besides the line).
"""

from __future__ import annotations

import os
import re
import traceback

import numpy as np
import pytest

import purejit
import purejit.numpy as jnp
from purejit import errors, lax


def s(*dims) -> str:
    """A regex for a shape, as purejit and NumPy print it: (2, 3), [2,3] or f32[2,3]."""
    inner = r",\s?".join(map(str, dims))
    return rf"(\({inner},?\)|\[{inner}\])"


F32 = r"(f32|float32)"
I32 = r"(i32|s32|int32)"
ones = np.ones

# name, case, exception, patterns (each must match the message)
CASES = [
    ("add_broadcast", lambda x: x + ones(4, np.float32), (TypeError, ValueError), ["add", s(2, 3), s(4)]),
    ("reshape_size", lambda x: jnp.reshape(x, (4, 5)), (TypeError, ValueError), ["reshape", s(2, 3), s(4, 5)]),
    ("matmul_inner", lambda x: jnp.matmul(x, ones((4, 2), np.float32)), (TypeError, ValueError), ["matmul|dot", s(2, 3), s(4, 2)]),
    ("dot_inner", lambda x: jnp.dot(x, ones((4,), np.float32)), (TypeError, ValueError), ["dot|matmul", s(2, 3), s(4)]),
    ("concatenate_rank", lambda x: jnp.concatenate([x, ones((3,), np.float32)]), (TypeError, ValueError), ["concatenate", s(2, 3), s(3)]),
    ("concatenate_dims", lambda x: jnp.concatenate([x, ones((2, 4), np.float32)], axis=0), (TypeError, ValueError), ["concatenate", s(2, 3), s(2, 4), "axis"]),
    ("transpose_axes", lambda x: jnp.transpose(x, (0, 0)), (TypeError, ValueError), ["transpose", s(2, 3), r"\(0, 0\)"]),
    ("sum_axis", lambda x: jnp.sum(x, axis=3), (TypeError, ValueError, IndexError), ["sum|reduce", "axis 3", "2"]),
    ("mean_axis", lambda x: jnp.mean(x, axis=-3), (TypeError, ValueError, IndexError), ["mean|sum|reduce", "-3", "2"]),
    ("argmax_axis", lambda x: jnp.argmax(x, axis=2), (TypeError, ValueError, IndexError), ["argmax", "axis 2", "2"]),
    ("cumsum_axis", lambda x: jnp.cumsum(x, axis=5), (TypeError, ValueError, IndexError), ["cumsum", "5", "2"]),
    ("flip_axis", lambda x: jnp.flip(x, axis=4), (TypeError, ValueError, IndexError), ["flip", "4", "2"]),
    ("roll_axis", lambda x: jnp.roll(x, 1, axis=3), (TypeError, ValueError, IndexError), ["roll", "3", "2"]),
    ("expand_dims_axis", lambda x: jnp.expand_dims(x, 5), (TypeError, ValueError, IndexError), ["expand_dims", "5", "3"]),
    ("squeeze_non_unit", lambda x: jnp.squeeze(x, axis=0), (TypeError, ValueError), ["squeeze", s(2, 3), "axis 0|0"]),
    ("moveaxis_axis", lambda x: jnp.moveaxis(x, 4, 0), (TypeError, ValueError, IndexError), ["moveaxis", "4", "2"]),
    ("swapaxes_axis", lambda x: jnp.swapaxes(x, 0, 7), (TypeError, ValueError, IndexError), ["swapaxes", "7", "2"]),
    ("broadcast_to", lambda x: jnp.broadcast_to(x, (4, 3)), (TypeError, ValueError), ["broadcast_to", s(2, 3), s(4, 3)]),
    ("where_shapes", lambda x: jnp.where(x > 0, x, ones(4, np.float32)), (TypeError, ValueError), ["where|select|broadcast", s(2, 3), s(4)]),
    ("stack_shapes", lambda x: jnp.stack([x, ones(4, np.float32)]), (TypeError, ValueError), ["stack", s(2, 3), s(4)]),
    ("split_uneven", lambda x: jnp.split(x, 4, axis=1), (TypeError, ValueError), ["split", "4", "3"]),
    ("pad_width", lambda x: jnp.pad(x, ((1, 1), (1, 1), (1, 1))), (TypeError, ValueError), ["pad", s(2, 3), "3"]),
    ("einsum_sizes", lambda x: jnp.einsum("ij,j->i", x, ones(4, np.float32)), (TypeError, ValueError), ["einsum", "3", "4"]),
    ("inv_square", lambda x: jnp.linalg.inv(x), (TypeError, ValueError), ["inv", s(2, 3), "square"]),
    ("take_axis", lambda x: jnp.take(x, np.array([0]), axis=3), (TypeError, ValueError, IndexError), ["take", "3", "2"]),
    ("lax_add_dtypes", lambda x: lax.add(x, ones((2, 3), np.int32)), (TypeError, ValueError), ["add", F32, I32]),
    ("lax_mul_shapes", lambda x: lax.mul(x, ones((3, 2), np.float32)), (TypeError, ValueError), ["mul", s(2, 3), s(3, 2)]),
    ("lax_slice_bounds", lambda x: lax.slice(x, (0, 0), (2, 5)), (TypeError, ValueError, IndexError), ["slice", s(2, 3), r"\(2, 5\)|\[2, ?5\]"]),
    ("lax_dynamic_slice_rank", lambda x: lax.dynamic_slice(x, (0,), (1,)), (TypeError, ValueError), ["dynamic_slice", s(2, 3), "1"]),
    ("lax_broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 4), (0, 1)), (TypeError, ValueError), ["broadcast_in_dim", s(2, 3), s(2, 4)]),
    ("lax_dot_general_dims", lambda x: lax.dot_general(x, x, (((1,), (0,)), ((), ()))), (TypeError, ValueError), ["dot_general", s(2, 3), "3", "2"]),
    ("lax_select_pred", lambda x: lax.select(ones(3, bool), x, x), (TypeError, ValueError), ["select", s(3), s(2, 3)]),
    ("lax_reduce_axes", lambda x: lax.reduce(x, 0.0, lax.add, (4,)), (TypeError, ValueError, IndexError), ["reduce", "4", s(2, 3)]),
    ("cond_branch_types", lambda x: lax.cond(True, lambda v: v, lambda v: v[0], x), (TypeError, ValueError), ["cond", s(2, 3), s(3)]),
    ("scan_carry_type", lambda x: lax.scan(lambda c, r: (c[None], r), x[0], x)[0], (TypeError, ValueError), ["scan", "carry", s(3), s(1, 3)]),
    ("while_body_type", lambda x: lax.while_loop(lambda c: False, lambda c: c[0], x), (TypeError, ValueError), ["while_loop", s(2, 3), s(3)]),
    ("fori_body_dtype", lambda x: lax.fori_loop(0, 2, lambda i, c: c.astype(np.int32), x), (TypeError, ValueError), ["fori_loop|while_loop|scan", F32, I32]),
    ("conv_rank", lambda x: lax.conv(x, x, (1,), "SAME"), (TypeError, ValueError), ["conv", s(2, 3)]),
]  # fmt: skip

MODES = ("eager", "jit", "grad", "vmap")
HERE = os.path.basename(__file__)


def _run(mode: str, f):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    if mode == "eager":
        return f(jnp.asarray(x))
    if mode == "jit":
        return purejit.jit(f)(x)
    if mode == "grad":
        return purejit.grad(lambda v: jnp.sum(jnp.asarray(f(v), jnp.float32)))(x)
    return purejit.vmap(f)(x[None])


def _line(f) -> int:
    return f.__code__.co_firstlineno


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,f,exc,patterns", CASES, ids=[c[0] for c in CASES])
def test_error_names_op_shapes_request_and_line(name, f, exc, patterns, mode):
    with pytest.raises(exc) as info:
        _run(mode, f)
    msg = str(info.value)
    for p in patterns:
        assert re.search(p, msg), f"{mode}: {p!r} not in the message: {msg}"
    assert f"{HERE}:{_line(f)}" in msg, f"{mode}: the user's line is not named: {msg}"
    frames = traceback.extract_tb(info.value.__traceback__)
    inner = [fr for fr in frames if fr.filename.endswith(HERE)]
    assert inner and inner[-1].lineno == _line(f), f"{mode}: {frames}"
    if mode != "eager":
        # filtered the same way under every transformation: the traceback ends at the
        # user's line, none of purejit's frames after it (eager ops are not filtered)
        after = frames[frames.index(inner[-1]) + 1 :]
        internal = [fr for fr in after if errors._internal(fr.filename)]
        assert not internal, f"{mode}: purejit frames left in the traceback: {internal}"


def test_table_has_at_least_30_cases():
    assert len(CASES) >= 30 and len({c[0] for c in CASES}) == len(CASES)
