"""The timeline sampler without a cluster: an admin client and a watermark client that answer
what a broker would, including librdkafka's refusal after an ISR change under ZooKeeper."""
from __future__ import annotations

import time
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq

from benchmarks.core.connection import Connection
from benchmarks.harness.timeline import TimelineSampler

TOPIC = "kb-test"


def _future(value: Any = None, error: Exception | None = None) -> Future:
    f: Future = Future()
    if error:
        f.set_exception(error)
    else:
        f.set_result(value)
    return f


class Admin:
    """Two partitions led by broker 1 with ISR {1}; ListOffsets answers partition 0 and is
    refused for partition 1 with a stale leader epoch."""

    def list_topics(self, topic: str, timeout: float) -> Any:
        partitions = {p: SimpleNamespace(id=p, leader=1, replicas=[1, 2], isrs=[1]) for p in (0, 1)}
        return SimpleNamespace(brokers={0: None, 1: None}, controller_id=0,
                               topics={topic: SimpleNamespace(partitions=partitions)})

    def list_offsets(self, request: dict, request_timeout: float) -> dict:
        return {tp: _future(SimpleNamespace(offset=1000)) if tp.partition == 0
                else _future(error=RuntimeError("FENCED_LEADER_EPOCH")) for tp in request}


class Watermarks:
    def __init__(self) -> None:
        self.asked: list[int] = []
        self.closed = False

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        self.asked.append(tp.partition)
        return 0, 2000

    def close(self) -> None:
        self.closed = True


def test_a_high_watermark_refused_for_a_stale_epoch_is_asked_again_without_one(tmp_path: Path) -> None:
    client = Watermarks()
    sampler = _sampler(tmp_path, client)
    sampler.start()
    deadline = time.monotonic() + 5
    while sampler.samples < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()  # after its first sample, within the interval: closes the ledger and the client
    rows = pq.read_table(tmp_path / "timeline").to_pylist()
    assert {r["partition"]: r["high_watermark"] for r in rows} == {0: 1000, 1: 2000}
    assert client.asked == [1] and client.closed


class Behind(Watermarks):
    """Partition 1's leader answers that its high watermark has not caught up with its epoch."""

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        from confluent_kafka import KafkaError, KafkaException

        self.asked.append(tp.partition)
        raise KafkaException(KafkaError(KafkaError.OFFSET_NOT_AVAILABLE))


def _sampler(tmp_path: Path, client: Watermarks) -> TimelineSampler:
    return TimelineSampler(Connection.plaintext("127.0.0.1:9092"), TOPIC, tmp_path / "timeline", interval_s=0.5,
                           admin_factory=lambda _: Admin(), run_id="r", watermark_factory=lambda _: client)


def test_a_leader_behind_its_epoch_holds_the_high_watermark_it_last_reported(tmp_path: Path) -> None:
    sampler = _sampler(tmp_path, Behind())
    sampler._last_hw = {1: (1, 1500)}  # what broker 1 reported for partition 1 in the sample before
    assert sampler._high_watermarks({0: 1, 1: 1}) == {0: 1000, 1: 1500}
    assert sampler._high_watermarks({0: 1, 1: 1}) == {0: 1000, 1: 1500}  # for as long as it says so
    moved = _sampler(tmp_path, Behind())
    moved._last_hw = {1: (2, 1500)}  # reported by another leader: unknown, not carried over
    assert moved._high_watermarks({0: 1, 1: 1}) == {0: 1000}


class Silent(Watermarks):
    """Partition 1's leader does not answer in time (a watermark client still connecting)."""

    def get_watermark_offsets(self, tp: Any, timeout: float) -> tuple[int, int]:
        from confluent_kafka import KafkaError, KafkaException

        self.asked.append(tp.partition)
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))


def test_a_sample_without_an_answer_does_not_forget_what_the_leader_last_reported(tmp_path: Path) -> None:
    """The ISR shrinks, and the first watermark query after it times out: that sample has no high
    watermark, but once the leader says it is behind its epoch, the one it last reported is held."""
    sampler = _sampler(tmp_path, Silent())
    sampler._last_hw = {1: (1, 1500)}
    assert sampler._high_watermarks({0: 1, 1: 1}) == {0: 1000}
    sampler._watermark_client = Behind()
    assert sampler._high_watermarks({0: 1, 1: 1}) == {0: 1000, 1: 1500}
    sampler._watermark_client = Silent()
    assert sampler._high_watermarks({0: 1, 1: 2}) == {0: 1000}  # partition 1 led by another broker now
    sampler._watermark_client = Behind()
    assert sampler._high_watermarks({0: 1, 1: 2}) == {0: 1000}, "what another leader reported is not carried over"
