"""The ZooKeeper -> KRaft migration (playbooks/migrate-to-kraft.yml) on a running Kafka 3.9
cluster of this machine (inventories/local-migration), in the order an operator lives it: the
playbook is killed in the middle of a phase and resumes, stopping before finalization
(dual write); playbooks/rollback-to-zookeeper.yml takes the cluster back to ZooKeeper with
nothing lost; then the operations suite's scenario migrates it again as a procedure under
acks=all load with a consumer group reading, the ledger accounting for every acknowledged write,
and the cluster ends on KRaft with ZooKeeper stopped and every partition led; a second run
changes nothing, and site.yml refuses to deploy the migrated brokers back in ZooKeeper mode
before touching a host.

The cluster uses the broker ports of the other modules' clusters: it is deployed here and torn
down at the end of the module.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import ROOT, assert_ok, listening_ports, wait_for
from tests.integration.procedures import run_procedure_scenario

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.long]

INVENTORY = ROOT / "inventories" / "local-migration"
STATE = ROOT / ".state" / "local-migration"
PORTS = {2181, 9092, 9093, 9094, 9192, 9193, 9194}
BOOTSTRAP = "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
SCENARIO = ROOT / "benchmarks" / "suites" / "operations" / "00-migrate-to-kraft.yml"
NODES = ("broker0", "broker1", "broker2", "ctl0", "ctl1", "ctl2")
BROKERS = NODES[:3]
BEFORE = "written-before-the-migration"  # a topic of acknowledged writes every phase must keep
WRITTEN = 5000


def count_messages(topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "migration-check"})
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        return sum(high - low for low, high in (consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                                                 for p in metadata.partitions))
    finally:
        consumer.close()


def playbook(name: str, *args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(INVENTORY), str(ROOT / "playbooks" / name),
            *args]


def phase(node: str) -> str:
    path = STATE / node / "config" / "migration-phase"
    return path.read_text().strip() if path.exists() else "none"


@pytest.fixture(scope="module")
def zookeeper_cluster(runner):
    """Kafka 3.9 in ZooKeeper mode, the controllers of the migration not yet provisioned."""
    assert_ok(runner.run("teardown.yml", INVENTORY))
    assert not PORTS & listening_ports(), "a cluster still holds the ports: tear it down first"
    assert_ok(runner.run("site.yml", INVENTORY))
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})  # kept alive until its future completes
    admin.create_topics([NewTopic(BEFORE, 3, 3, config={"min.insync.replicas": "2"})])[BEFORE].result(60)
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all", "enable.idempotence": True})
    acked = []
    for i in range(WRITTEN):
        producer.produce(BEFORE, str(i).encode(), on_delivery=lambda err, msg: acked.append(err is None))
    producer.flush(60)
    assert acked.count(True) == WRITTEN
    yield
    runner.run("teardown.yml", INVENTORY)


def test_a_migration_killed_mid_roll_records_the_phase_it_completed(zookeeper_cluster):
    assert not {9192, 9193, 9194} & listening_ports(), "site.yml left the migration's controllers to the playbook"
    # Killed while it rolls the brokers into migration mode: the first broker has its new
    # configuration (running or not), the phase recorded is still "controllers".
    assert count_messages(BEFORE) == WRITTEN
    first = subprocess.Popen(playbook("migrate-to-kraft.yml"), cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    wait_for(lambda: "zookeeper.metadata.migration.enable=true"
             in (STATE / "broker0" / "config" / "server.properties").read_text() or first.poll() is not None,
             timeout=300, what="broker0 rolled into migration mode")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert [phase(n) for n in NODES] == ["controllers"] * len(NODES)


def test_it_resumes_and_stops_before_finalization_in_dual_write(zookeeper_cluster):
    resumed = subprocess.run(playbook("migrate-to-kraft.yml", "-e", "migration_finalize=false"), cwd=ROOT,
                             capture_output=True, text=True, timeout=1200)
    assert resumed.returncode == 0, resumed.stdout[-4000:]
    assert "Migration starts after phase controllers." in resumed.stdout
    assert [phase(n) for n in NODES] == ["brokers-kraft"] * len(NODES)
    assert all("process.roles=broker\n" in (STATE / n / "config" / "server.properties").read_text() for n in BROKERS)
    assert 2181 in listening_ports(), "ZooKeeper still follows the cluster until finalization"
    assert count_messages(BEFORE) == WRITTEN


def test_a_rollback_before_finalization_returns_to_zookeeper_with_nothing_lost(zookeeper_cluster):
    rolled = subprocess.run(playbook("rollback-to-zookeeper.yml"), cwd=ROOT, capture_output=True, text=True,
                            timeout=1200)
    assert rolled.returncode == 0, rolled.stdout[-4000:]
    assert "Rolling back from phase brokers-kraft." in rolled.stdout
    assert [phase(n) for n in BROKERS] == ["none"] * 3
    assert not (STATE / "ctl0" / "config").exists() and not {9192, 9193, 9194} & listening_ports()
    for node in BROKERS:
        props = (STATE / node / "config" / "server.properties").read_text()
        assert "zookeeper.connect=" in props and "process.roles" not in props
        assert "zookeeper.metadata.migration.enable" not in props and "controller.quorum" not in props
    controller = subprocess.run([str(STATE / "broker0" / "config" / "kafka-tool"), "zookeeper-shell", "get",
                                 "/controller"], capture_output=True, text=True, timeout=120).stdout
    # A broker is the controller again (a KRaft controller's claim has kraftControllerEpoch >= 0).
    assert re.search(r'"brokerid":[012],', controller) and '"kraftControllerEpoch":-1' in controller, controller
    assert count_messages(BEFORE) == WRITTEN


def test_the_migration_under_load_loses_no_acknowledged_write(zookeeper_cluster, runner, tmp_path, spark):
    """The suite's scenario: the runner migrates the cluster (again) as a procedure under its load."""
    result = run_procedure_scenario(SCENARIO, INVENTORY, runner, tmp_path)
    assert result.summary.acked > 10_000
    assert "Wait until the controllers copied the metadata from ZooKeeper" in result.plays
    assert "Take the active controller out of migration mode last" in result.plays
    assert (tmp_path / "procedure-steps.csv").exists()
    assert count_messages(BEFORE) == WRITTEN
    assert "What each step of the procedure cost" in result.html

    # On KRaft: ZooKeeper stopped (and left so by the heal after the run), brokers and controllers
    # without it, every partition led.
    assert [phase(n) for n in NODES] == ["finalized"] * len(NODES)
    assert 2181 not in listening_ports()
    for node in ("broker0", "broker1", "broker2"):
        props = (STATE / node / "config" / "server.properties").read_text()
        assert "process.roles=broker\n" in props and "zookeeper" not in props
    for node in ("ctl0", "ctl1", "ctl2"):
        assert "zookeeper" not in (STATE / node / "config" / "server.properties").read_text()
    quorum = subprocess.run([str(STATE / "ctl0" / "config" / "kafka-tool"), "metadata-quorum", "describe", "--status"],
                            capture_output=True, text=True, check=True, timeout=120).stdout
    assert any(line.startswith("LeaderId:") and line.split()[1] in {"9990", "9991", "9992"}
               for line in quorum.splitlines()), quorum
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    metadata = admin.list_topics(timeout=30)
    topic = next(t for name, t in metadata.topics.items() if name.startswith("kb-migrate-to-kraft"))
    assert len(topic.partitions) == 6 and all(p.leader >= 0 for p in topic.partitions.values())


def test_a_second_run_changes_nothing(runner, zookeeper_cluster):
    result = assert_ok(runner.run("migrate-to-kraft.yml", INVENTORY))
    assert result.count("changed") == 0, result.stats


def test_site_refuses_to_deploy_the_migrated_brokers_back_on_zookeeper(runner, zookeeper_cluster):
    result = runner.run("site.yml", INVENTORY)
    assert not result.ok
    messages = " ".join(f.message for f in result.failures)
    assert "runs in KRaft mode since its ZooKeeper migration reached 'finalized'" in messages
    assert "kafka_metadata_mode: kraft" in messages
    assert 2181 not in listening_ports(), "site.yml started ZooKeeper before refusing"
