"""Which jax/jaxlib purejit runs with, checked at `import purejit` without importing them.

purejit does not make pip install or upgrade jax (an existing environment keeps its own); so
the range is checked here, and a jax outside it gets one clear error at import naming what
was found, what is supported and how to fix it, instead of an obscure failure later.
"""

from __future__ import annotations

import os
from importlib import metadata

SUPPORTED = ((0, 10), (0, 13))  # jax and jaxlib >= 0.10, < 0.13
SUPPORTED_TEXT = ">=0.10,<0.13"
SKIP_ENV = "PUREJIT_SKIP_JAX_VERSION_CHECK"


def _release(version: str) -> tuple[int, int]:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts + [0] * (2 - len(parts)))


def check_jax_version(version_of=metadata.version) -> dict[str, str]:
    """Check that jax and jaxlib are installed within purejit's supported range.

    Args:
        version_of: returns the installed version of a distribution (for tests).
    Returns:
        the versions found, `{"jax": ..., "jaxlib": ...}`.
    Raises:
        ImportError: a package is missing or outside the range (unless the environment
            variable PUREJIT_SKIP_JAX_VERSION_CHECK=1 is set).
    """
    found = {}
    for dist in ("jax", "jaxlib"):
        try:
            found[dist] = version_of(dist)
        except metadata.PackageNotFoundError:
            raise ImportError(
                f"purejit needs {dist} {SUPPORTED_TEXT} (it runs programs through jaxlib's "
                f"PJRT runtime), and {dist} is not installed. Install it with "
                f"pip install 'jax{SUPPORTED_TEXT}' (for GPU: 'jax[cuda13]{SUPPORTED_TEXT}', "
                f"for TPU: 'jax[tpu]{SUPPORTED_TEXT}'), or install purejit with its "
                "jax extra: pip install 'purejit[jax]'."
            ) from None
    if os.environ.get(SKIP_ENV) == "1":
        return found
    low, high = SUPPORTED
    bad = {d: v for d, v in found.items() if not (low <= _release(v) < high)}
    if bad:
        got = ", ".join(f"{d} {v}" for d, v in bad.items())
        raise ImportError(
            f"purejit supports jax and jaxlib {SUPPORTED_TEXT}; this environment has {got}. "
            f"Install a supported version (pip install 'jax{SUPPORTED_TEXT}' "
            f"'jaxlib{SUPPORTED_TEXT}'), or set {SKIP_ENV}=1 to try this one at your own risk."
        )
    return found


VERSIONS = check_jax_version()


def jax_release(parts: int = 3) -> tuple[int, ...]:
    """The installed jax's release as integers, e.g. `(0, 11, 2)`.

    purejit matches the `jax` it is installed next to where jax itself changed behaviour
    between releases (e.g. a sampler's constant); `(0, 0, 0)` when unreadable."""
    pieces = []
    for piece in VERSIONS.get("jax", "0").split(".")[:parts]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        pieces.append(int(digits or 0))
    return tuple(pieces + [0] * (parts - len(pieces)))
