"""The supported jax/jaxlib range is checked at import, with a message that names what was
found and how to fix it (purejit never makes pip replace an existing jax)."""

from __future__ import annotations

from importlib import metadata

import pytest

from purejit.backend import versions


def _fake(jax="0.10.2", jaxlib="0.10.2"):
    table = {"jax": jax, "jaxlib": jaxlib}

    def version_of(dist):
        if table[dist] is None:
            raise metadata.PackageNotFoundError(dist)
        return table[dist]

    return version_of


def test_installed_versions_pass():
    found = versions.check_jax_version()
    assert set(found) == {"jax", "jaxlib"}


@pytest.mark.parametrize("jax, jaxlib", [("0.10.0", "0.10.0"), ("0.12.9", "0.11.2")])
def test_supported_range(jax, jaxlib):
    assert versions.check_jax_version(_fake(jax, jaxlib)) == {"jax": jax, "jaxlib": jaxlib}


@pytest.mark.parametrize(
    "jax, jaxlib, named",
    [("0.9.2", "0.10.2", "jax 0.9.2"), ("0.13.0", "0.13.0rc1", "jaxlib 0.13.0rc1")],
)
def test_outside_the_range_says_what_and_how(jax, jaxlib, named, monkeypatch):
    monkeypatch.delenv(versions.SKIP_ENV, raising=False)
    with pytest.raises(ImportError) as e:
        versions.check_jax_version(_fake(jax, jaxlib))
    msg = str(e.value)
    assert named in msg and ">=0.10,<0.13" in msg and "pip install" in msg
    monkeypatch.setenv(versions.SKIP_ENV, "1")
    assert versions.check_jax_version(_fake(jax, jaxlib))["jax"] == jax


def test_missing_jax_says_how_to_install():
    with pytest.raises(ImportError, match="jaxlib .* is not installed"):
        versions.check_jax_version(_fake(jaxlib=None))
