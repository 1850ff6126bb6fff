"""The compiled forward of purejit.nn.dot_product_attention next to JAX's cuDNN one, and their
times alternating (50 calls each, three times): B8 N16 H64 bf16 causal, T = 2048 or `--t`.

    python -m bench.tools.attention_forward_hlo [--t 4096]
"""

from __future__ import annotations

import argparse
import re
import time

import jax
import ml_dtypes
import numpy as np

import purejit
import purejit.nn as pnn
import purejit.numpy as pnp


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--t", type=int, default=2048, help="sequence length (T = S)")
    b, t, n, h = 8, ap.parse_args().t, 16, 64
    r = np.random.default_rng(0)
    q, k, v = (r.normal(size=(b, t, n, h)).astype(ml_dtypes.bfloat16) for _ in range(3))
    pf = purejit.jit(lambda q, k, v: pnn.dot_product_attention(q, k, v, is_causal=True))
    jf = jax.jit(
        lambda q, k, v: jax.nn.dot_product_attention(
            q, k, v, is_causal=True, implementation="cudnn"
        )
    )
    pa = [pnp.asarray(x) for x in (q, k, v)]
    ja = [jax.device_put(x) for x in (q, k, v)]
    pf(*pa).block_until_ready()
    jf(*ja).block_until_ready()
    texts = {
        "purejit": list(pf.cache.values())[-1].as_text(),
        "jax": jf.lower(*ja).compile().as_text(),
    }
    keep = re.compile(r"custom-call|fusion|copy|transpose|ENTRY|ROOT|bitcast")
    for name, text in texts.items():
        print("=====", name)
        print("\n".join(line for line in text.splitlines() if keep.search(line))[:6000])
    for _ in range(3):
        for name, f, a in (("purejit", pf, pa), ("jax", jf, ja)):
            f(*a).block_until_ready()
            t0 = time.perf_counter()
            for _ in range(50):
                out = f(*a)
            out.block_until_ready()
            print(name, (time.perf_counter() - t0) / 50 * 1e3, "ms")


if __name__ == "__main__":
    main()
