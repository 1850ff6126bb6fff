"""The runtime: `purejit.Array` on a device, eager dispatch of single ops, device placement.

Importing it installs the eager trace at the bottom of the trace stack, so an op bound
outside any transformation runs on the device.
"""

from purejit.runtime.array import Array, DeletedArrayError, as_array
from purejit.runtime.eager import EvalTrace, eval_trace

__all__ = ["Array", "DeletedArrayError", "EvalTrace", "as_array", "eval_trace"]
