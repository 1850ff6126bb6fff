"""Op definitions, one module per family. Importing this package registers them all."""

from purejit.ir.ops import elementwise, indexing, reduce, shape  # noqa: F401
from purejit.ir.ops import contraction  # noqa: F401
from purejit.ir.ops import gather  # noqa: F401
from purejit.ir.ops import control, sort  # noqa: F401
from purejit.ir.ops import collective  # noqa: F401
from purejit.ir.ops import fusion  # noqa: F401
