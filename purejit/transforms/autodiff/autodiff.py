"""Rules of the autodiff family (`ir/ops/autodiff.py`): `stop_gradient` has a zero
derivative; `optimization_barrier` is the identity, kept on tangents and cotangents too."""

from __future__ import annotations

from purejit.transforms.autodiff._core import LINEAR_OPS, Zero, aval, defjvp, deftranspose, op, ops


@defjvp("stop_gradient")
def _stop_gradient_jvp(ctx, primals, tangents, attrs, regions):
    y = op("stop_gradient", primals[0])
    return [y], [Zero(aval(y))]


def _barrier(xs):
    live = [x for x in xs if not isinstance(x, Zero)]
    got = iter(ops("optimization_barrier", *live) if live else [])
    return [x if isinstance(x, Zero) else next(got) for x in xs]


@defjvp("optimization_barrier")
def _barrier_jvp(ctx, primals, tangents, attrs, regions):
    return ops("optimization_barrier", *primals), _barrier(tangents)


@deftranspose("optimization_barrier")
def _barrier_t(cts, operands, attrs, regions):
    return _barrier(cts)


LINEAR_OPS.update({"optimization_barrier"})
