"""Op definitions, one module per family. Importing this package registers them all."""

from purejit.ir.ops import (  # noqa: F401  # noqa: F401
    autodiff,  # noqa: F401
    collective,  # noqa: F401
    contraction,  # noqa: F401
    control,
    elementwise,
    fusion,  # noqa: F401
    gather,  # noqa: F401
    indexing,
    reduce,
    shape,
    sort,
)
from purejit.ir.ops import conv  # noqa: F401, E402
from purejit.ir.ops import callback  # noqa: F401, E402
from purejit.ir.ops import fft, linalg  # noqa: F401, E402
from purejit.ir.ops import householder, tridiagonal  # noqa: F401, E402
from purejit.ir.ops import random  # noqa: F401, E402
from purejit.ir.ops import attention  # noqa: F401, E402
from purejit.ir.ops import call  # noqa: F401, E402
from purejit.ir.ops import user_primitive  # noqa: F401, E402
from purejit.ir.ops import powers  # noqa: F401, E402
