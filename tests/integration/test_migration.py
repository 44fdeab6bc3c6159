"""The ZooKeeper -> KRaft migration (playbooks/migrate-to-kraft.yml) on a running Kafka 3.9
cluster of this machine (inventories/local-migration), under acks=all load: the playbook is
killed in the middle of a phase and resumes; the cluster ends on KRaft with ZooKeeper stopped,
every partition led and every acknowledged write readable; a second run changes nothing, and
site.yml refuses to deploy the migrated brokers back in ZooKeeper mode before touching a host.

The cluster uses the broker ports of the other modules' clusters: it is deployed here and torn
down at the end of the module.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import ROOT, assert_ok, listening_ports, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

INVENTORY = ROOT / "inventories" / "local-migration"
STATE = ROOT / ".state" / "local-migration"
PORTS = {2181, 9092, 9093, 9094, 9192, 9193, 9194}
BOOTSTRAP = "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
TOPIC = "migration-load"
PARTITIONS = 6
RATE = 300  # messages per second


class AckedLoad:
    """An open-loop acks=all idempotent producer on its own thread: every acknowledged sequence
    number, every failed one, and the longest time without an acknowledgement."""

    def __init__(self) -> None:
        self.acked: set[int] = set()
        self.failed: dict[int, str] = {}
        self.longest_gap_s = 0.0
        self._last_ack = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err: KafkaError | None, msg) -> None:
        seq = int(msg.key())
        if err is not None:
            self.failed[seq] = err.str()
            return
        now = time.monotonic()
        self.longest_gap_s = max(self.longest_gap_s, now - self._last_ack)
        self._last_ack = now
        self.acked.add(seq)

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5, "message.timeout.ms": 300_000})
        start, seq = time.monotonic(), 0
        while not self._stop.is_set():
            while seq < (time.monotonic() - start) * RATE:
                producer.produce(TOPIC, key=str(seq), value=b"x" * 100, on_delivery=self._delivered)
                seq += 1
            producer.poll(0.01)
        self.sent = seq
        producer.flush(300)

    def __enter__(self) -> AckedLoad:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(330)


def playbook(name: str, *args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(INVENTORY), str(ROOT / "playbooks" / name),
            *args]


def phase(node: str) -> str:
    path = STATE / node / "config" / "migration-phase"
    return path.read_text().strip() if path.exists() else "none"


def read_all_keys() -> list[int]:
    consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "migration-check", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    ends = {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1] for p in range(PARTITIONS)}
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    keys, done = [], {p for p, end in ends.items() if end == 0}
    deadline = time.monotonic() + 120
    while len(done) < PARTITIONS and time.monotonic() < deadline:
        for msg in consumer.consume(1000, timeout=1):
            if msg.error() is None:
                keys.append(int(msg.key()))
                if msg.offset() + 1 >= ends[msg.partition()]:
                    done.add(msg.partition())
    consumer.close()
    return keys


@pytest.fixture(scope="module")
def zookeeper_cluster(runner):
    """Kafka 3.9 in ZooKeeper mode, the controllers of the migration not yet provisioned."""
    assert_ok(runner.run("teardown.yml", INVENTORY))
    assert not PORTS & listening_ports(), "a cluster still holds the ports: tear it down first"
    assert_ok(runner.run("site.yml", INVENTORY))
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result(60)
    yield
    runner.run("teardown.yml", INVENTORY)


def test_migration_under_load_resumes_after_a_kill_and_loses_no_acknowledged_write(runner, zookeeper_cluster):
    assert not {9192, 9193, 9194} & listening_ports(), "site.yml left the migration's controllers to the playbook"
    started = time.monotonic()
    with AckedLoad() as load:
        time.sleep(5)
        # Killed while it rolls the brokers into migration mode: the first broker runs its new
        # configuration, the phase recorded is still "controllers".
        first = subprocess.Popen(playbook("migrate-to-kraft.yml"), cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for(lambda: "zookeeper.metadata.migration.enable=true"
                 in (STATE / "broker0" / "config" / "server.properties").read_text() or first.poll() is not None,
                 timeout=300, what="broker0 rolled into migration mode")
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        assert phase("broker0") == "controllers"
        resumed = subprocess.run(playbook("migrate-to-kraft.yml"), cwd=ROOT, capture_output=True, text=True,
                                 timeout=1200)
        assert resumed.returncode == 0, resumed.stdout[-4000:]
        assert "Migration starts after phase controllers." in resumed.stdout
        time.sleep(5)
    elapsed = time.monotonic() - started
    keys = read_all_keys()
    lost = load.acked - set(keys)
    print(f"\nmigration under {RATE} msg/s acks=all: {elapsed:.0f} s, {load.sent} sent, {len(load.acked)} acknowledged, "
          f"{len(load.failed)} failed, {len(lost)} acknowledged and lost, {len(keys) - len(set(keys))} duplicates, "
          f"longest time without an acknowledgement {load.longest_gap_s:.1f} s")
    assert not lost, f"acknowledged writes lost: {sorted(lost)[:20]}"
    assert len(keys) == len(set(keys)), "the idempotent producer's writes were duplicated"
    assert len(load.acked) + len(load.failed) == load.sent, "a write was neither acknowledged nor failed"

    # On KRaft: ZooKeeper stopped, brokers and controllers without it, every partition led.
    assert all(phase(n) == "finalized" for n in ("broker0", "broker1", "broker2", "ctl0", "ctl1", "ctl2"))
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
    topic = AdminClient({"bootstrap.servers": BOOTSTRAP}).list_topics(TOPIC, timeout=30).topics[TOPIC]
    assert sorted(topic.partitions) == list(range(PARTITIONS))
    assert all(p.leader >= 0 and len(p.isrs) == 3 for p in topic.partitions.values())


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
