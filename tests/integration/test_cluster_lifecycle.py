"""The local cluster from deploy to teardown, with the seed labs' checks (000, 002).

The tests share one cluster: deploy, use, break, heal, re-run, tear down. Each asks for the state
it needs (the deployed cluster, seed 000's topic), so any one of them runs alone.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from benchmarks.core import paths
from benchmarks.harness import faults, smoke, steady
from benchmarks.hosts import host_probe
from benchmarks.kafka import cluster
from benchmarks.perf import ansible_time
from tests.conftest import (
    CLUSTER_PORTS,
    LOCAL_INVENTORY,
    ROOT,
    assert_ok,
    listening_ports,
    run_cli,
    service_pids,
    wait_for,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

def test_deploy_gives_a_healthy_three_broker_cluster(deployed_cluster):
    status = cluster.describe(deployed_cluster)
    assert [b.broker_id for b in status.brokers] == [0, 1, 2]
    assert all(b.alive for b in status.brokers), status.problems()
    assert status.controller_id in (0, 1, 2)
    assert [z.mode for z in status.zookeepers] == ["standalone"]
    assert listening_ports() >= CLUSTER_PORTS


@pytest.fixture(scope="module")
def purchases(deployed_cluster) -> smoke.SmokeResult:
    """Seed 000's topic, for the tests that read it: purchases with RF 3 and 3 partitions, 500
    messages written and read back."""
    return smoke.run_smoke(deployed_cluster.connection(), "purchases", partitions=3, replication_factor=3,
                           messages=500)


def test_purchases_topic_is_replicated_and_round_trips(deployed_cluster, purchases):
    """Seed 000: purchases with RF 3 and 3 partitions; produce, consume, all replicas in sync."""
    assert purchases.ok, purchases
    assert (purchases.sent, purchases.acked, purchases.consumed, purchases.missing) == (500, 500, 500, [])
    parts = cluster.describe(deployed_cluster).topic("purchases")
    assert [p.partition for p in parts] == [0, 1, 2]
    for p in parts:
        assert sorted(p.replicas) == [0, 1, 2]
        assert sorted(p.isr) == [0, 1, 2], f"partition {p.partition} ISR {p.isr}"
        assert p.leader in p.replicas


def test_status_command_shows_partitions_as_json(deployed_cluster, purchases):
    proc = run_cli("cluster", "status", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["healthy"] is True
    rows = [p for p in doc["partitions"] if p["topic"] == "purchases"]
    assert len(rows) == 3 and all(sorted(r["isr"]) == [0, 1, 2] for r in rows)
    assert doc["controller"] in (0, 1, 2)


def test_kill_9_moves_leadership_and_restart_restores_isr(deployed_cluster, purchases, runner):
    """Seed 002: kill -9 a broker; the partitions it led get new leaders and the ISR shrinks;
    restart it: the ISR recovers and the preferred leaders can be restored."""
    inv = deployed_cluster
    bootstrap = inv.connection()
    # Start from preferred leadership so broker 1 leads the partition whose first replica it is.
    # wait_recovered elects them, asking again while the controller answers "not yet".
    steady.wait_recovered(inv, timeout_s=120)
    victim = inv.broker(1)
    led = [p.partition for p in cluster.describe(inv).topic("purchases") if p.leader == 1]
    assert led, "broker 1 leads no partition of purchases"

    pid = int(subprocess.check_output([victim.ctl, "pid"], text=True))
    os.kill(pid, signal.SIGKILL)
    # At once, while broker 1 is still registered (its ZooKeeper session has not expired yet),
    # `cluster status` sees the dead process and the closed port.
    proc = run_cli("cluster", "status", "--json")
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "broker 1 (broker1, 127.0.0.1:9093): its process is stopped" in json.loads(proc.stdout)["problems"]

    def failed_over():
        status = cluster.describe(inv)
        parts = status.topic("purchases")
        moved = all(p.leader not in (None, 1) for p in parts if p.partition in led)
        shrunk = all(1 not in p.isr for p in parts)
        down = not next(b for b in status.brokers if b.broker_id == 1).alive
        return status if moved and shrunk and down else None

    status = wait_for(failed_over, 90, what="new leaders and an ISR without broker 1")
    for p in status.topic("purchases"):
        assert p.leader in (0, 2) and sorted(p.isr) == sorted(set(p.replicas) - {1})
    proc = run_cli("cluster", "status", "--json")
    assert proc.returncode == 5, "status must report an unhealthy cluster with exit code 5"
    assert any("broker 1" in problem for problem in json.loads(proc.stdout)["problems"])
    # Writes still succeed with one broker down.
    assert smoke.run_smoke(bootstrap, "purchases", 3, 3, messages=200).ok

    assert_ok(runner.run("start.yml", LOCAL_INVENTORY, limit="broker1"))
    # The restarted broker maps the archive of the classes its host's brokers loaded as they started.
    pid = int(subprocess.check_output([victim.ctl, "pid"], text=True))
    argv = Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    [archive] = [a.split("=", 1)[1] for a in argv if a.startswith("-XX:SharedArchiveFile=")]
    assert os.path.getsize(archive) > 10_000_000, archive
    # Back in every ISR, then the preferred leaders elected again. The election is asked again while
    # the controller times it out (it did in CI, busy with the returning broker).
    steady.wait_recovered(inv, timeout_s=180)
    for p in cluster.describe(inv).topic("purchases"):
        assert sorted(p.isr) == [0, 1, 2] and p.leader == p.replicas[0], p


def test_faults_are_injected_and_kafka_bench_heal_reverts_them_all(deployed_cluster, runner):
    """Pause one broker, kill -9 another, stop ZooKeeper; `kafka-bench heal` brings everything
    back from the journal alone; a second heal changes nothing."""
    inv = deployed_cluster
    injector = faults.AnsibleFaultInjector(runner, LOCAL_INVENTORY)

    def state(ctl):
        return subprocess.run([ctl, "status"], capture_output=True).returncode

    injector.inject(injector.new_record("broker-pause", ["broker2"], 2, "broker 2"))
    injector.inject(injector.new_record("broker-kill", ["broker0"], 0, "broker 0"))
    injector.inject(injector.new_record("zookeeper-stop", ["zk0"], None, "every ZooKeeper server"))
    assert (state(inv.broker(2).ctl), state(inv.broker(0).ctl), state(inv.zookeepers[0].ctl)) == (4, 3, 3)
    assert host_probe.zookeeper_mode(inv.zookeepers[0]) is None

    proc = run_cli("heal")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for line in ("reverted zookeeper-stop on zk0", "reverted broker-kill on broker0", "reverted broker-pause on broker2"):
        assert line in proc.stderr
    assert proc.stderr.index("reverted zookeeper-stop") < proc.stderr.index("reverted broker-kill")
    assert (state(inv.broker(2).ctl), state(inv.broker(0).ctl), state(inv.zookeepers[0].ctl)) == (0, 0, 0)
    wait_for(lambda: cluster.describe(inv).healthy, 120, what="a healthy cluster after heal")

    again = run_cli("heal")
    assert again.returncode == 0, again.stderr
    assert "no fault to revert" in again.stderr and "start.yml: 0 change(s)" in again.stderr


def test_a_broker_that_cannot_restart_fails_its_deploy_at_once_with_its_log(deployed_cluster, runner):
    """A heap the JVM refuses, deployed to broker 2 alone: the changed JVM options restart it (they
    are part of the configuration a node was started with), and the restart fails as soon as the
    process is gone, its log's last lines in the message, not after the health timeout (180 s);
    the other brokers stay up. site.yml with the inventory's settings brings broker 2 back."""
    inv = deployed_cluster
    started = time.monotonic()
    result = runner.run("site.yml", LOCAL_INVENTORY, limit="broker2", extravars={"kafka_heap_size": "1k"})
    took = time.monotonic() - started
    assert not result.ok
    [failure] = result.failures
    assert failure.host == "broker2" and "Too small maximum heap" in failure.message, failure
    assert took < 90, f"the failed restart took {took:.0f} s to be reported"
    for broker in (0, 1):
        assert subprocess.run([inv.broker(broker).ctl, "status"], capture_output=True).returncode == 0

    assert_ok(runner.run("site.yml", LOCAL_INVENTORY, limit="broker2"))
    wait_for(lambda: cluster.describe(inv).healthy, 120, what="a healthy cluster with broker 2 back")


@pytest.mark.long  # check mode on a running cluster is in `make test` on KRaft (test_kraft.py)
def test_check_mode_works_on_the_running_cluster(deployed_cluster, runner):
    result = assert_ok(runner.run("site.yml", LOCAL_INVENTORY, check=True))
    assert result.count("changed") == 0, result.stats.get("changed")


def test_a_second_cluster_up_changes_nothing_and_reports_healthy(deployed_cluster):
    """`kafka-bench cluster up` on the deployed cluster: site.yml again, with nothing to change. It
    validates every host before changing any, then runs the role: each setting is checked once in
    the run, what the node holds twice."""
    before = set(paths.RUNNER_DIR.glob("*-site-*"))
    proc = run_cli("cluster", "up")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"site\.yml: successful in \d+ s \(ok=\d+, changed=0, failures=0, dark=0\)", proc.stderr), proc.stderr
    assert "healthy: 3 brokers" in proc.stdout
    [run] = set(paths.RUNNER_DIR.glob("*-site-*")) - before
    tasks = collections.Counter(t.name for t in ansible_time.read(run).tasks)
    assert tasks["Check min.insync.replicas against the default replication factor"] == 1, tasks
    assert tasks["Read this node's storage identity, migration phase, release and applied configuration"] == 2, tasks


@pytest.mark.changes_cluster  # broker 2 stays stopped: after every other test on the cluster
def test_a_broker_replaced_by_a_new_host_with_a_new_id_hands_it_every_replica(deployed_cluster, purchases, runner,
                                                                             tmp_path):
    """The inventory gains broker3 (the new machine, id 3, port 9095); replace-broker.yml deploys it,
    moves every replica of broker 2 onto it (2's place in each replica list, so the preferred
    leadership too), stops broker 2 and elects the preferred leaders; no message is lost, and a
    second run changes nothing."""
    bootstrap = deployed_cluster.bootstrap_servers

    def messages() -> int:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "replace-check"})
        try:
            return sum(high - low for low, high in (consumer.get_watermark_offsets(TopicPartition("purchases", p), timeout=30)
                                                     for p in range(3)))
        finally:
            consumer.close()

    before = {p.partition: p.replicas for p in cluster.describe(deployed_cluster).topic("purchases")}
    assert all(2 in replicas for replicas in before.values())
    written = messages()
    inventory = tmp_path / "with-broker3"
    inventory.mkdir()
    (inventory / "group_vars").symlink_to(LOCAL_INVENTORY / "group_vars")
    hosts = yaml.safe_load((LOCAL_INVENTORY / "hosts.yml").read_text())
    hosts["all"]["children"]["kafka"]["hosts"]["broker3"] = {"kafka_port": 9095}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    extravars = {"kafka_bench_state_dir": str(ROOT / ".state" / "local"), "replace_broker_id": 2,
                 "replace_new_broker_id": 3}
    try:
        assert_ok(runner.run("replace-broker.yml", inventory, extravars=extravars))
        metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
        assert sorted(metadata.brokers) == [0, 1, 3]
        for number, partition in sorted(metadata.topics["purchases"].partitions.items()):
            assert partition.replicas == [3 if b == 2 else b for b in before[number]], (number, partition.replicas)
            assert partition.leader == partition.replicas[0], "the preferred leaders were elected"
        assert not any(2 in p.replicas for p in metadata.topics["__consumer_offsets"].partitions.values())
        assert subprocess.run([deployed_cluster.broker(2).ctl, "status"]).returncode == 3, "broker 2 is stopped"
        assert messages() == written
        again = assert_ok(runner.run("replace-broker.yml", inventory, extravars=extravars))
        assert again.count("changed") == 0, again.stats
    finally:
        runner.run("teardown.yml", inventory, extravars=extravars, limit="broker3")


@pytest.mark.teardown  # after tests/integration/test_runner.py too, which runs on the same cluster
def test_teardown_leaves_no_process_no_port_no_state(deployed_cluster, runner):
    assert_ok(runner.run("teardown.yml", LOCAL_INVENTORY))
    assert not {name for name in service_pids() if not name.startswith("kafka-bench-molecule")}
    assert not CLUSTER_PORTS & listening_ports()
    assert not (ROOT / ".state" / "local").exists()
    # A second teardown of nothing succeeds and touches nothing.
    result = assert_ok(runner.run("teardown.yml", LOCAL_INVENTORY))
    assert result.count("changed") == 0
