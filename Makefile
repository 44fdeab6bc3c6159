# kafka-bench: two commands on a fresh machine.
#   make bench   deploy the local three-broker cluster and run the main job
#   make test    run the tests (unit, lint, real-cluster, install sources, Molecule)
# Both create .venv and install what they need on first use.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
INVENTORY ?= inventories/local
# Tools the tests and playbooks start (ansible-playbook, molecule, ...) come from the venv.
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: bench bench-durability perf perf-analysis report test test-unit test-cluster test-roles lint install cluster-up cluster-down cluster-status clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

## The main job: deploy the cluster, run every seed lab as a measured scenario (shortened),
## and end with the report (benchmarks/results/<time>-seeds/report.html).
bench: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/kafka-bench run seeds --quick --inventory $(INVENTORY)

## The durability sweep (acks x RF x min ISR x leader kill, plus negative controls): ~30 min.
bench-durability: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/kafka-bench run durability --quick --inventory $(INVENTORY)

## Load generator vs Kafka's producer-perf-test, ledger on vs off, open-loop accuracy.
perf: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/python -m benchmarks.perf.producer_throughput --inventory $(INVENTORY)

## Spark analysis vs DuckDB on the same Parquet files (1M and 10M synthetic messages).
perf-analysis: install
	$(BIN)/python -m benchmarks.perf.analysis_engines

## Re-analyse a results directory: make report DIR=benchmarks/results/<time>-seeds
report: install
	$(BIN)/kafka-bench report $(DIR)

test: install
	$(BIN)/python -m pytest

test-unit: install
	$(BIN)/python -m pytest tests/unit

test-cluster: install
	$(BIN)/python -m pytest tests/integration

test-roles: install
	$(BIN)/python -m pytest tests/roles

lint: install
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --offline

cluster-up: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)

cluster-status: install
	$(BIN)/kafka-bench cluster status --inventory $(INVENTORY)

cluster-down: install
	$(BIN)/kafka-bench cluster down --purge --inventory $(INVENTORY)

clean:
	-test -x $(BIN)/kafka-bench && $(BIN)/kafka-bench cluster down --purge --inventory $(INVENTORY)
	rm -rf .runner .pytest_cache
