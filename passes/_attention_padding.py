"""Padding by sequence lengths in attention written by hand (JAX's XLA path writes it so).

A mask that depends on the data is fused only in one shape, whose blank rows are proved to
come out as the fused op's do:

    keep = ∧ constant factors ∧ (iota_t < q_len[b]) ∧ (iota_s < kv_len[b])

with the position an iota along the query or key axis (evaluated on the host) and the
length a vector over one batch dimension. A row with kv_len 0 is blank in both programs and
gets uniform weights in both (the op's definition); rows past q_len get uniform weights in
the written program, so a q_len factor is fused only when the written output is then
multiplied by the same `iota_t < q_len[b]` (JAX's `encoded *= mask`), which zeroes them as
the op does.
"""

from __future__ import annotations

import numpy as np

from purejit.ir import Value, dtypes
from purejit.passes._attention_match import Graph, Refused, host_value

# every refusal here starts so: a blank row gives uniform weights in the written program
DATA = "the mask depends on the data (rows may be blank)"


def _broadcast_labels(op, labels: list) -> list:
    """The labels of a broadcast_in_dim's operand (None where it is broadcast from 1)."""
    (x,) = op.operands
    out = op.results[0].type.shape
    dims = op.attrs["broadcast_dimensions"]
    return [labels[d] if x.type.shape[i] == out[d] else None for i, d in enumerate(dims)]


def _reshape_labels(op, labels: list) -> list | None:
    """The labels of a reshape's operand when it only adds or drops size-1 dimensions."""
    x, out = op.operands[0].type.shape, op.results[0].type.shape
    big_out = [(d, lab) for d, lab in zip(out, labels) if d != 1]
    if [d for d, _ in big_out] != [d for d in x if d != 1]:
        return None
    it = iter(lab for _, lab in big_out)
    return [next(it) if d != 1 else None for d in x]


def split_pred(g: Graph, v: Value, labels: list) -> tuple[list, list]:
    """`(constant factors [(value, labels)], lengths [(axis label, length, batch label)])`
    of a boolean mask that is a conjunction of those; Refused otherwise."""
    if not g.depends_on_params(v):
        return [(v, labels)], []
    op = g.defs.get(v)
    if op is None:
        raise Refused(f"{DATA} and is an input")
    if op.name == "broadcast_in_dim":
        return split_pred(g, op.operands[0], _broadcast_labels(op, labels))
    if op.name == "reshape" and _reshape_labels(op, labels) is not None:
        return split_pred(g, op.operands[0], _reshape_labels(op, labels))
    if op.name == "and":
        c0, l0 = split_pred(g, op.operands[0], labels)
        c1, l1 = split_pred(g, op.operands[1], labels)
        return c0 + c1, l0 + l1
    if op.name == "compare" and op.attrs.get("comparison_direction") in ("LT", "GT"):
        pos, length = op.operands
        if op.attrs["comparison_direction"] == "GT":
            pos, length = length, pos
        return [], [_length_factor(g, pos, length, labels)]
    raise Refused(f"{DATA} in a form other than positions < sequence lengths")


def _length_factor(g: Graph, pos: Value, length: Value, labels: list):
    if g.depends_on_params(pos) or not g.depends_on_params(length):
        raise Refused(
            f"{DATA}: a data-dependent mask compares other things than positions and lengths"
        )
    arr, lab = host_value(g, pos, labels)
    if arr is None:
        raise Refused(f"{DATA}: a position array is too large to check on the host")
    axes = [i for i, n in enumerate(arr.shape) if n > 1]
    if len(axes) != 1 or lab[axes[0]] is None:
        raise Refused(f"{DATA}: the positions compared with a length do not run along one axis")
    (ax,) = axes
    want = np.arange(arr.shape[ax]).reshape([-1 if i == ax else 1 for i in range(arr.ndim)])
    if not np.array_equal(arr, want):
        raise Refused(f"{DATA}: the positions compared with a length are not 0, 1, 2, ...")
    src, batch = length_source(g, length, labels)
    return lab[ax], src, batch


def length_source(g: Graph, v: Value, labels: list) -> tuple[Value, str]:
    """The int32 vector over one batch dimension a broadcast length comes from."""
    while True:
        op = g.defs.get(v)
        if op is not None and op.name == "broadcast_in_dim":
            labels, v = _broadcast_labels(op, labels), op.operands[0]
        elif op is not None and op.name == "reshape" and _reshape_labels(op, labels) is not None:
            labels, v = _reshape_labels(op, labels), op.operands[0]
        else:
            break
    big = [(d, lab) for d, lab in zip(v.type.shape, labels) if d != 1]
    if len(big) != 1 or not str(big[0][1]).startswith("b"):
        raise Refused(f"{DATA}: a sequence length does not vary along exactly one batch dimension")
    if v.type.dtype != np.int32:
        raise Refused(f"{DATA}: sequence lengths are {v.type}, not int32")
    return v, big[0][1]


def zeroed_output(g: Graph, m, q_len: Value, t: str):
    """`(op, labels)` when the attention output (through transposes) is multiplied by
    `iota_t < q_len` and nothing else reads it on the way; else None."""
    v, labels = m.output.results[0], list(m.out_labels)
    while True:
        us = g.users_of(v)
        if len(us) != 1 or us[0] is None:
            return None
        op = us[0]
        if op.name == "transpose":
            labels = [labels[i] for i in op.attrs["permutation"]]
            v = op.results[0]
            continue
        if op.name != "multiply" or op.operands[0] is op.operands[1]:
            return None
        other = op.operands[1] if op.operands[0] is v else op.operands[0]
        olab = list(labels)
        d = g.defs.get(other)
        while d is not None and d.name in ("broadcast_in_dim", "convert"):
            if d.name == "broadcast_in_dim":
                olab = _broadcast_labels(d, olab)
            elif not (
                d.operands[0].type.dtype == np.bool_ and dtypes.is_float(d.results[0].type.dtype)
            ):
                return None
            other = d.operands[0]
            d = g.defs.get(other)
        if other.type.dtype != np.bool_:
            return None
        try:
            consts, lens = split_pred(g, other, olab)
        except Refused:
            return None
        for c, lab in consts:
            arr, _ = host_value(g, c, lab)
            if arr is None or not arr.all():
                return None
        if len(lens) != 1 or lens[0][0] != t or lens[0][1] is not q_len:
            return None
        return op, labels
