"""The import hook behind drop-in mode: `import jax` in user and library code gives purejit.

Python runs every `import` statement through `builtins.__import__` with the importing
module's globals, so the hook decides by importer: purejit's backend, real JAX's own modules
and jaxlib keep the real `jax` (bound in `sys.modules` before the hook installs, and still
there), every other module gets purejit's view (`purejit.compat._views`). Imports made inside
functions go through the same door, so a library that imports lazily is covered too.
`importlib.import_module` bypasses `__import__`; the hook wraps it the same way.

What the hook cannot see: code that reads `sys.modules["jax"]` directly, and C extensions
that import jax from C. Both get the real package (documented in README's drop-in limits).
"""

from __future__ import annotations

import builtins
import importlib
import sys
import threading

# importers whose `import jax` must reach the real package: purejit's only door to jaxlib,
# and real JAX / jaxlib themselves (their lazy imports inside functions)
_REAL_IMPORTERS = ("purejit.backend", "jax", "jaxlib")

_lock = threading.Lock()
_state = {"depth": 0, "import": None, "import_module": None}


def _wants_real(globals_) -> bool:
    if not globals_:
        return False
    name = globals_.get("__name__") or ""
    for prefix in _REAL_IMPORTERS:
        if name == prefix or name.startswith(prefix + "."):
            return True
    return False


def _is_jax_name(name: str) -> bool:
    return name == "jax" or name.startswith("jax.")


def _make_import(original):
    from purejit.compat import _views

    def __import__(name, globals=None, locals=None, fromlist=(), level=0):
        if level or not _is_jax_name(name) or _wants_real(globals):
            return original(name, globals, locals, fromlist, level)
        module = _views.resolve(name)  # raises ImportError naming an unsupported module
        if fromlist:
            for attr in fromlist:
                if attr != "*" and not hasattr(module, attr):
                    # `from jax.x import sub`: a submodule of the view, imported by name
                    _views.resolve(f"{name}.{attr}")
            return module
        # `import jax.numpy` binds the top package (whose attribute `numpy` is the view)
        return _views.resolve(name.partition(".")[0])

    __import__.__purejit_dropin__ = True
    return __import__


def _make_import_module(original):
    from purejit.compat import _views

    def import_module(name, package=None):
        if name.startswith("."):
            return original(name, package)
        if _is_jax_name(name) and not _wants_real(sys._getframe(1).f_globals):
            return _views.resolve(name)
        return original(name, package)

    import_module.__purejit_dropin__ = True
    import_module.__doc__ = original.__doc__
    return import_module


def install() -> None:
    """Install the hook (nested installs count; each `uninstall` undoes one)."""
    import purejit  # noqa: F401
    from purejit.backend import callback_errors, real_jax
    from purejit.compat import _views

    # the real packages load first, under their own names, for the backend to keep
    real_jax.load()

    _views.real_jax()  # mirrors the installed version's public surface
    with _lock:
        _state["depth"] += 1
        if _state["depth"] > 1:
            return
        _state["import"] = builtins.__import__
        _state["import_module"] = importlib.import_module
        # a host callback's exception surfaces as JAX's JaxRuntimeError naming it
        callback_errors.jax_style(True)
        builtins.__import__ = _make_import(builtins.__import__)
        importlib.import_module = _make_import_module(importlib.import_module)


def uninstall() -> None:
    """Undo one `install`; the last one restores Python's import functions."""
    with _lock:
        if _state["depth"] == 0:
            return
        _state["depth"] -= 1
        if _state["depth"]:
            return
        builtins.__import__ = _state["import"]
        importlib.import_module = _state["import_module"]
        from purejit.backend import callback_errors

        callback_errors.jax_style(False)
        _state["import"] = _state["import_module"] = None


def installed() -> bool:
    return _state["depth"] > 0
