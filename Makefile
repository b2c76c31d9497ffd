# Two entry points, each doing all set-up on a fresh machine:
#   make demo   - install into .venv and run `smartflow demo` on the bundled sample window
#   make test   - install into .venv, then ruff, mypy and the whole pytest suite (store tests
#                 also on a throwaway PostgreSQL, installed from Debian's packages when root)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all]'
	$(VENV)/bin/smartflow warm-up
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/smartflow demo

lint: $(STAMP)
	$(PY) -m ruff check smartflow_engine tests benchmarks
	$(PY) -m mypy

test: lint
	SMARTFLOW_PG_URL="$$(scripts/postgres-for-tests.sh)" SMARTFLOW_SELF_CHECK=1 $(PY) -m pytest

bench: $(STAMP)
	$(VENV)/bin/smartflow bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
