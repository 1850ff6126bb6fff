"""Transformations of a jitted function called outside jit, against JAX in the same process.

    python -m bench.eager_grad [--calls 1000] [--rounds 5] [--quick]

Workloads (each written once against a NumPy-like namespace, arguments on the device):

    grad(jit(mlp loss))        a 3-layer MLP's mean squared error, gradient in the parameters
    value_and_grad(jit(loss))  a one-block transformer's loss (bench.models), value and
                               gradient in the parameters
    vjp(jit(mlp loss))         the forward pass, then the pullback of a cotangent
    vmap(jit(mlp))             the MLP mapped over a batch of inputs, parameters shared
    grad(python control flow)  no jit: a loss with a Python `if` on a value (purejit and JAX
                               both evaluate eagerly, op by op; fewer calls)

Each round times `--calls` calls of purejit, then of JAX (alternating which goes first),
between two synchronisations; the figure is the median over `--rounds` rounds, and the
ratio purejit / JAX (below 1: purejit faster). Speed is reported, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench import models


def _mlp(xp, params, x):
    h = x
    for w, b in params[:-1]:
        h = xp.tanh(h @ w + b)
    w, b = params[-1]
    return h @ w + b


def _mlp_params(rng, sizes):
    return [
        ((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32))
        for a, b in zip(sizes[:-1], sizes[1:])
    ]


def _workloads(rng):
    """(name, make(xp, fw) -> (callable, args), calls scale) per workload; `fw` holds the
    framework's jit, grad, value_and_grad, vjp, vmap."""
    mlp_p = _mlp_params(rng, [32, 64, 64, 10])
    x = rng.standard_normal((16, 32)).astype(np.float32)
    y = rng.standard_normal((16, 10)).astype(np.float32)
    tf_p = models.transformer_params(1, 64, rng)
    tx = rng.standard_normal((2, 16, 64)).astype(np.float32)
    xs = rng.standard_normal((8, 16, 32)).astype(np.float32)

    def mlp_loss(xp):
        return lambda p, x, y: xp.mean((_mlp(xp, p, x) - y) ** 2)

    def grad_mlp(xp, fw):
        return fw.grad(fw.jit(mlp_loss(xp))), (mlp_p, x, y)

    def vg_transformer(xp, fw):
        def loss(p, x):
            return xp.mean(models.transformer(xp, p, x, heads=4) ** 2)

        return fw.value_and_grad(fw.jit(loss)), (tf_p, tx)

    def vjp_mlp(xp, fw):
        f = fw.jit(lambda p, x: _mlp(xp, p, x))
        ct = np.ones((16, 10), np.float32)

        def run(p, x, ct):
            out, pull = fw.vjp(f, p, x)
            return out, pull(ct)

        return run, (mlp_p, x, ct)

    def vmap_mlp(xp, fw):
        f = fw.jit(lambda p, x: _mlp(xp, p, x))
        return fw.vmap(f, in_axes=(None, 0)), (mlp_p, xs)

    def control_flow(xp, fw):
        def loss(w, x):
            h = xp.tanh(x @ w)
            s = xp.sum(h)
            if s > 0:  # a Python branch on a value: needs eager differentiation
                return xp.sum(h * h)
            return xp.sum(xp.sin(h))

        return fw.grad(loss), (mlp_p[0][0], x)

    return [
        ("grad(jit(mlp loss))", grad_mlp, 1.0),
        ("value_and_grad(jit(transformer loss))", vg_transformer, 1.0),
        ("vjp(jit(mlp)) + pullback", vjp_mlp, 1.0),
        ("vmap(jit(mlp))", vmap_mlp, 1.0),
        ("grad(python if), no jit", control_flow, 0.1),
    ]


class _Fw:
    def __init__(self, mod):
        self.jit, self.grad, self.vmap = mod.jit, mod.grad, mod.vmap
        self.value_and_grad, self.vjp = mod.value_and_grad, mod.vjp


def _block(out):
    import jax

    for leaf in jax.tree_util.tree_leaves(out, is_leaf=lambda v: hasattr(v, "block_until_ready")):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()


def _time(fn, args, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        out = fn(*args)
    _block(out)
    return (time.perf_counter() - t0) / calls


def run(calls: int, rounds: int) -> list[tuple[str, float, float]]:
    import jax
    import jax.numpy as jxnp

    import purejit
    import purejit.numpy as pnp

    rng = np.random.default_rng(0)
    rows = []
    for name, make, scale in _workloads(rng):
        n = max(int(calls * scale), 20)
        pf, pargs = make(pnp, _Fw(purejit))
        jf, jargs = make(jxnp, _Fw(jax))
        on_device = lambda put, args: jax.tree_util.tree_map(  # noqa: E731
            lambda a: put(np.asarray(a, np.float32)), args
        )
        pargs = on_device(pnp.asarray, pargs)
        jargs = on_device(jax.device_put, jargs)
        for leaf_p, leaf_j in zip(
            jax.tree_util.tree_leaves(pf(*pargs)), jax.tree_util.tree_leaves(jf(*jargs))
        ):  # same numbers (and warm caches)
            np.testing.assert_allclose(np.asarray(leaf_p), np.asarray(leaf_j), rtol=2e-4, atol=2e-5)
        for _ in range(3):
            _block(pf(*pargs))
            _block(jf(*jargs))
        ours, theirs = [], []
        for r in range(rounds):
            order = [(pf, pargs, ours), (jf, jargs, theirs)]
            for fn, args, into in order if r % 2 == 0 else order[::-1]:
                into.append(_time(fn, args, n))
        p, j = statistics.median(ours), statistics.median(theirs)
        rows.append((name, p, j))
        print(f"{name:40s} purejit {p * 1e6:9.1f} us  jax {j * 1e6:9.1f} us  ratio {p / j:5.2f}")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="50 calls, 3 rounds")
    a = ap.parse_args(argv)
    calls, rounds = (50, 3) if a.quick else (a.calls, a.rounds)
    import jax

    print(f"{jax.devices()[0].platform}: median of {rounds} rounds of {calls} calls")
    run(calls, rounds)


if __name__ == "__main__":
    main()
