"""Op definitions, one module per family. Importing this package registers them all."""

from purejit.ir.ops import elementwise, indexing, reduce, shape  # noqa: F401
