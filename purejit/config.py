"""Global options, JAX-style: `purejit.config.update("enable_x64", True)`.

An environment variable may only set a default (`PUREJIT_ENABLE_X64=1`).
"""

from __future__ import annotations

import os
import threading


class _Config:
    def __init__(self):
        self._values = {
            "enable_x64": os.environ.get("PUREJIT_ENABLE_X64", "0") in ("1", "true", "True"),
            "jit_log_compiles": False,
        }
        self._local = threading.local()

    def update(self, name: str, value):
        if name not in self._values:
            raise KeyError(f"unknown purejit option {name!r}; known: {sorted(self._values)}")
        self._values[name] = value

    def read(self, name: str):
        return self._values[name]

    @property
    def enable_x64(self) -> bool:
        return self._values["enable_x64"]

    @property
    def jit_disabled(self) -> bool:
        return getattr(self._local, "disable_jit", False)

    def _set_disable_jit(self, flag: bool):
        self._local.disable_jit = flag


config = _Config()
