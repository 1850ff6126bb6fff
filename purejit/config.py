"""Global options, JAX-style: `purejit.config.update("enable_x64", True)`.

An environment variable may only set a default (`PUREJIT_ENABLE_X64=1`). Modules that must
follow an option register a callback with `config.watch`; this module imports nothing of
purejit, so every layer may read it.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable


class _Config:
    def __init__(self):
        self._values = {
            "enable_x64": os.environ.get("PUREJIT_ENABLE_X64", "0") in ("1", "true", "True"),
            "jit_log_compiles": False,
            # the persistent compile cache and the recompilation trap guard
            "cache_dir": os.environ.get("PUREJIT_CACHE_DIR") or None,
            "cache_max_bytes": int(os.environ.get("PUREJIT_CACHE_MAX_BYTES") or 2**30),
            "recompile_warn_after": 8,
            "recompile_raise": False,
            # check the IR after every pass that changed it, not only the pipeline's result
            "verify_each_pass": os.environ.get("PUREJIT_VERIFY_EACH_PASS", "0")
            in ("1", "true", "True"),
            # "on": errors raised while tracing/compiling show only the user's frames
            "traceback_filtering": os.environ.get("PUREJIT_TRACEBACK_FILTERING", "on"),
        }
        self._local = threading.local()
        self._watchers: dict[str, list[Callable[[Any], None]]] = {}

    def update(self, name: str | None = None, value=None, **options):
        """Set an option: `update("cache_dir", path)` or `update(cache_dir=path)`."""
        if name is not None:
            options = {name: value, **options}
        for k in options:
            if k not in self._values:
                raise KeyError(f"unknown purejit option {k!r}; known: {sorted(self._values)}")
        self._values.update(options)
        for k, v in options.items():
            for callback in self._watchers.get(k, ()):
                callback(v)

    def watch(self, name: str, callback: Callable[[Any], None]) -> None:
        """Call `callback(value)` after every `update` of option `name`.

        Args:
            name: a known option.
            callback: called with the new value, in the order callbacks were registered.
        """
        if name not in self._values:
            raise KeyError(f"unknown purejit option {name!r}; known: {sorted(self._values)}")
        self._watchers.setdefault(name, []).append(callback)

    def read(self, name: str):
        return self._values[name]

    @property
    def enable_x64(self) -> bool:
        return self._values["enable_x64"]

    @property
    def jit_disabled(self) -> bool:
        return getattr(self._local, "disable_jit", False)

    def set_disable_jit(self, flag: bool):
        """Run jitted functions op by op in this thread (what `purejit.disable_jit` sets)."""
        self._local.disable_jit = flag


config = _Config()
