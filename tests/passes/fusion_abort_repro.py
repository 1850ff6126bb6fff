"""Reproducer (not collected by pytest): random programs realised with fusion="purejit" on
XLA CPU until one aborts the process with `Check failed: has_layout()`; the program being
compiled is written to /tmp/last_prog.txt. Run from the repository root:

    .venv/bin/python tests/passes/fusion_abort_repro.py
"""

import sys

sys.path.insert(0, "tests/passes")
from hypothesis import given, settings, strategies as st, HealthCheck
import test_property as T
from purejit.passes import Pipeline
from purejit.passes.pipeline import default_passes
from purejit.ir import print_function
from purejit.backend import fusion as fb

CAP = fb.probe_route()


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(T.STEP, min_size=5, max_size=20), st.integers(0, 2**31))
def run(steps, seed):
    fn = T.build(steps)
    realised, _ = Pipeline(default_passes(**CAP.fusion_options())).run(fn)
    open("/tmp/last_prog.txt", "w").write(print_function(realised))
    T._compile_run(realised, CAP.route, T._inputs(fn, seed))


run()
print("no crash")
