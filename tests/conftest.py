"""Test-session setup shared by every test folder.

On a GPU, JAX's client would take 75% of the device memory in each pytest-xdist worker, so
the second worker's allocations fail; tests allocate on demand instead (a default only: an
explicit setting in the environment wins).
"""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
