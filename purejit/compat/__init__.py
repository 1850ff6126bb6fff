"""Drop-in mode: code that says `import jax` runs on purejit, unchanged.

    import purejit.compat
    purejit.compat.install()          # or: with purejit.compat.dropin(): ...
    import optax, jax                 # optax's `jax` is purejit

or from the shell, `python -m purejit run script.py [args]`.

`jax`, its submodules and what installed libraries import resolve to purejit (imports made
inside functions too); purejit's backend and real JAX's own modules keep the real `jax` and
`jaxlib`. JAX internals (`jax._src`, `jax.interpreters`, `jax.extend`) fail at import with
the module's name unless purejit has an equivalent. Limits: README, "Drop-in mode".
"""

from __future__ import annotations

import contextlib

from purejit.compat._hook import install, installed, uninstall
from purejit.compat._views import View, resolve


@contextlib.contextmanager
def dropin():
    """Drop-in mode inside a `with` block (modules imported in it keep purejit's `jax`)."""
    install()
    try:
        yield resolve("jax")
    finally:
        uninstall()


def jax():
    """The `jax` module code sees in drop-in mode."""
    return resolve("jax")


__all__ = ["View", "dropin", "install", "installed", "jax", "resolve", "uninstall"]
