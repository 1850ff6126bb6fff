"""StableHLO lowering of the random family (`ir/ops/random.py`): `threefry2x32`.

Under `jit` the `expand_threefry` pass has already replaced the op by its rounds; this rule
serves programs that still hold it (eager dispatch, a pipeline without that pass). It emits
the same forms, chosen as that pass is configured by default for the platform: JAX's rolled
loop on CPU for at most `ROLLED_MAX_SIZE` counters, the unrolled rounds otherwise.
"""

from __future__ import annotations

from purejit.backend import pjrt
from purejit.backend.lowering._util import lowering
from purejit.passes.expand_threefry import is_rolled, threefry_function

# on CPU, hashes of at most this many counters run as a rolled loop (JAX's CPU lowering: small
# to compile, as fast as JAX); larger ones are unrolled, which XLA fuses into one pass over
# the output (several times faster than JAX's loop, at a one-off compile cost)
ROLLED_MAX_SIZE = 1 << 16


def rolled_max_size() -> int:
    """The largest hash run as a loop on the running platform (0 on GPU: never)."""
    return ROLLED_MAX_SIZE if pjrt.platform() == "cpu" else 0


@lowering("threefry2x32")
def _threefry2x32(ctx, op, args):
    types = [v.type for v in op.operands]
    fn = threefry_function(types, rolled=is_rolled(types, rolled_max_size()))
    return ctx.inline(fn, args)
