# Quick start: `make demo` (install + offline run of the bundled model on the starter suite)
#              `make test` (install + the test suite, offline)
#              `make test-fast` (install + the suite without the bundled-model runs marked `slow`)
#              `make docs` (install + the documentation site, built strictly into site/)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export TRUSTMH_DATA_DIR ?= $(abspath ../shared/data)

.PHONY: install demo test test-fast docs lint bench clean

$(BIN)/trustmh: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e '.[dev]'
	@touch $@

install: $(BIN)/trustmh

demo: install
	$(BIN)/trustmh run --out trustmh-out

test: install
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/pytest -q

test-fast: install
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/pytest -q -m "not slow"

docs: install
	$(BIN)/mkdocs build --strict --site-dir site

bench: install
	taskset -c 0,1 $(BIN)/python benchmarks/mentalalign_bench.py
	taskset -c 0,1 $(BIN)/python benchmarks/align_e2e.py

clean:
	rm -rf trustmh-out .pytest_cache site
