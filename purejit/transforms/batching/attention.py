"""Batching rule of the attention family (`ir/ops/attention.py`), as JAX batches cuDNN
attention: the mapped axis joins the batch dimension B (V examples of B become V*B), so the
op runs once, fused, over every example; results are split back to [V, B, ...].

Every operand has B first (q, k, v, the output and its cotangent, the statistics, the tangents,
the sequence lengths); an unbatched one is broadcast over V first. A bias whose B is 1 and
which is not mapped stays as it is (it broadcasts over V*B); any other bias is folded like
the rest, and the bias cotangent is summed back over B where the example's bias had B = 1.
"""

from __future__ import annotations

from purejit.ir.ops.attention import BWD, FWD, LIN
from purejit.tracing import bind, bind1
from purejit.transforms.autodiff._core import reduce_sum, reshape
from purejit.transforms.batching.core import bdim_at_front, defrule, shape


def _fold(axis, x, d):
    """`x` ([B, ...] per example) with the mapped axis folded into B: [V*B, ...]."""
    x = bdim_at_front(axis, x, d)
    s = shape(x)
    return bind1("reshape", x, shape=(s[0] * s[1], *s[2:]))


def _split(axis, y):
    s = shape(y)
    return bind1("reshape", y, shape=(axis.size, s[0] // axis.size, *s[1:]))


def _per_example_b(x, d) -> int:
    """The size of B (dimension 0 of one example) of `x` batched at `d`."""
    s = shape(x)
    return s[0] if d is None or d > 0 else s[1]


def _widen(x, d, b):
    """A bias with B = 1 broadcast to B = b (its mapped axis, if any, kept at `d`)."""
    s = list(shape(x))
    at = 0 if d is None or d > 0 else 1
    rest = tuple(v for i, v in enumerate(s) if i != at)
    s[at] = b
    dims = tuple(i for i in range(len(s)) if i != at)
    x = bind1("reshape", x, shape=rest)
    return bind1("broadcast_in_dim", x, shape=tuple(s), broadcast_dimensions=dims)


def _biases(name, attrs, n) -> set:
    """Operand positions holding a bias (or its tangent)."""
    out = {3} if attrs["has_bias"] else set()
    if name == LIN and attrs.get("bias_tangent"):
        out.add(n - 1)
    return out


def _rule(name):
    def rule(axis, args, dims, **attrs):
        b = _per_example_b(args[0], dims[0])
        grad_bias = name == BWD and attrs.get("bias_grad")
        bias_b = _per_example_b(args[3], dims[3]) if attrs["has_bias"] else None
        folded = []
        for i, (x, d) in enumerate(zip(args, dims)):
            if i in _biases(name, attrs, len(args)) and _per_example_b(x, d) == 1:
                if d is None and not grad_bias:
                    folded.append(x)  # broadcasts over every example and batch element
                    continue
                x = _widen(x, d, b)
            folded.append(_fold(axis, x, d))
        res = [_split(axis, y) for y in bind(name, *folded, **attrs)]
        if grad_bias and bias_b == 1:
            # each example's bias had B = 1: its cotangent sums over B
            s = shape(res[3])
            res[3] = reshape(reduce_sum(res[3], (1,)), (s[0], 1, *s[2:]))
        return res, [0] * len(res)

    return rule


for _name in (FWD, LIN, BWD):
    defrule(_name)(_rule(_name))
