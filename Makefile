# paperlab — the README's commands. Each creates the environments when missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
DVC_VENV := .venv-dvc
PROFILE ?= cpu
PORT ?= 3000
PAPERS ?=
FORCE ?=
TEST_WORKERS ?= 2

export DAGSTER_HOME := $(CURDIR)/.dagster
export GX_ANALYTICS_ENABLED := false
export DAGSTER_DISABLE_TELEMETRY := 1
export PYTHONPATH := $(CURDIR)

.PHONY: venv reproduce test lint ui dvc-repro bench clean-data readme-results results results-diff

# Project environment. torch first, from the local CPU wheel: an unpinned torch would pull
# a multi-GB CUDA build. The generic top-level packages are not installed (packages = []).
$(VENV)/.installed: pyproject.toml
	@free=$$(df -Pk . | awk 'NR==2 {print int($$4 / 1048576)}'); [ "$$free" -ge 4 ] || \
	  echo "warning: $$free GiB free here; .venv and .venv-dvc take about 3.3 GiB: the install may fail" >&2
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(VENV)/bin/python -m pip install --quiet -e '.[test]'
	touch $@

# dvc lives in its own tool environment: its hydra/omegaconf need antlr 4.9, Dagster's
# selection parser needs 4.13. `dvc` is linked into .venv/bin so one activated env has both.
$(DVC_VENV)/.installed:
	test -x $(DVC_VENV)/bin/python || $(PYTHON) -m venv $(DVC_VENV)
	$(DVC_VENV)/bin/python -m pip install --quiet 'dvc==3.67.1'
	touch $@

venv: $(VENV)/.installed $(DVC_VENV)/.installed
	ln -sf ../../$(DVC_VENV)/bin/dvc $(VENV)/bin/dvc
	mkdir -p $(DAGSTER_HOME)

## make reproduce: the papers that changed (DVC), then warehouse and scorecard
##   PAPERS="oscs brew" a subset; FORCE=1 recompute; PROFILE=smoke|gpu uncached
reproduce: venv
	$(VENV)/bin/python -m jobs.reproduce --profile $(PROFILE) $(if $(PAPERS),--papers $(PAPERS)) $(if $(FORCE),--force)

## make test: unit, wiring, gating, platform and UI tests
# The Dask scale-out test runs first, in its own pytest process: at the end of the long suite
# its step hand-offs stalled 60 s each (30 min), while in a fresh process it takes ~30 s.
# The rest runs on two pytest-xdist workers, every paper's tests in one worker (its smoke
# group is materialized once per session there; tests/conftest.py assigns the groups).
test: venv
	$(VENV)/bin/python -m pytest -m dask
	$(VENV)/bin/python -m pytest -m "not dask" -n $(TEST_WORKERS) --dist loadgroup

## make results: the results record in git (results/) from the warehouse; make reproduce ends with it
results: venv
	$(VENV)/bin/python -m jobs.results

## make results-diff: the claims whose verdict changed against the committed results/claims.csv
results-diff: venv
	$(VENV)/bin/python -m jobs.results --diff

## make readme-results: the README scorecard from the committed results record (results/)
readme-results: venv
	$(VENV)/bin/python -m jobs.readme_results

## make lint: ruff (E, F, I, B; line length 120)
lint: venv
	$(VENV)/bin/ruff check .

## make ui: Dagster web UI (and schedule daemon) on http://127.0.0.1:$(PORT)
ui: venv
	$(VENV)/bin/dagster dev -w workspace.yaml -h 127.0.0.1 -p $(PORT)

## make dvc-repro: plain `dvc repro` of every paper stage (make reproduce adds progress + warehouse)
dvc-repro: venv
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/dvc repro

## make bench: every performance benchmark (not tests; the PERFORMANCE list in benchmarks/_bench.py)
# Each times the method against its baseline in the same run, prints the ratio and writes its rows
# to results/bench.csv (or $PAPERLAB_BENCH_CSV); its own outputs go under data/ as before.
# The studies (ablations, budgets, STUDIES there) are run by hand, as their docstrings say.
bench: venv
	$(VENV)/bin/python -m benchmarks._bench --run-all

clean-data:
	find data -mindepth 1 -maxdepth 1 ! -name .gitkeep ! -name README.md -exec rm -rf {} +
