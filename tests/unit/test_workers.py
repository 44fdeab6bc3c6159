"""The load processes' bookkeeping, without a cluster: counters, the movable end, crashed producers."""

from __future__ import annotations

from benchmarks.core.connection import Connection
from benchmarks.harness import load
from benchmarks.harness.workers import LoadProcesses
from benchmarks.spec.scenario import Scenario


class Exited:
    def __init__(self, code):
        self.exitcode = code

    def join(self, timeout=None):
        pass

    def is_alive(self):
        return False


def processes(tmp_path) -> LoadProcesses:
    scenario = Scenario.model_validate({"name": "w", "workload": {
        "producers": 2, "consumer_groups": [{"name": "g", "consumers": 2}]}})
    return LoadProcesses(scenario, "r1", Connection.plaintext("127.0.0.1:9092"), "t", tmp_path)


def test_a_crashed_producer_is_a_reason_to_invalidate_the_run(tmp_path):
    workers = processes(tmp_path)
    workers.producers = [Exited(0), Exited(-9), Exited(3)]
    assert workers.join_producers() == ["producer 1 exited with signal 9", "producer 2 exited with code 3"]


def test_counters_add_up_per_producer_and_per_group(tmp_path):
    workers = processes(tmp_path)
    for slot, values in enumerate([(10, 8, 1, 1), (5, 5, 0, 0)]):
        for i, value in enumerate(values):
            workers.counters[slot * load.COUNTERS + i] = value
    workers.consumers = [("g", None, None, 2), ("g", None, None, 3)]
    workers.counters[2 * load.COUNTERS] = 7
    workers.counters[3 * load.COUNTERS] = 6
    assert workers.totals() == (15, 13, 1, 1)
    assert workers.consumed() == {"g": 13}
    assert not workers.consumers_joined()
    workers.counters[2 * load.COUNTERS + load.JOINED] = workers.counters[3 * load.COUNTERS + load.JOINED] = 1
    assert workers.consumers_joined()


def test_the_load_is_only_ever_extended(tmp_path):
    workers = processes(tmp_path)
    workers._end.value = 100
    workers.extend_load(50)
    assert workers.end_ns == 100
    workers.extend_load(150)
    assert workers.end_ns == 150


def test_the_java_producer_gets_the_schedule_and_the_transactional_profile_it_shares_with_librdkafka():
    from benchmarks.core.connection import Connection
    from benchmarks.harness import java_load, load
    from benchmarks.harness import transactions as txns

    args = load.ProducerArgs(1, "r123456789", Connection.plaintext("127.0.0.1:9092"), "kb-t", {"linger.ms": 5},
                             200.0, 10**18, 10**18 + 10**9, 100, 16, "/nowhere",
                             transactions=txns.TransactionArgs(50, 0.1, 60_000, 21))
    got = java_load.settings(args)
    assert got == {
        "bench.tag": "r1234567", "bench.index": "1", "bench.topic": "kb-t", "bench.message_size": "100",
        "bench.keys": "16", "bench.start_ns": str(10**18), "bench.end_ns": str(10**18 + 10**9),
        "bench.interval_ns": "5000000", "bench.txn.messages": "50", "bench.txn.abort_ratio": "0.1",
        "bench.txn.timeout_ms": "60000", "bench.txn.seed": "21", "bench.message.header_format": ">8sIQq",
        "bench.message.header_size": "28", "bench.message.key_stride": "7919", "bench.message.key_prefix": "k",
        "producer.acks": "all", "producer.linger.ms": "5",
        "producer.bootstrap.servers": "127.0.0.1:9092", "producer.transaction.timeout.ms": "60000",
        "producer.transactional.id": txns.transactional_id("r123456789", 1)}
