"""The CPU-by-process measurement's attribution (benchmarks/perf/cpu_by_process.py)."""

from __future__ import annotations

import pytest

from benchmarks.perf import cpu_by_process
from benchmarks.perf.cpu_by_process import Sampler, kind


@pytest.mark.parametrize(("argv", "expected"), [
    ("java -Dkafka.bench.service=kafka-bench-broker0 -Xmx512m kafka.Kafka server.properties", "kafka node"),
    ("java -Dkafka.bench.service=kafka-bench-zk0 org.apache.zookeeper.server.quorum.QuorumPeerMain", "zookeeper node"),
    ("java -Dkafka.bench.service=kafka-bench-securezk-broker0 -cp /opt/libs/zookeeper-3.8.4.jar kafka.Kafka", "kafka node"),
    ("/usr/lib/jvm/java-17-openjdk-amd64/bin/java -cp /v/pyspark/jars/* org.apache.spark.deploy.SparkSubmit", "spark"),
    ("java -cp ledger.jar LedgerProducer", "java load"),
    ("java -cp /opt/kafka/libs/* org.apache.kafka.tools.FeatureCommand", "kafka tools (java)"),
    ("/venv/bin/python /venv/bin/ansible-playbook -i inventories/local site.yml", "ansible"),
    ("/venv/bin/python /root/.ansible/tmp/x/AnsiballZ_kafka_health.py", "ansible"),
    ("/venv/bin/python -B -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=7)", "load processes (python)"),
    ("/venv/bin/python /venv/bin/kafka-bench run seeds --quick", "harness (python)"),
    ("/venv/bin/python -m pytest tests/integration", "harness (python)"),
    ("/usr/sbin/sshd -D", "sshd"),
    ("", "kernel or unreadable"),
])
def test_each_process_is_put_with_its_kind(argv, expected):
    assert kind([a.encode() for a in argv.split(" ")] if argv else []) == expected


def test_running_processes_count_from_the_start_new_ones_whole_and_a_script_by_what_it_execs(monkeypatch):
    """A broker already running counts its ticks since the first sample; a process born later
    counts all of its own; a control script that execs its JVM is put with the JVM, and so is a
    fork of the harness that execs Spark's."""
    ticks = {(10, "1"): 500}
    argv = {10: b"java\0-Dkafka.bench.service=kafka-bench-broker0", 20: b"sh\0kafka-service\0start",
            30: b"/venv/bin/python\0-c\0from multiprocessing.spawn import spawn_main",
            40: b"/venv/bin/python\0/venv/bin/kafka-bench\0report"}
    monkeypatch.setattr(cpu_by_process, "processes", lambda: iter(ticks.items()))
    monkeypatch.setattr(cpu_by_process, "command_line", lambda pid: argv[pid].split(b"\0"))
    monkeypatch.setattr(cpu_by_process, "TICKS", 100)
    sampler = Sampler()
    ticks.update({(10, "1"): 700, (20, "5"): 50, (30, "6"): 300, (40, "7"): 100})
    sampler.sample()
    argv[20] = b"java\0-Dkafka.bench.service=kafka-bench-broker1"  # the script exec'd its JVM
    argv[40] = b"/usr/lib/jvm/bin/java\0-cp\0/venv/pyspark/jars/*\0org.apache.spark.deploy.SparkSubmit"
    ticks.update({(20, "5"): 250, (40, "7"): 600})
    sampler.sample()
    assert sampler.by_kind() == [(6.0, 1, "spark"), (4.5, 2, "kafka node"), (3.0, 1, "load processes (python)")]
