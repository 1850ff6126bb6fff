"""Per-call host time of a jitted call whose argument is a registered pytree class holding 16
arrays, against the same arrays in a plain list (the compute is 16 tiny adds):

    python -m bench.tools.pytree_dispatch

Before jaxlib's C++ dispatch knew purejit's registered node types, the first missed to the
Python path on every call."""

from __future__ import annotations

import time


def main():
    import purejit
    import purejit.numpy as jnp
    from purejit.tree_util import register_pytree_node

    class State:
        def __init__(self, xs, step):
            self.xs, self.step = xs, step

    register_pytree_node(State, lambda s: (list(s.xs), s.step), lambda a, c: State(c, a))
    f = purejit.jit(lambda s: State([x + 1.0 for x in s.xs], s.step))
    g = purejit.jit(lambda xs: [x + 1.0 for x in xs])
    xs = [jnp.ones(8) + 0 for _ in range(16)]
    for name, fn, arg in (("registered class", f, State(xs, 3)), ("plain list", g, xs)):
        for _ in range(20):
            out = fn(arg)
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(300):
                out = fn(arg)
            purejit.tree_util.tree_leaves(out)[0].block_until_ready()
            best.append((time.perf_counter() - t0) / 300 * 1e6)
        print(f"{name}: {min(best):.0f} us a call (best of 5 x 300 calls)")


if __name__ == "__main__":
    main()
