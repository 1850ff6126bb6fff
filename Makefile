# purejit: `make demo` runs the tour, `make test` runs the linter (ruff check, ruff format
# --check) and then the test suite.
# Both create .venv (Python 3.11+) and install `-e .[test]` on first use; the install is
# redone only when pyproject.toml changes (the stamp file .venv/.installed tracks it).

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# the first Python 3.11+ found on PATH; override with `make test PYTHON=/path/to/python3.12`
PYTHON ?= $(shell for p in python3 python3.13 python3.12 python3.11; do \
	command -v $$p >/dev/null 2>&1 && \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && \
	echo $$p && break; done)
PYTEST_WORKERS ?= 2

.PHONY: demo test lint info venv clean-venv wheel notebooks

demo: $(STAMP)
	$(PY) -m purejit demo

test: $(STAMP) lint
	$(PY) -m pytest -q -n $(PYTEST_WORKERS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# dist/purejit-VERSION-py3-none-any.whl; installs offline next to an existing jax
# (pip install dist/purejit-*.whl --no-index), or with its jax extra into a fresh environment
wheel: $(STAMP)
	$(PY) -m pip wheel --no-deps -q -w dist .

# write each notebooks/NAME.ipynb from its reviewed NAME.py (jupytext percent format)
notebooks: $(STAMP)
	$(VENV)/bin/jupytext --quiet --to ipynb --update notebooks/*.py

info: $(STAMP)
	$(PY) -m purejit info

venv: $(STAMP)

$(PY):
	@test -n "$(PYTHON)" || { echo "purejit needs Python 3.11 or newer on PATH" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# constraints.txt keeps jax/jaxlib in range while the test extra brings optax and chex, and
# the jax/jaxlib already installed in the venv stay as they are
$(STAMP): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip freeze 2>/dev/null | grep -iE '^(jax|jaxlib)==' > $(VENV)/installed-jax.txt || true
	$(PY) -m pip install -q -c constraints.txt -c $(VENV)/installed-jax.txt -e '.[test]'
	touch $(STAMP)

clean-venv:
	rm -rf $(VENV)
