"""Drop-in mode: `import jax` in user and library code resolves to purejit (imports inside
functions and `importlib.import_module` too), purejit's backend keeps the real jax, jitted
calls still take the C++ dispatch path, and JAX internals fail at import by name."""

from __future__ import annotations

import builtins
import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import purejit
import purejit.compat
from purejit.compat import _views


@pytest.fixture
def dropin():
    with purejit.compat.dropin() as jax:
        yield jax


def _module(tmp_path, name: str, source: str):
    """Import `source` as module `name` (a stand-in for an installed library)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def test_jax_and_submodules_resolve_to_purejit(dropin):
    import jax
    import jax.numpy as jnp
    from jax import lax, random
    from jax.scipy.special import logsumexp

    real = _views.real_jax()
    assert jax is dropin and jax is not real and jax.__version__ == real.__version__
    assert jnp.zeros is purejit.numpy.zeros
    # jax.jit makes purejit's jitted functions, their type named as JAX's (chex reads it)
    jitted = jax.jit(lambda x: x + 1)
    assert isinstance(jitted, purejit.api.Jitted) and type(jitted).__name__ == "PjitFunction"
    assert int(jitted(1)) == 2 and type(jax.jit(static_argnums=0)(len)).__name__ == "PjitFunction"
    assert lax.add is purejit.lax.add and random.key is purejit.random.key
    assert logsumexp is purejit.scipy.special.logsumexp
    assert jax.numpy is jnp and jax.scipy.special.__name__ == "jax.scipy.special"
    assert type(jnp.ones(3)) is purejit.Array


def test_backend_keeps_real_jax(dropin):
    from purejit.backend import pjrt

    real = _views.real_jax()
    assert sys.modules["jax"] is real  # the hook never replaces the real package
    assert pjrt._jax() is real
    x = purejit.numpy.arange(3.0) + 1  # the backend's lazy imports still reach jaxlib
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0, 3.0])


def test_imports_inside_functions_and_import_module(dropin, tmp_path):
    lib = _module(
        tmp_path,
        "_dropin_lazy_lib",
        """
        import importlib

        def lazy():
            import jax.numpy as jnp
            return jnp

        def by_name():
            return importlib.import_module("jax.lax")
        """,
    )
    assert lib.lazy() is _views.resolve("jax.numpy")
    assert lib.by_name() is _views.resolve("jax.lax")


def test_library_reaching_real_jit_fails_at_import(dropin, tmp_path):
    # a library path that would call real JAX's jit through its internals
    with pytest.raises(ImportError, match=r"jax\._src\.api is part of JAX's internals"):
        _module(tmp_path, "_dropin_internal_lib", "from jax._src.api import jit\n")
    with pytest.raises(ImportError, match=r"jax\._src\.interpreters\.pxla"):
        _module(tmp_path, "_dropin_pe_lib", "import jax._src.interpreters.pxla as pxla\n")
    with pytest.raises(ImportError, match=r"jax\._src\.pjit"):
        importlib.import_module("jax._src.pjit")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("jax.no_such_module")


def test_public_surface_mirrors_installed_jax(dropin):
    real = _views.real_jax()
    missing = []
    for name in dir(real):
        if name.startswith("_"):
            continue
        try:
            getattr(dropin, name)
        except AttributeError as e:
            assert "not implemented in purejit" in str(e) or "no attribute" in str(e)
            missing.append(name)
    # what is missing is named, and the core of the API is there
    for name in ("jit", "grad", "vmap", "Array", "numpy", "lax", "tree_util", "typing"):
        assert name not in missing
    with pytest.raises(AttributeError, match="not implemented in purejit"):
        getattr(dropin, missing[0])


def test_jitted_calls_take_the_cpp_dispatch_path(dropin, monkeypatch):
    from purejit import api
    from purejit.compiler import cpp_dispatch

    if not cpp_dispatch.available():
        pytest.skip("no C++ dispatch in this jaxlib")
    import jax

    calls = []
    real = api.Jitted._dispatch
    monkeypatch.setattr(api.Jitted, "_dispatch", lambda s, a, k: calls.append(1) or real(s, a, k))
    f = jax.jit(lambda x: x * 2.0 + 1.0)
    x = jax.numpy.arange(4.0) + 0
    for _ in range(4):
        out = f(x)
    assert f._cpp is not None and len(calls) == 1
    np.testing.assert_array_equal(np.asarray(out), np.arange(4.0) * 2 + 1)


def test_uninstall_restores_imports():
    before = builtins.__import__, importlib.import_module
    with purejit.compat.dropin():
        assert builtins.__import__ is not before[0] and purejit.compat.installed()
    assert (builtins.__import__, importlib.import_module) == before
    import jax

    assert jax is _views.real_jax()


def test_tracers_and_keys_are_jax_arrays(dropin):
    import jax
    import jax.numpy as jnp

    seen = []

    def f(x):
        seen.append(isinstance(x, jax.Array) and isinstance(x, jnp.ndarray))
        return (x * x).sum()

    jax.jit(f)(jnp.ones(3))
    jax.grad(f)(jnp.ones(3))
    jax.vmap(f)(jnp.ones((2, 3)))
    assert seen == [True, True, True]
    assert isinstance(jax.random.key(0), jax.Array)
    assert not isinstance(np.ones(3), jax.Array)
    assert jax.dtypes.issubdtype(jax.random.key(0).dtype, jax.dtypes.prng_key)


def test_python_m_purejit_run(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import jax
            import jax.numpy as jnp

            x = jax.jit(lambda v: v * 3)(jnp.arange(3.0))
            print(type(x).__module__, f"{x.sum():.2f}", sys.argv[1:], __name__)
            """
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "purejit", "run", str(script), "a", "--b"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["purejit.runtime.array", "9.00", "['a',", "'--b']", "__main__"]
