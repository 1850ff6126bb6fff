"""purejit's optimisation passes over `purejit.ir` and the pass manager that runs them."""

from purejit.passes.pipeline import (
    FixedPoint,
    PassRecord,
    PassResult,
    Pipeline,
    default_passes,
    run,
)

__all__ = ["FixedPoint", "PassRecord", "PassResult", "Pipeline", "default_passes", "run"]
