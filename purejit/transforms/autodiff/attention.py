"""JVP and transpose rules of the attention family (`ir/ops/attention.py`).

The JVP of `dot_product_attention` runs the op with its softmax statistics and leaves the
output's tangent to `dot_product_attention_lin`, an op linear in the tangents of q, k, v (and
bias) whose other operands (the primals, the output and the statistics) are residuals. In
forward mode the lin op is evaluated (decomposed). In reverse mode it sits in the linear
program and its transpose is `dot_product_attention_bwd`: the fused backward from the saved
output and statistics, so reverse mode never transposes a decomposed JVP and never keeps the
T×S probabilities. The sequence lengths are integers (no tangent); the statistics result has
a zero derivative (it is what JAX's `return_residual` gives, under a stop_gradient).

Second derivatives go through decompositions: the JVP of the backward op (and of the lin op
along its residuals) is the JVP of its XLA-path program written with IR ops
(`backend/lowering/_attention_xla.py`) with the probabilities recomputed from the logits
(the statistics result is treated as JAX treats its residual, with a zero tangent), so
`hessian` and forward-over-reverse work.
"""

from __future__ import annotations

from purejit.backend.lowering.attention import xla_backward, xla_tangent
from purejit.ir import Builder, Op, TensorType
from purejit.ir.ops.attention import BWD, FWD, LIN, split_operands
from purejit.transforms.autodiff import interpreter as interp
from purejit.transforms.autodiff._core import (
    LINEAR_OPS,
    Zero,
    aval,
    defjvp,
    deftranspose,
    instantiate,
    is_linear,
    ops,
    tangent_aval,
)


def _plain(attrs) -> dict:
    """The shared attributes of the family (without the lin/bwd extras)."""
    keys = ("scale", "mask", "window", "has_bias", "has_seq_lengths", "precision")
    return {k: attrs[k] for k in keys if k in attrs}


@defjvp(FWD)
def _attention_jvp(ctx, primals, tangents, attrs, regions):
    out, stats = ops(FWD, *primals, **dict(attrs, return_stats=True))
    q, k, v, bias, *_ = split_operands(FWD, list(primals), attrs)
    tq, tk, tv, tb, *_ = split_operands(FWD, list(tangents), attrs)
    ts = [instantiate(t, tangent_aval(aval(p))) for t, p in ((tq, q), (tk, k), (tv, v))]
    with_bias = bias is not None and not isinstance(tb, Zero)
    if with_bias:
        ts.append(tb)
    lin_attrs = dict(_plain(attrs), return_stats=False, bias_tangent=with_bias)
    (t_out,) = ops(LIN, *primals, out, stats, *ts, **lin_attrs)
    if attrs["return_stats"]:
        return [out, stats], [t_out, Zero(tangent_aval(aval(stats)))]
    return [out], [t_out]


def _decomposed(name, build, primals, tangents, attrs, ctx):
    """The JVP of `name`'s XLA-path program (`build(builder, op, *params)`) at `primals`."""
    b = Builder(name + "_decomposed")
    params = [b.param(TensorType(aval(p).shape, aval(p).dtype)) for p in primals]
    fn = b.finish(build(b, Op(name, params, attrs, []), *params, recompute=True))
    return interp.jvp_function(fn, primals, tangents, ctx)


@defjvp(LIN)
def _lin_jvp(ctx, primals, tangents, attrs, regions):
    nt = 3 + attrs["bias_tangent"]
    if any(not isinstance(t, Zero) for t in tangents[: len(primals) - nt]):
        return _decomposed(LIN, xla_tangent, primals, tangents, attrs, ctx)
    # linear in its tangent operands: the same map applied to their tangents
    outs = ops(LIN, *primals, **attrs)
    ts = [instantiate(t, aval(p)) for t, p in zip(tangents[-nt:], primals[-nt:])]
    return outs, ops(LIN, *primals[:-nt], *ts, **attrs)


@deftranspose(LIN)
def _lin_t(cts, operands, attrs, regions):
    nt = 3 + attrs["bias_tangent"]
    res, lin = operands[:-nt], operands[-nt:]
    (ct,) = cts
    none = [None] * len(res)
    if isinstance(ct, Zero):
        return none + [Zero(aval(x)) if is_linear(x) else None for x in lin]
    bias_grad = attrs["bias_tangent"] and is_linear(lin[3])
    bwd_attrs = dict(_plain(attrs), return_stats=False, bias_grad=bias_grad)
    grads = ops(BWD, *res, ct, **bwd_attrs)
    return none + [g if is_linear(x) else None for g, x in zip(grads, lin)]


LINEAR_OPS.add(LIN)


@defjvp(BWD)
def _bwd_jvp(ctx, primals, tangents, attrs, regions):
    return _decomposed(BWD, xla_backward, primals, tangents, attrs, ctx)
