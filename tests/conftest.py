"""Test-session setup shared by every test folder.

On a GPU, JAX's client would take 75% of the device memory in each pytest-xdist worker, so
the second worker's allocations fail; tests allocate on demand instead (a default only: an
explicit setting in the environment wins).

The pass manager checks the IR after every pass that changed it (not only at the end, the
default outside tests), so a pass that breaks the IR fails here by name.
"""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("PUREJIT_VERIFY_EACH_PASS", "1")
