"""StableHLO lowering rules, one module per op family, mirroring `ir/ops/<family>.py`.

Importing this package registers every rule in `_util.LOWERINGS`.
"""

from purejit.backend.lowering import collective, contraction, control, elementwise  # noqa: F401
from purejit.backend.lowering import fusion, gather, indexing, reduce, shape, sort  # noqa: F401
from purejit.backend.lowering import conv  # noqa: F401
from purejit.backend.lowering import callback  # noqa: F401
from purejit.backend.lowering import fft, linalg  # noqa: F401, E402
from purejit.backend.lowering import householder, tridiagonal  # noqa: F401, E402
from purejit.backend.lowering import autodiff  # noqa: F401
from purejit.backend.lowering import random  # noqa: F401, E402
from purejit.backend.lowering import attention  # noqa: F401, E402
from purejit.backend.lowering import call  # noqa: F401, E402
from purejit.backend.lowering import user_primitive  # noqa: F401, E402
from purejit.backend.lowering import powers  # noqa: F401, E402
