"""Shared fixtures. Integration tests drive real ZooKeeper and Kafka processes; nothing is mocked."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from benchmarks.core import paths
from benchmarks.core.wait import WaitTimeout, wait_until
from benchmarks.hosts import inventory as inventory_lib
from benchmarks.hosts.ansible import AnsibleRunner, PlaybookResult, summarize_failures

ROOT = paths.PROJECT_ROOT
LOCAL_INVENTORY = paths.DEFAULT_INVENTORY
KRAFT_INVENTORY = paths.INVENTORIES / "local-kraft"
KAFKA_BENCH = str(Path(sys.executable).parent / "kafka-bench")
T = TypeVar("T")


def wait_for(probe: Callable[[], T], timeout: float, interval: float = 1.0, what: str = "condition") -> T:
    """Poll `probe` until it returns something truthy; fail the test after `timeout` seconds."""
    try:
        return wait_until(probe, timeout, interval_s=interval, what=what)
    except WaitTimeout as exc:
        pytest.fail(f"{exc}; last value: {exc.last!r}")


def assert_ok(result: PlaybookResult) -> PlaybookResult:
    assert result.ok, f"{result.playbook} failed:\n{summarize_failures(result.failures)}"
    return result


def service_pids(marker_prefix: str = "kafka-bench-") -> dict[str, int]:
    """Processes started by the roles' control scripts on this host, by service name: the lab's
    hosts (their own PID namespaces, tests/lab) are other hosts, whose services may run meanwhile."""
    found = {}
    here = os.readlink("/proc/self/ns/pid")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/ns/pid") != here:
                continue
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for arg in args:
            match = re.fullmatch(rb"-Dkafka\.bench\.service=(" + re.escape(marker_prefix.encode()) + rb"\S*)", arg)
            if match:
                found[match.group(1).decode()] = int(entry)
    return found


def listening_ports() -> set[int]:
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def run_cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([KAFKA_BENCH, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


# The modules that use the session's local ZooKeeper cluster (`deployed_cluster`, deployed once).
LOCAL_CLUSTER_MODULES = ("test_cluster_lifecycle.py", "test_runner.py", "test_main_job.py")


def pytest_collection_modifyitems(config, items):
    """The local ZooKeeper cluster is deployed once: the modules that use it run one after the
    other, the tests that change it for good (marked `changes_cluster`) after the others, and its
    teardown test (marked `teardown`) after all of them, before the modules of the other clusters
    (they take the same ports). Every other test keeps its place."""
    local = [item for item in items if item.path.name in LOCAL_CLUSTER_MODULES]
    if not local:
        return
    first = items.index(local[0])
    others = [item for item in items if item.path.name not in LOCAL_CLUSTER_MODULES]
    teardown = [item for item in local if item.get_closest_marker("teardown")]
    changes = [item for item in local if item.get_closest_marker("changes_cluster") and item not in teardown]
    keeps = [item for item in local if item not in teardown and item not in changes]
    items[:] = others[:first] + keeps + changes + teardown + others[first:]


@pytest.fixture(scope="session")
def runner(tmp_path_factory) -> AnsibleRunner:
    return AnsibleRunner(artifact_root=tmp_path_factory.mktemp("ansible-runner"))


@pytest.fixture(scope="session")
def local_inventory() -> inventory_lib.ClusterInventory:
    return inventory_lib.load(LOCAL_INVENTORY)


CLUSTER_PORTS = {2181, 9092, 9093, 9094}


def foreign_services() -> dict[str, int]:
    """Services of the local layout started from another checkout (their paths differ)."""
    mine = str(ROOT / ".state" / "local")
    out = {}
    for name, pid in service_pids().items():
        if name.startswith("kafka-bench-molecule"):
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if mine not in cmdline:
            out[name] = pid
    return out


@pytest.fixture(scope="session")
def deployed_cluster(runner, local_inventory):
    """The local three-broker cluster, deployed with playbooks/site.yml."""
    foreign = foreign_services()
    if foreign:
        pytest.fail(f"ports {sorted(CLUSTER_PORTS)} are held by a kafka-bench cluster of another checkout "
                    f"(pids {foreign}); stop it with its own `kafka-bench cluster down --purge`")
    started = time.monotonic()
    result = assert_ok(runner.run("site.yml", LOCAL_INVENTORY))
    print(f"\nsite.yml deployed the local cluster in {time.monotonic() - started:.0f} s "
          f"(changed={result.count('changed')})")
    return local_inventory


@pytest.fixture(scope="session")
def results_by_mode(tmp_path_factory) -> Path:
    """Analysed result directories of the same scenario on each metadata mode (<dir>/kraft,
    <dir>/zookeeper), for `kafka-bench compare` on real runs."""
    return tmp_path_factory.mktemp("results-by-mode")


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for every test that analyses ledgers (local[2], quiet). Interpreted
    expressions, as `kafka-bench report` runs an input this small (session.fit_codegen)."""
    from benchmarks.analysis.session import CODEGEN_MODE, spark_session

    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2", CODEGEN_MODE: "NO_CODEGEN"},
                            app_name="kafka-bench-tests")
    yield session
    session.stop()
