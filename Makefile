# tuneloop — two commands do all the set-up on a fresh machine:
#   make demo   runs the main job (examples/quickstart) on its embedded defaults
#   make test   runs the test suite
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
PYTHON ?= python3
# pip's cache and the local torch build are used when present; nothing comes from a model hub.
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install demo test test-all bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) examples/quickstart/seed_feedback.py examples/quickstart/feedback.db
	TUNELOOP_PROGRESS=1 $(VENV)/bin/tuneloop run examples/quickstart/config.yaml

test: install
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q

test-all: install
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q -m "not gpu"

bench: install
	for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf runs examples/quickstart/runs .pytest_cache
