"""What `import jax...` gives in drop-in mode: a view module per JAX module name.

`jax.X.Y` maps to `purejit.X.Y` where purejit has that module (its public names, plus the
overrides below, under JAX's module name). `jax` itself mirrors the installed JAX: its
`__version__`, and every public name of the real `jax` either purejit's object or an
AttributeError naming what purejit lacks. JAX's internals (`jax._src`, `jax.interpreters`,
`jax.extend`, ...) resolve to purejit's equivalent where one is listed in `_INTERNAL`, else
the import fails naming the module: a library never receives real JAX code.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import types

_lock = threading.RLock()
_views: dict[str, types.ModuleType] = {}

# JAX internals with a purejit equivalent (module name -> purejit module name)
_INTERNAL = {
    "jax.core": "purejit.core",
    "jax._src.core": "purejit.core",
    "jax._src.typing": "purejit.typing",
    "jax._src.dtypes": "purejit.dtypes",
    "jax._src.tree_util": "purejit.tree_util",
    "jax._src.flatten_util": "purejit.flatten_util",
    "jax._src.traceback_util": "purejit.traceback_util",
    # user-defined primitives and their rule tables
    "jax.extend": "purejit.extend",
    "jax.extend.core": "purejit.extend.core",
    "jax.extend.core.primitives": "purejit.compat._primitives",
    "jax.interpreters": "purejit.extend",
    "jax.interpreters.ad": "purejit.extend.ad",
    "jax.interpreters.batching": "purejit.extend.batching",
    "jax.interpreters.mlir": "purejit.extend.mlir",
    "jax._src": "purejit.compat._src",
    "jax._src.compiler": "purejit.compat._compiler",
    "jax._src.xla_bridge": "purejit.compat._xla_bridge",
    # eager dispatch (what JAX's lacks, e.g. wait_for_tokens, is an AttributeError)
    "jax._src.dispatch": "purejit.runtime",
    # what Flax's nn.scan traces with: wrapped functions and partial evaluation
    "jax.extend.linear_util": "purejit.extend.linear_util",
    "jax.interpreters.partial_eval": "purejit.extend.partial_eval",
    "jax.api_util": "purejit.extend.api_util",
    "jax._src.checkify": "purejit.checkify",
    "jax._src.ad_util": "purejit.compat._ad_util",
    # array refs: purejit has none, so nothing is one (purejit.compat._state)
    "jax._src.state": "purejit.compat._state",
    "jax._src.state.types": "purejit.compat._state",
    # register_exclusion: library frames that error locations skip
    "jax.extend.source_info_util": "purejit.traceback_util",
}
# views that are the purejit module itself: libraries assign their attributes
_SELF_VIEWS = ("jax._src.compiler", "jax._src.xla_bridge")
# JAX module names whose purejit module has another name
_RENAMED = {
    "jax.experimental": "purejit.compat._experimental",
    "jax.experimental.checkify": "purejit.checkify",
    "jax.experimental.shard_map": "purejit.shard_map",
    "jax.experimental.layout": "purejit.compat._layout",
    "jax.experimental.hijax": "purejit.compat._hijax",
    "jax.experimental.sparse": "purejit.compat._sparse",
    "jax.experimental.mesh_utils": "purejit.compat._mesh_utils",
    "jax.version": "purejit.compat._version",
    "jax.lax.linalg": "purejit.lax.linalg",
}
_PRIVATE_ROOTS = ("jax._src", "jax.interpreters", "jax.extend", "jax.lib", "jax.core")


def real_jax() -> types.ModuleType:
    """The real `jax` package (loaded by purejit's backend before the hook installs)."""
    from purejit.backend import real_jax as _real

    return _real.load()["jax"]


def _real_has_module(name: str) -> bool:
    """Whether the installed JAX ships module `name` (by its files: nothing is imported)."""
    parts = name.split(".")[1:]
    for root in real_jax().__path__:
        path = os.path.join(root, *parts)
        if os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py")):
            return True
    return False


class View(types.ModuleType):
    """A JAX module name over a purejit module: purejit's public names, JAX-only overrides,
    and an AttributeError that names what purejit lacks."""

    def __init__(self, name: str, source: types.ModuleType | None, overrides: dict):
        super().__init__(name, getattr(source, "__doc__", None))
        object.__setattr__(self, "_purejit_source", source)
        if source is not None:
            public = getattr(source, "__all__", None) or [
                k for k in vars(source) if not k.startswith("_")
            ]
            for k in public:
                if hasattr(source, k):
                    self.__dict__[k] = getattr(source, k)
        self.__dict__.update(overrides)
        # submodules are views too (`jax.scipy.special`, not `purejit.scipy.special`)
        for k, v in list(self.__dict__.items()):
            if (
                isinstance(v, types.ModuleType)
                and not isinstance(v, View)
                and not k.startswith("__")
            ):
                child = _mapped_name(f"{name}.{k}")
                if child is not None and child == v.__name__:
                    self.__dict__[k] = resolve(f"{name}.{k}")

    def __getattr__(self, attr: str):
        source = self.__dict__.get("_purejit_source")
        if source is not None and not attr.startswith("__") and hasattr(source, attr):
            value = getattr(source, attr)
            child = f"{self.__name__}.{attr}"
            # a submodule imported after this view was made: its view, not purejit's module
            if isinstance(value, types.ModuleType) and _mapped_name(child) == value.__name__:
                return resolve(child)
            return value
        if not attr.startswith("__"):
            child = f"{self.__name__}.{attr}"
            if _mapped_name(child) is not None:
                return resolve(child)
        real = _real_module(self.__name__)
        if real is not None and hasattr(real, attr) and not attr.startswith("_"):
            raise AttributeError(
                f"{self.__name__}.{attr} is not implemented in purejit (drop-in mode maps "
                f"{self.__name__} to {getattr(source, '__name__', 'purejit')}); see "
                "docs/coverage_unsupported.toml for what is missing and why"
            )
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")

    def __dir__(self):
        return sorted(set(self.__dict__) | set(dir(self.__dict__.get("_purejit_source"))))


def _real_module(name: str):
    """The real JAX module of that name if it is already loaded (never loads one)."""
    mod = sys.modules.get(name)
    return None if isinstance(mod, View) else mod


def _mapped_name(name: str) -> str | None:
    """The purejit module that `name` (a `jax...` module name) maps to, or None."""
    if name in _INTERNAL:
        return _INTERNAL[name]
    if name in _RENAMED:
        return _RENAMED[name]
    if any(name == r or name.startswith(r + ".") for r in _PRIVATE_ROOTS):
        return None
    candidate = "purejit" + name[len("jax") :]
    if any(p.startswith("_") for p in name.split(".")):
        return None
    try:
        spec = importlib.util.find_spec(candidate)
    except ModuleNotFoundError:
        return None
    return candidate if spec is not None else None


def resolve(name: str) -> types.ModuleType:
    """The view module for `name` (`jax` or `jax.<...>`); ImportError where none exists."""
    view = _views.get(name)
    if view is not None:
        return view
    with _lock:
        view = _views.get(name)
        if view is not None:
            return view
        if name == "jax":
            from purejit.compat import _top

            view = View("jax", importlib.import_module("purejit"), _top.overrides(real_jax()))
        else:
            target = _mapped_name(name)
            if target is None:
                raise _unsupported(name)
            from purejit.compat import _out_sharding, _top

            source = importlib.import_module(target)
            if name in _SELF_VIEWS:
                _views[name] = source
                return source
            names = _top.module_overrides(name)
            names.update(_out_sharding.overrides(name, source, names))
            view = View(name, source, names)
            view.__package__ = name if hasattr(source, "__path__") else name.rpartition(".")[0]
        view.__purejit_view__ = True
        _views[name] = view
        return view


def _unsupported(name: str) -> ImportError:
    internal = any(name == r or name.startswith(r + ".") for r in _PRIVATE_ROOTS) or any(
        p.startswith("_") for p in name.split(".")
    )
    if internal:
        msg = (
            f"drop-in mode: {name} is part of JAX's internals and purejit has no equivalent; "
            "a library that imports it needs JAX's own tracing machinery. Run this code under "
            "real JAX, or ask for the missing purejit extension point"
        )
    elif _real_has_module(name):
        msg = (
            f"drop-in mode: purejit has no module for {name} (the installed jax "
            f"{real_jax().__version__} has it); see docs/coverage_unsupported.toml"
        )
    else:
        msg = f"No module named {name!r}"
        return ModuleNotFoundError(msg, name=name)
    return ImportError(msg, name=name)
