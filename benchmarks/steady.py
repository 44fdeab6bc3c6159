"""Steady state before a run measures anything.

A run starts only when the cluster has recovered from whatever came before it (every broker
registered, its process up and its port open, no partition offline or under-replicated in any
topic, internal ones included, the preferred replicas leading), and its measured phase starts
only when the produce path to the run's own topic is warm: acknowledgements come back at a
stable latency. Without this, the first seconds of a run (a healed broker still catching up,
`__consumer_offsets` being created, a fresh topic's first batches) read as the cost of the
settings under test.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from typing import Any

from benchmarks import cluster, topics
from benchmarks.inventory import ClusterInventory
from benchmarks.wait import WaitTimeout, wait_until

# Messages of the produce-path warm-up start with this (8 bytes, like a run's tag): the
# consumers, the final read and the checker take only messages tagged with their run.
WARMUP_TAG = b"kb-warm_"


class NotSteady(RuntimeError):
    """The cluster did not recover, or the produce path did not settle, in time; names what."""


def off_preferred(status: cluster.ClusterStatus) -> list[cluster.PartitionState]:
    """Partitions led by another replica than their preferred one (the first of their replicas)."""
    return [p for p in status.partitions if p.leader is not None and p.replicas and p.leader != p.replicas[0]]


def recovery_problems(status: cluster.ClusterStatus) -> list[str]:
    """What keeps the cluster from being recovered: its health problems, then partitions not led
    by their preferred replica."""
    return status.problems() + [f"{p.topic}-{p.partition} is led by {p.leader}, not its preferred replica "
                                f"{p.replicas[0]}" for p in off_preferred(status)]


def ensure_internal_topics(bootstrap: str) -> None:
    """Have the cluster create `__consumer_offsets` now (a group coordinator lookup creates
    it), not in the middle of the first run that uses a consumer group."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kafka-bench-steady-state",
                         "logger": cluster.silent_logger()})
    try:
        consumer.committed([TopicPartition("__kafka_bench_probe", 0)], timeout=30)
    except KafkaException:
        pass  # the lookup itself is what creates the topic; wait_recovered checks the outcome
    finally:
        consumer.close()


def wait_recovered(inventory: ClusterInventory, timeout_s: float = 180.0,
                   describe: Callable[[], cluster.ClusterStatus] | None = None,
                   elect: Callable[[str, list[int]], Any] | None = None,
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> float:
    """Wait until the cluster has recovered; elect the preferred leaders once nothing is
    under-replicated. Returns the seconds waited; NotSteady names what was still wrong."""
    describe = describe or (lambda: cluster.describe(inventory, include_internal=True))
    elect = elect or (lambda topic, parts: topics.elect_preferred_leaders(inventory.bootstrap_servers, topic, parts))
    started = clock()
    last: list[str] = []

    def recovered() -> bool:
        nonlocal last
        try:
            status = describe()
        except cluster.ClusterUnreachable as exc:
            last = [str(exc)]
            return False
        last = recovery_problems(status)
        if status.healthy and last:  # healthy but not on the preferred leaders: move them back
            moved: dict[str, list[int]] = {}
            for p in off_preferred(status):
                moved.setdefault(p.topic, []).append(p.partition)
            for topic, parts in moved.items():
                elect(topic, parts)
        return not last

    try:
        wait_until(recovered, timeout_s, interval_s=1.0, clock=clock, sleep=sleep)
    except WaitTimeout:
        raise NotSteady(f"the cluster did not recover within {timeout_s:.0f} s: " + "; ".join(last)) from None
    return clock() - started


@dataclasses.dataclass(frozen=True)
class Warmup:
    """What the produce-path warm-up saw: p99 ack latency (ms) per window, and whether it settled."""

    seconds: float
    sent: int
    acked: int
    window_p99_ms: list[float]
    settled: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def settled(window_p99_ms: list[float], tolerance: float = 0.25, floor_ms: float = 10.0) -> bool:
    """Two consecutive windows whose p99s differ by at most `tolerance` of the larger (or both
    under `floor_ms`, where a millisecond of jitter is not a trend)."""
    if len(window_p99_ms) < 2:
        return False
    a, b = window_p99_ms[-2:]
    if not (math.isfinite(a) and math.isfinite(b)):  # a window without a single ack
        return False
    return max(a, b) <= floor_ms or abs(a - b) <= tolerance * max(a, b)


def warm_produce_path(bootstrap: str, topic: str, producer_config: dict[str, Any], rate: float | None,
                      min_s: float = 3.0, max_s: float = 30.0, window_s: float = 1.0) -> Warmup:
    """Produce untagged messages to `topic` with the run's producer settings at the run's rate
    (at most 2,000/s) until the ack latency is stable (`settled`) or `max_s` has passed."""
    from confluent_kafka import Producer

    rate = min(rate or 2000.0, 2000.0)
    producer = Producer({**producer_config, "bootstrap.servers": bootstrap, "logger": cluster.silent_logger()})
    latencies: list[float] = []
    acked = sent = 0
    windows: list[float] = []

    def report(err: Any, _msg: Any, sent_at: float) -> None:
        nonlocal acked
        if err is None:
            acked += 1
            latencies.append((time.monotonic() - sent_at) * 1000)

    start = time.monotonic()
    window_end = start + window_s
    while True:
        now = time.monotonic()
        due = int((now - start) * rate) - sent
        for _ in range(max(0, due)):
            try:
                producer.produce(topic, WARMUP_TAG + b"x" * 92,
                                 on_delivery=functools.partial(report, sent_at=time.monotonic()))
                sent += 1
            except BufferError:
                break
        producer.poll(0.005)
        if now >= window_end:
            lat = sorted(latencies)
            windows.append(round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 3) if lat else float("inf"))
            latencies.clear()
            window_end += window_s
            if (now - start >= min_s and settled(windows)) or now - start >= max_s:
                break
    producer.flush(30)
    return Warmup(round(time.monotonic() - start, 3), sent, acked, windows, settled(windows))
