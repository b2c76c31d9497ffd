# Two entry points, each doing all set-up on a fresh machine:
#   make demo   - install into .venv and run `smartflow demo` on the bundled sample window
#   make test   - install into .venv, then ruff, mypy and the whole pytest suite; the store, HTTP
#                 and session-store tests use the RUNNING PostgreSQL, MariaDB and Redis (one
#                 database / key prefix per run, removed afterwards; an unreachable server fails
#                 the run). Point them elsewhere with the variables below.
SMARTFLOW_PG_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test
SMARTFLOW_MARIADB_URL ?= mysql+pymysql://root@127.0.0.1:3306/test?charset=utf8mb4
SMARTFLOW_REDIS_URL ?= redis://127.0.0.1:6379/0
export SMARTFLOW_PG_URL SMARTFLOW_MARIADB_URL SMARTFLOW_REDIS_URL
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Debian packages the tests and pictures need: Chromium (the session page's browser tests, run by
# Playwright against /usr/bin/chromium, no browser download) and a CJK font (task names in the
# schedule picture). Installed only when missing.
SYSTEM_PACKAGES := chromium fonts-wqy-microhei

.PHONY: demo test lint bench eval eval-model clean system-packages

system-packages:
	@missing=""; for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[all,dev]'
	touch $(STAMP)

demo: system-packages $(STAMP)
	$(VENV)/bin/smartflow demo

# The pre-commit hooks (.pre-commit-config.yaml): ruff check, ruff format, mypy. A hook that
# changes a file (the formatter) fails the run, so CI fails on unformatted code.
lint: $(STAMP)
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m pre_commit run --all-files --show-diff-on-failure

# Both cores (pytest-xdist); each worker has its own database / key prefix (tests/helpers).
test: system-packages lint
	SMARTFLOW_SELF_CHECK=1 $(PY) -m pytest -n 2 --durations=10

bench: $(STAMP)
	$(VENV)/bin/smartflow bench

# Optional: the eval kit (issue 31). `make eval` rewrites the committed scripted baseline,
# benchmarks/results_eval.{md,parquet}: the tables (no wall-clock column) and, at the end of the
# .md, the notes kept in benchmarks/results_eval_notes.md; `git diff` after it shows nothing
# unless the engine's answers changed. It fails (exit 1, tables written) when the wall clock cut
# a solver call (column clock_cuts): such a row hangs on the machine's load, not a baseline.
# `make eval-model EVAL_BASE_URL=http://127.0.0.1:8080/v1 EVAL_MODEL=name` runs any
# OpenAI-compatible endpoint (the key, if any, in $OPENAI_API_KEY) into eval_results.{md,parquet}.
EVAL_K ?= 3
EVAL_BASELINE := --policy scripted --k 2 --baseline --notes benchmarks/results_eval_notes.md
eval: $(STAMP)
	$(VENV)/bin/smartflow eval $(EVAL_BASELINE) --out benchmarks/results_eval

eval-model: $(STAMP)
	$(VENV)/bin/smartflow eval --policy openai --base-url "$(EVAL_BASE_URL)" --model "$(EVAL_MODEL)" --k $(EVAL_K) --out eval_results

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
