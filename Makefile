# kafka-bench: two commands on a fresh machine.
#   make bench   deploy the local three-broker cluster and run the main job
#   make test    run the tests (unit, lint, Spark analysis, real clusters, install sources, the lab)
# Both create .venv and install what they need on first use.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
INVENTORY ?= inventories/local
# Tools the tests and playbooks start (ansible-playbook, molecule, ...) come from the venv.
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: docs perf-ansible perf-cpu perf-runs perf-report perf-starts perf-tools bench bench-durability bench-kraft bench-operations bench-evidence bench-lab bench-lab-kraft bench-operations-lab perf perf-deps perf-analysis report test test-full test-deps test-unit test-cluster test-roles test-lab lint install cluster-up cluster-down cluster-status lab-deps lab-up lab-down clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install -qq -e '.[dev]'  # -qq: errors only (no setuptools notices)
	@rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

## The main job: deploy the cluster, run every seed lab as a measured scenario (shortened),
## and end with the report (benchmarks/results/<time>-seeds/report.html).
bench: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/kafka-bench run seeds --quick --inventory $(INVENTORY)

## The durability sweep (acks x RF x min ISR x leader kill, plus the negative controls, 10 trials
## each: ~33 min of them): ~60 min.
bench-durability: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/kafka-bench run durability --quick --inventory $(INVENTORY)

## The seed labs on Kafka 4.3 in KRaft mode (inventories/local-kraft: three combined nodes), side by
## side with the newest ZooKeeper seeds run when there is one. The two clusters share the broker
## ports: the ZooKeeper one is stopped first (its data stays).
KRAFT_INVENTORY := inventories/local-kraft
bench-kraft: install
	$(BIN)/kafka-bench cluster down --inventory $(INVENTORY)
	$(BIN)/kafka-bench cluster up --inventory $(KRAFT_INVENTORY)
	$(BIN)/kafka-bench run seeds --quick --inventory $(KRAFT_INVENTORY)
	$(BIN)/kafka-bench compare --newest seeds --out benchmarks/results/compare-seeds

## The evidence suite: the safe profile under 64 leader kills in one run, the negative controls,
## 10 trials each, exactly-once under leader and coordinator kills (on librdkafka and on Kafka's
## Java producer), and consumer rebalances, on ZooKeeper then on KRaft (the clusters share the
## broker ports: one at a time). Fails (exit 7) when a negative control loses in fewer than 9 of
## its 10 trials. ~6 h 10 min here (the two 64-kill runs: ~3.3 h).
bench-evidence: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/kafka-bench run evidence --inventory $(INVENTORY)
	$(BIN)/kafka-bench cluster down --inventory $(INVENTORY)
	$(BIN)/kafka-bench cluster up --inventory $(KRAFT_INVENTORY)
	$(BIN)/kafka-bench run evidence --inventory $(KRAFT_INVENTORY)
	$(BIN)/kafka-bench cluster down --inventory $(KRAFT_INVENTORY)

## The operations suite, each procedure under load on the cluster it needs (they share the broker
## ports, so one at a time): on the ZooKeeper cluster the rolling restart, the throttled
## reassignment and the broker replacement; the ZooKeeper -> KRaft migration on
## inventories/local-migration; the 3.9 -> 4.3.1 upgrade on inventories/local-upgrade, and the
## 4.2.1 -> 4.3.1 upgrade (between 4.x releases) on inventories/local-upgrade-4x. ~25 min.
OPERATIONS := benchmarks/suites/operations
bench-operations: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/kafka-bench run operations --inventory $(INVENTORY)
	$(BIN)/kafka-bench cluster down --inventory $(INVENTORY)
	$(BIN)/kafka-bench cluster down --purge --inventory inventories/local-migration
	$(BIN)/kafka-bench cluster up --inventory inventories/local-migration
	$(BIN)/kafka-bench run $(OPERATIONS)/00-migrate-to-kraft.yml --inventory inventories/local-migration
	$(BIN)/kafka-bench cluster down --purge --inventory inventories/local-migration
	$(BIN)/kafka-bench cluster down --purge --inventory inventories/local-upgrade
	$(BIN)/kafka-bench cluster up --inventory inventories/local-upgrade
	$(BIN)/kafka-bench run $(OPERATIONS)/02-upgrade.yml --inventory inventories/local-upgrade
	$(BIN)/kafka-bench cluster down --purge --inventory inventories/local-upgrade
	$(BIN)/kafka-bench cluster down --purge --inventory inventories/local-upgrade-4x
	$(BIN)/kafka-bench cluster up --inventory inventories/local-upgrade-4x
	$(BIN)/kafka-bench run $(OPERATIONS)/02-upgrade.yml --inventory inventories/local-upgrade-4x
	$(BIN)/kafka-bench cluster down --purge --inventory inventories/local-upgrade-4x

## Load generator vs Kafka's producer-perf-test, ledger on vs off, open-loop accuracy, and the
## C reference loop (benchmarks/perf/native/sendloop.c) beside it.
perf: install perf-deps
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/python -m benchmarks.perf.producer_throughput --inventory $(INVENTORY)

## A run of Kafka's command-line tools with and without the archive of their classes (class-data
## sharing, made by the kafka role once a node is healthy): CPU and wall time, side by side.
perf-tools: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/python -m benchmarks.perf.tool_start --inventory $(INVENTORY)

## A Kafka node's start with and without the archive of the classes it loads (class-data sharing,
## made by the kafka role once a node is healthy): CPU and wall time until listed, side by side.
perf-starts: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)
	$(BIN)/python -m benchmarks.perf.node_start --inventory $(INVENTORY)

## Spark analysis vs DuckDB on the same Parquet files (1M and 10M synthetic messages).
perf-analysis: install
	$(BIN)/python -m benchmarks.perf.analysis_engines

## The scenario and fault-kind references and the suite catalogue (docs/reference/), generated
## from the models, the suites' files and this Makefile; and the results blocks of README.md and
## docs/*.md, from the summaries committed under docs/results/ (benchmarks/docs/docs_results.py says
## how to add one). A unit test fails when any of them is stale.
docs: install
	$(BIN)/python -m benchmarks.docs.reference
	$(BIN)/python -m benchmarks.docs.docs_results

## The report built with its intermediate results cached and checkpointed, side by side:
## make perf-report DIR=benchmarks/results/<time>-seeds
perf-report: install
	$(BIN)/python -m benchmarks.perf.analysis_keep $(DIR)

## Where a playbook's wall time goes (per task, role, module), from ansible-runner's events:
## make perf-ansible RUNS='.runner/<time>-site-<id> ...'
perf-ansible: install
	$(BIN)/python -m benchmarks.perf.ansible_time $(RUNS)

## Where a suite's runs spend their time (per step: warm-up, load, heals...), from their events:
## make perf-runs DIR=benchmarks/results/<time>-seeds
perf-runs: install
	$(BIN)/python -m benchmarks.perf.run_phases $(DIR)

## Where a command's CPU goes, by kind of process (the nodes, the load, the harness, Spark, Ansible):
## make perf-cpu CMD='.venv/bin/python -m pytest tests/integration/test_upgrade.py'
perf-cpu: install
	$(BIN)/python -m benchmarks.perf.cpu_by_process -- $(CMD)

## Re-analyse a results directory: make report DIR=benchmarks/results/<time>-seeds
report: install
	$(BIN)/kafka-bench report $(DIR)

# $(call apt-install,PACKAGES,CHECK,WHAT FOR): install Debian packages unless CHECK passes
# (updating the package lists once if the install fails).
define apt-install
@if ! { $(2); }; then \
  echo "installing $(1) (Debian packages) for $(3)"; \
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(1) >/dev/null \
    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(1) >/dev/null; }; \
fi
endef

## librdkafka's C headers for the C reference loop of `make perf` (and its tests).
PERF_PACKAGES := librdkafka-dev

perf-deps:
	$(call apt-install,$(PERF_PACKAGES),test -f /usr/include/librdkafka/rdkafka.h,the C reference loop)

## The tests: unit, tools and lint, Spark analysis, the local clusters (ZooKeeper and KRaft) with the
## main job (`kafka-bench run seeds --quick`) and a broker replaced by a new id on the first,
## install sources, the ZooKeeper -> KRaft migration (killed mid-roll, resumed, rolled back, then
## again under load), the 3.9.2 -> 4.3.1 upgrade under load and a reassignment, each role's Molecule
## scenario, then the multi-host labs (ZooKeeper, also through cp-ansible's layout, and KRaft);
## the long end-to-end checks (marked `long`) are left to `make test-full`.
## Every Debian package a test uses is installed first: a test never skips for a missing one.
## At the end, where the time went: per tier, per module, the slowest tests (.test-times/).
TEST_TIMES := .test-times
test: install test-deps
	rm -rf $(TEST_TIMES)
	$(BIN)/python -m pytest --junitxml=$(TEST_TIMES)/pytest.xml
	$(MAKE) test-lab LAB_PYTEST_ARGS=--junitxml=$(TEST_TIMES)/lab.xml
	$(BIN)/python -m benchmarks.perf.ci_times $(TEST_TIMES)/*.xml

## Everything `make test` runs and the long checks besides (marked `long`): the upgrade to 4.3.1
## from 4.2.1 (followed by the throttled reassignment; `make test` upgrades from 3.9.2), the KRaft
## active-controller kill, leader kill (and its comparison with ZooKeeper) and unclean election with
## ELR on, the acks=1-below-min-ISR, refused-write (seed 004), consumer-failover, runner-SIGKILL and
## check-mode runs on ZooKeeper, the Apache archive's wrong checksum, the secured ZooKeeper cluster,
## the perf loops, the labs' second deploys, the lab's ZooKeeper ensemble and rolling restart. About
## 2.5 hours here.
test-full: install test-deps
	$(BIN)/python -m pytest -m 'not lab'
	$(MAKE) test-lab LAB_TESTS=lab

## The C loop's headers, the lab's packages, and Vagrant (tests/tools validates the Vagrantfile).
test-deps: perf-deps lab-deps
	$(call apt-install,vagrant,command -v vagrant >/dev/null,validating the Vagrantfile)

## The fast loop: no root, no Debian package, no cluster (~1 minute). The linters and the tools
## `make test-deps` installs (Vagrant, ruby, librdkafka-dev) are exercised by tests/tools.
test-unit: install
	$(BIN)/python -m pytest tests/unit

test-cluster: install perf-deps
	$(BIN)/python -m pytest tests/integration

test-roles: install
	$(BIN)/python -m pytest -m 'not lab' tests/roles

## The lab: hosts on this machine (network namespaces with their own /etc, /opt, /var and an
## sshd), deployed over SSH with the same playbooks; torn down afterwards, also when a test fails.
LAB_INVENTORY := inventories/lab
LAB_KRAFT_INVENTORY := inventories/lab-kraft
LAB_PACKAGES := openssh-server nftables ruby

lab-deps:
	$(call apt-install,$(LAB_PACKAGES),test -x /usr/sbin/sshd && command -v nft >/dev/null && command -v ruby >/dev/null,the lab)

LAB_TESTS ?= lab and not long
LAB_PYTEST_ARGS ?=
test-lab: install lab-deps
	$(BIN)/python -m pytest -m '$(LAB_TESTS)' -s $(LAB_PYTEST_ARGS) tests/lab; status=$$?; \
	  $(BIN)/kafka-bench lab down --inventory $(LAB_INVENTORY) || status=1; \
	  $(BIN)/kafka-bench lab down --inventory $(LAB_KRAFT_INVENTORY) || status=1; exit $$status

lab-up: install lab-deps
	$(BIN)/kafka-bench lab up --inventory $(LAB_INVENTORY)
	$(BIN)/kafka-bench cluster up --inventory $(LAB_INVENTORY)

lab-down: install
	$(BIN)/kafka-bench lab down --inventory $(LAB_INVENTORY)

## The multi-host failover scenarios (broker kill, host isolation, Jepsen's partition, full disk,
## packet loss) on the lab.
bench-lab: lab-up
	$(BIN)/kafka-bench run lab --inventory $(LAB_INVENTORY)

## The kraft suite on the KRaft lab (a dedicated controller and a broker on each of three hosts).
bench-lab-kraft: install lab-deps
	$(BIN)/kafka-bench lab up --inventory $(LAB_KRAFT_INVENTORY)
	$(BIN)/kafka-bench cluster up --inventory $(LAB_KRAFT_INVENTORY)
	$(BIN)/kafka-bench run kraft --inventory $(LAB_KRAFT_INVENTORY)

## The operations suite on the lab, each procedure on the lab it needs (three labs, side by side:
## their own subnets): the rolling restart, the reassignment and the broker replacement on the
## ZooKeeper lab; the ZooKeeper -> KRaft migration on inventories/lab-migration (a ZooKeeper
## server, a broker and a dedicated controller per host); the 3.9 -> 4.3.1 upgrade on
## inventories/lab-upgrade (a dedicated controller and a broker per host). Each lab is taken down
## after its runs. ~40 min.
# $(call run-on-lab,INVENTORY,SUITE OR SCENARIO): the lab and its cluster up, the runs, the lab down.
define run-on-lab
	$(BIN)/kafka-bench lab up --inventory $(1)
	$(BIN)/kafka-bench cluster up --inventory $(1)
	$(BIN)/kafka-bench run $(2) --inventory $(1)
	$(BIN)/kafka-bench lab down --inventory $(1)
endef
bench-operations-lab: install lab-deps
	$(call run-on-lab,$(LAB_INVENTORY),operations)
	$(call run-on-lab,inventories/lab-migration,$(OPERATIONS)/00-migrate-to-kraft.yml)
	$(call run-on-lab,inventories/lab-upgrade,$(OPERATIONS)/02-upgrade.yml)

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --offline
	$(BIN)/lint-imports

cluster-up: install
	$(BIN)/kafka-bench cluster up --inventory $(INVENTORY)

cluster-status: install
	$(BIN)/kafka-bench cluster status --inventory $(INVENTORY)

cluster-down: install
	$(BIN)/kafka-bench cluster down --purge --inventory $(INVENTORY)

clean:
	-test -x $(BIN)/kafka-bench && $(BIN)/kafka-bench cluster down --purge --inventory $(INVENTORY)
	rm -rf .runner .pytest_cache .test-times
