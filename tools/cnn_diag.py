"""Why the CNN workload differs between purejit and jax.jit on a device: time both, and
write each one's optimised HLO (XLA's kernels) next to the other. Usage:
python tools/cnn_diag.py OUT_DIR"""

import pathlib
import sys
import time

import numpy as np

import jax
import jax.numpy as jxnp

import purejit
import purejit.numpy as pnp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from bench import models  # noqa: E402

out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/cnn_diag")
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(0)
params = models.cnn_params(rng)
x = rng.standard_normal((128, 32, 32, 3)).astype(np.float32)
pf = purejit.jit(lambda p, x: models.cnn(pnp, purejit.lax, p, x))
jf = jax.jit(lambda p, x: models.cnn(jxnp, jax.lax, p, x))
pp = {k: purejit.device_put(v) for k, v in params.items()}
jp = {k: jax.device_put(v) for k, v in params.items()}
px, jx = purejit.device_put(x), jax.device_put(x)
(out / "purejit_hlo.txt").write_text(pf.lower(pp, px).compile().as_text())
(out / "jax_hlo.txt").write_text(jf.lower(jp, jx).compile().as_text())
(out / "purejit_stablehlo.txt").write_text(pf.lower(pp, px).as_text())
(out / "jax_stablehlo.txt").write_text(jf.lower(jp, jx).as_text())


def timeit(f, p, x, n=200):
    for _ in range(10):
        f(p, x).block_until_ready()
    t = time.perf_counter()
    for _ in range(n):
        r = f(p, x)
    r.block_until_ready()
    return (time.perf_counter() - t) / n


for rnd in range(3):
    a, b = timeit(pf, pp, px), timeit(jf, jp, jx)
    print(f"round {rnd}: purejit {a * 1e6:.1f} us, jax {b * 1e6:.1f} us, ratio {a / b:.2f}")

for name in ("purejit", "jax"):
    hlo = (out / f"{name}_hlo.txt").read_text()
    targets = [
        ln.split('custom_call_target="')[1].split('"')[0]
        for ln in hlo.splitlines()
        if 'custom_call_target="' in ln
    ]
    print(name, "custom calls:", targets)
    print(name, "convolution/fusion lines:")
    for ln in hlo.splitlines():
        if "ENTRY" in ln or (" = " in ln and ("fusion(" in ln or "custom-call(" in ln)):
            print("   ", ln.strip()[:160])
