"""The ZooKeeper -> KRaft migration (playbooks/migrate-to-kraft.yml) on a running Kafka 3.9
cluster of this machine (inventories/local-migration), in the order an operator lives it: the
playbook is killed in the middle of a phase and resumes, stopping before finalization
(dual write); playbooks/rollback-to-zookeeper.yml takes the cluster back to ZooKeeper with
nothing lost; then the operations suite's scenario migrates it again as a procedure under
acks=all load with a consumer group reading, the ledger accounting for every acknowledged write,
and the cluster ends on KRaft with ZooKeeper stopped and every partition led; a second run
changes nothing, and site.yml refuses to deploy the migrated brokers back in ZooKeeper mode
before touching a host.

Each state of the story is a fixture built on the one before it, and what a state looks like is read
as soon as it is reached: a test asks for the state it checks, whichever tests run, in any order.
The cluster uses the broker ports of the other modules' clusters: it is deployed here and torn
down at the end of the module.
"""

from __future__ import annotations

import dataclasses
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
from tests.integration.procedures import ProcedureRun, run_procedure_scenario

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

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


def applied_config(node: str) -> str:
    """The checksums of the configuration the node was last started with ("" before its first start)."""
    path = STATE / node / "run" / "applied-config"
    return path.read_text() if path.exists() else ""


def phase(node: str) -> str:
    path = STATE / node / "config" / "migration-phase"
    return path.read_text().strip() if path.exists() else "none"


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What a state of the migration looks like from outside, read as soon as it is reached, so a
    test checks the state its fixture reached even when later states were reached since."""

    phases: list[str]          # each node's recorded phase, in NODES order
    properties: dict[str, str]  # each node's server.properties ("" when it has none)
    configured: list[str]      # the nodes with a config directory
    ports: set[int]            # the cluster's ports listening
    messages: int              # what the topic written before the migration holds
    controller_claim: str      # ZooKeeper's /controller znode, read when asked for ("" otherwise)

    @classmethod
    def now(cls, read_claim: bool = False) -> Snapshot:
        configs = {n: STATE / n / "config" / "server.properties" for n in NODES}
        ports = PORTS & listening_ports()
        claim = subprocess.run([str(STATE / "broker0" / "config" / "kafka-tool"), "zookeeper-shell", "get", "/controller"],
                               capture_output=True, text=True, timeout=120).stdout if read_claim else ""
        return cls([phase(n) for n in NODES], {n: c.read_text() if c.exists() else "" for n, c in configs.items()},
                   [n for n in NODES if (STATE / n / "config").exists()], ports, count_messages(BEFORE), claim)


@dataclasses.dataclass(frozen=True)
class Step:
    """A playbook run of the story and the state it left."""

    result: subprocess.CompletedProcess[str]
    after: Snapshot

    def assert_ok(self) -> None:
        assert self.result.returncode == 0, self.result.stdout[-4000:]


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
    yield Snapshot.now()
    runner.run("teardown.yml", INVENTORY)


@pytest.fixture(scope="module")
def killed_mid_roll(zookeeper_cluster, tmp_path_factory) -> Snapshot:
    """The migration playbook SIGKILLed in the middle of rolling the brokers into migration mode:
    once the first broker of the roll has restarted on its new configuration (its applied-config
    changed), which the roll writes on every broker before it restarts any."""
    before = {node: applied_config(node) for node in BROKERS}
    output = tmp_path_factory.mktemp("killed-mid-roll") / "migrate-to-kraft.out"
    with output.open("w") as out:
        first = subprocess.Popen(playbook("migrate-to-kraft.yml"), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        wait_for(lambda: any(applied_config(n) != before[n] for n in BROKERS) or first.poll() is not None,
                 timeout=300, what="a broker restarted into migration mode")
        assert first.poll() is None, f"the migration ended (rc {first.returncode}) before any broker restarted:\n" \
                                     f"{output.read_text()[-4000:]}"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    return Snapshot.now()


def _step(*args: str, read_claim: bool = False) -> Step:
    result = subprocess.run(playbook(*args), cwd=ROOT, capture_output=True, text=True, timeout=1200)
    return Step(result, Snapshot.now(read_claim))


@pytest.fixture(scope="module")
def dual_write(killed_mid_roll) -> Step:
    """The killed migration run again, stopping before finalization."""
    return _step("migrate-to-kraft.yml", "-e", "migration_finalize=false")


@pytest.fixture(scope="module")
def rolled_back(dual_write) -> Step:
    """playbooks/rollback-to-zookeeper.yml run from dual write."""
    dual_write.assert_ok()
    return _step("rollback-to-zookeeper.yml", read_claim=True)


@pytest.fixture(scope="module")
def migrated_under_load(rolled_back, runner, tmp_path_factory, spark) -> ProcedureRun:
    """The suite's scenario: the runner migrates the rolled-back cluster again, as a procedure
    under its load; the cluster's final state, which nothing after it changes."""
    rolled_back.assert_ok()
    return run_procedure_scenario(SCENARIO, INVENTORY, runner, tmp_path_factory.mktemp("migration-under-load"),
                                  keep_topic=True)  # test_the_migration_under_load... reads it on KRaft


def test_site_leaves_the_migrations_controllers_to_the_playbook(zookeeper_cluster):
    assert not {9192, 9193, 9194} & zookeeper_cluster.ports, "site.yml started the migration's controllers"
    assert zookeeper_cluster.messages == WRITTEN


def test_a_migration_killed_mid_roll_records_the_phase_it_completed(killed_mid_roll):
    assert killed_mid_roll.phases == ["controllers"] * len(NODES)
    # The roll wrote every broker's configuration before it restarted the first one.
    assert all("zookeeper.metadata.migration.enable=true" in killed_mid_roll.properties[n] for n in BROKERS)
    assert killed_mid_roll.messages == WRITTEN


def test_it_resumes_and_stops_before_finalization_in_dual_write(dual_write):
    dual_write.assert_ok()
    assert "Migration starts after phase controllers." in dual_write.result.stdout
    after = dual_write.after
    assert after.phases == ["brokers-kraft"] * len(NODES)
    assert all("process.roles=broker\n" in after.properties[n] for n in BROKERS)
    assert 2181 in after.ports, "ZooKeeper still follows the cluster until finalization"
    assert after.messages == WRITTEN


def test_a_rollback_before_finalization_returns_to_zookeeper_with_nothing_lost(rolled_back):
    rolled_back.assert_ok()
    assert "Rolling back from phase brokers-kraft." in rolled_back.result.stdout
    after = rolled_back.after
    assert after.phases[:3] == ["none"] * 3
    assert "ctl0" not in after.configured and not {9192, 9193, 9194} & after.ports
    for node in BROKERS:
        props = after.properties[node]
        assert "zookeeper.connect=" in props and "process.roles" not in props
        assert "zookeeper.metadata.migration.enable" not in props and "controller.quorum" not in props
    # A broker is the controller again (a KRaft controller's claim has kraftControllerEpoch >= 0).
    claim = after.controller_claim
    assert re.search(r'"brokerid":[012],', claim) and '"kraftControllerEpoch":-1' in claim, claim
    assert after.messages == WRITTEN


def test_the_migration_under_load_loses_no_acknowledged_write(migrated_under_load):
    result = migrated_under_load
    assert result.summary.acked > 10_000
    assert "Wait until the controllers copied the metadata from ZooKeeper" in result.plays
    assert "Take the active controller out of migration mode last" in result.plays
    assert (result.out / "procedure-steps.csv").exists()
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


def test_a_second_run_changes_nothing(runner, migrated_under_load):
    result = assert_ok(runner.run("migrate-to-kraft.yml", INVENTORY))
    assert result.count("changed") == 0, result.stats


def test_site_refuses_to_deploy_the_migrated_brokers_back_on_zookeeper(runner, migrated_under_load):
    result = runner.run("site.yml", INVENTORY)
    assert not result.ok
    messages = " ".join(f.message for f in result.failures)
    assert "runs in KRaft mode since its ZooKeeper migration reached 'finalized'" in messages
    assert "kafka_metadata_mode: kraft" in messages
    assert 2181 not in listening_ports(), "site.yml started ZooKeeper before refusing"
