"""A pytest plugin that turns drop-in mode on before any test module is imported:
`python -m pytest -p _dropin_pytest_plugin` with tools/ on PYTHONPATH (see
tools/ecosystem_check.py). Every `import jax` of the tests and the libraries they import
resolves to purejit."""

import purejit.compat

purejit.compat.install()
