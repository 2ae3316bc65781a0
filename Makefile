# Two commands a newcomer needs: `make demo` and `make test`. Both build the
# virtual environment from scratch when it is missing or pyproject.toml changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEPS := $(VENV)/.deps-installed

SPARK_DEPS := $(VENV)/.spark-installed

.PHONY: demo screenshot test lint typecheck unit package-check bench clean test-slow test-spark spark-demo

$(DEPS): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(DEPS)

demo: $(DEPS)
	$(BIN)/abeval demo

# The README's picture of the demo report, from headless Chromium (scripts/screenshot.py;
# not part of `make test`).
screenshot: $(DEPS)
	$(BIN)/python scripts/screenshot.py

test: lint typecheck unit package-check

lint: $(DEPS)
	$(BIN)/ruff check abeval tests benchmarks
	$(BIN)/ruff format --check abeval tests benchmarks

typecheck: $(DEPS)
	$(BIN)/mypy

unit: $(DEPS)
	$(BIN)/python -m pytest -q -m "not slow"

# The larger simulations and the signal campaign (pytest -m slow; CI runs them after
# `make test`, about 5 minutes).
test-slow: $(DEPS)
	$(BIN)/python -m pytest -q -m slow

package-check: $(DEPS)
	bash scripts/package_check.sh $(BIN)/python

# The Spark tests (pytest -m spark): a local standalone cluster (master, two workers,
# Spark Connect server; scripts/spark) from the pyspark package and the machine's Java 17.
$(SPARK_DEPS): $(DEPS)
	$(BIN)/python -m pip install --quiet -e '.[test,spark]'
	touch $(SPARK_DEPS)

test-spark: $(SPARK_DEPS)
	@command -v java >/dev/null || { echo "make test-spark needs Java 17 (java on the PATH)"; exit 1; }
	$(BIN)/python -m pytest -q -m spark tests/spark

# The demo experiment loaded into a local Spark cluster with `abeval ingest --db sc://...`,
# its report written from Spark into demo/spark and checked against DuckDB's.
spark-demo: $(SPARK_DEPS)
	bash scripts/spark/demo.sh $(BIN)/python

bench: $(DEPS)
	$(BIN)/python benchmarks/bench_ingest.py --sizes 2M,10M $(BENCH_FLAGS)
	$(BIN)/python benchmarks/bench_report.py --rows 2000000 $(BENCH_FLAGS)
	$(BIN)/python benchmarks/bench_postgres.py --sizes 200k,2M $(BENCH_FLAGS)

clean:
	rm -rf $(VENV) dist build demo .pytest_cache .mypy_cache .ruff_cache
