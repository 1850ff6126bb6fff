"""StableHLO lowering of the callback family (`ir/ops/callback.py`): `host_callback` and
`pure_callback` become the custom call jaxlib registers for Python callbacks
(`xla_ffi_python_cpu_callback`, `..._gpu_callback`), whose `index` picks the function
from the list handed to PJRT when the program is compiled or loaded (`host_callbacks`).

The list is the program's callback keys in walk order (`callback_keys`), so the emitter and
the compiler derive the same indices from the same IR function.
"""

from __future__ import annotations

import numpy as np

from purejit.backend import pjrt
from purejit.backend.callback_errors import guarded
from purejit.backend.lowering._util import emit_op, flag, lowering
from purejit.ir.ops.callback import call_checked

_OPS = ("host_callback", "pure_callback")


def callback_keys(fn) -> list[str]:
    """The keys of the callbacks `fn` calls, each once, in walk order."""
    keys: list[str] = []
    for op in fn.walk():
        if op.name in _OPS and op.attrs["callback"] not in keys:
            keys.append(op.attrs["callback"])
    return keys


def host_callbacks(fn) -> list:
    """The Python functions PJRT calls for `fn`'s callbacks, in `callback_keys` order; each
    takes and returns NumPy arrays, checking results against the op's declared types."""
    ops = {}
    for op in fn.walk():
        if op.name in _OPS:
            ops.setdefault(op.attrs["callback"], op)
    return [_host_function(ops[k]) for k in callback_keys(fn)]


def _host_function(op):
    name, attrs = op.name, dict(op.attrs)

    def call(*args):
        return tuple(call_checked(name, attrs, [np.asarray(a) for a in args]))

    # an exception in the callback reaches the program's caller as itself (callback_errors)
    return guarded(call)


def _target() -> str:
    return "xla_ffi_python_gpu_callback" if pjrt.is_gpu() else "xla_ffi_python_cpu_callback"


@lowering(*_OPS)
def _callback(ctx, op, args):
    keys = getattr(ctx, "callback_keys", None)
    if keys is None or op.attrs["callback"] not in keys:
        raise NotImplementedError(
            f"{op.name}: the emitter was not told this program's callbacks; emit it with "
            "purejit.backend.stablehlo.emit"
        )
    index = keys.index(op.attrs["callback"])
    attrs = (
        f'call_target_name = "{_target()}", api_version = 1 : i32, backend_config = "", '
        f"has_side_effect = {flag(op.name == 'host_callback')}, "
        f"mhlo.backend_config = {{index = {index} : ui64}}"
    )
    return emit_op(ctx, op, args, "stablehlo.custom_call", attrs)
