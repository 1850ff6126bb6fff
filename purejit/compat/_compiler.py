"""`jax._src.compiler` in drop-in mode: `backend_compile_and_load`, the step every purejit
compile goes through. Libraries replace it to watch or forbid compiles
(`chex.restrict_backends` wraps it and raises for a forbidden platform); assigning the
attribute replaces purejit's compile step, reading it gives the current one."""

from __future__ import annotations

import sys
import types

from purejit.backend import pjrt


class _CompilerModule(types.ModuleType):
    @property
    def backend_compile_and_load(self):
        return pjrt.compile_step["fn"]

    @backend_compile_and_load.setter
    def backend_compile_and_load(self, fn):
        pjrt.compile_step["fn"] = fn


sys.modules[__name__].__class__ = _CompilerModule
