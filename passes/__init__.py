"""purejit's optimisation passes over `purejit.ir` and the pass manager that runs them."""

from purejit.passes.pipeline import PassRecord, Pipeline, run

__all__ = ["PassRecord", "Pipeline", "run"]
