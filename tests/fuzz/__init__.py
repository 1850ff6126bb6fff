"""Differential fuzzing of the whole compiler: random well-typed programs (`program.py`) over
the op table (`ops.py`), each run through jax.jit, purejit's compiled program, the reference
interpreter and the pass pipeline with each pass off (`check.py`). `make test` runs 200 of
them (`test_fuzz.py`); `python -m tests.fuzz --n 5000` runs more and reports what it finds.
Every failure found is kept in `regressions/` as IR text in, expected numbers out."""
