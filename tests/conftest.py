"""Test-session setup shared by every test folder.

On a GPU, JAX's client would take 75% of the device memory in each pytest-xdist worker, so
the second worker's allocations fail; tests allocate on demand instead (a default only: an
explicit setting in the environment wins).

On a GPU, XLA's autotuner times alternative kernels for some fusions (a reduction: Triton's
or XLA's own emitter) and keeps the faster, which differs from process to process; the two
round differently, so the bits of JAX's own `jax.random.maxwell` change between runs on an
H200. Tests compare bits with JAX, so XLA runs deterministically here
(`--xla_gpu_deterministic_ops`, no effect on CPU).

The pass manager checks the IR after every pass that changed it (not only at the end, the
default outside tests), so a pass that breaks the IR fails here by name.
"""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
DETERMINISTIC = "--xla_gpu_deterministic_ops=true"
if DETERMINISTIC not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {DETERMINISTIC}".strip()
os.environ.setdefault("PUREJIT_VERIFY_EACH_PASS", "1")
