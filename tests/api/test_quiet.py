"""Quiet: a normal session prints nothing to stderr (no C++ log lines from jaxlib, such as
`pjrt_client.cc ... PjRt-IFRT device count`, no warnings purejit does not document)."""

import os
import subprocess
import sys
import textwrap

SESSION = textwrap.dedent(
    """
    import numpy as np
    import purejit, purejit.numpy as jnp
    x = jnp.arange(10.0)
    a, b, c = x[1], x[1:3], float(x.sum())
    f = purejit.jit(lambda x, w: jnp.tanh(x @ w).sum())
    y = f(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    z = purejit.lax.fori_loop(0, 3, lambda i, v: v * 2, x)
    print(float(a), b.tolist(), c, float(y), float(z[1]))
    """
)


def test_a_normal_eager_and_jit_session_writes_nothing_to_stderr():
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL",)}
    p = subprocess.run(
        [sys.executable, "-c", SESSION], capture_output=True, text=True, env=env, timeout=120
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split()[:3] == ["1.0", "[1.0,", "2.0]"]
    assert p.stderr == ""
