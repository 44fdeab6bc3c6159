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
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.core.codes import CLIENT_NAME_PREFIX
from benchmarks.core.connection import Connection, silent_logger
from benchmarks.core.wait import WaitTimeout, wait_until
from benchmarks.harness import retry
from benchmarks.hosts.inventory import ClusterInventory
from benchmarks.kafka import cluster, topics
from benchmarks.record.message import WARMUP_TAG, key_bytes


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


def ensure_internal_topics(conn: Connection) -> None:
    """Have the cluster create `__consumer_offsets` now (a group coordinator lookup creates
    it), not in the middle of the first run that uses a consumer group."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(conn.config({"group.id": f"{CLIENT_NAME_PREFIX}steady-state", "logger": silent_logger()}))
    try:
        consumer.committed([TopicPartition("__kafka_bench_probe", 0)], timeout=30)
    except KafkaException:
        pass  # the lookup itself is what creates the topic; wait_recovered checks the outcome
    finally:
        consumer.close()


def wait_recovered(inventory: ClusterInventory, timeout_s: float = 180.0,
                   describe: Callable[[], cluster.ClusterStatus] | None = None,
                   elect: Callable[[str, list[int]], Any] | None = None,
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                   conn: Connection | None = None) -> float:
    """Wait until the cluster has recovered; elect the preferred leaders once nothing is
    under-replicated. Returns the seconds waited; NotSteady names what was still wrong."""
    describe = describe or (lambda: cluster.describe(inventory, include_internal=True, conn=conn))
    elect = elect or (lambda topic, parts: topics.elect_preferred_leaders(conn or inventory.connection(), topic, parts))
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
                try:
                    elect(topic, parts)
                except Exception as exc:  # a controller still busy after a fault: ask again next round
                    code = retry.retriable(exc)
                    if code is None:
                        raise
                    last.append(f"electing the preferred leaders of {topic}: {code}")
        return not last

    try:
        wait_until(recovered, timeout_s, interval_s=1.0, clock=clock, sleep=sleep)
    except WaitTimeout:
        raise NotSteady(f"the cluster did not recover within {timeout_s:.0f} s: " + "; ".join(last)) from None
    return clock() - started


@dataclasses.dataclass(frozen=True)
class Window:
    """One second of the warm-up: messages sent in it, acks received in it, and their p99 (ms;
    inf when no ack came)."""

    sent: int
    acked: int
    p99_ms: float


@dataclasses.dataclass(frozen=True)
class Warmup:
    """What the produce-path warm-up saw, window by window, whether it settled, and the p50 ack
    latency of its last SETTLE_WINDOWS windows: the warmed path's level, which the analysis holds
    the steady phase to (benchmarks/analysis/steadiness.py)."""

    seconds: float
    sent: int
    acked: int
    windows: list[Window]
    settled: bool
    p50_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "sent": self.sent, "acked": self.acked, "settled": self.settled,
                "p50_ms": self.p50_ms,
                "window_sent": [w.sent for w in self.windows], "window_acked": [w.acked for w in self.windows],
                "window_p99_ms": [w.p99_ms for w in self.windows]}


# The settle rule. Measured after a broker restart on the local cluster (2 cores, acks=all,
# RF 3, 2,000 msg/s): for ~18 s one partition's acks fall behind (1,650-1,920 acks a second
# for 2,000 sent) while its p99 climbs 3.6 -> 5.3 s in steps under 25% a second, then the
# backlog drains (2,300-2,900 a second), and for a minute more the restarted broker (its JIT
# still cold) throws p99s of 60-140 ms between windows of 10-30 ms; a run started then saw
# p99 ~1 s for 8 of its seconds. A rule on two p99s alone took the climbing backlog, and then
# the cold broker, for a settled path; acks keeping pace with sends for five seconds, at a
# p99 that stays within a factor of two of its median and does not climb second after second
# (or under 50 ms), does not. Within twice the median, not twice the smallest: on a day this
# machine ran 1.7 times slower, a warm path at 2,000 msg/s gave p99s of 78, 149, 174, 196 and
# 127 ms with acks keeping pace, for 120 s, where a cold broker's stand out from its median
# (64.7 ms among 24.1, 19.9, 11.5, 14.5).
SETTLE_WINDOWS = 5     # consecutive windows judged
PACE_TOLERANCE = 0.05  # each: |acked - sent| within 5% of sent (or 3 messages, at low rates):
PACE_SLACK = 3         # no backlog building or draining
P99_SPREAD = 2.0       # their p99s: the largest at most twice their median, not rising at every window ...
P99_FLOOR_MS = 50.0    # ... or all under 50 ms, where jitter of a few ms is no trend


def settled(windows: list[Window]) -> bool:
    """The produce path is settled when, over the last SETTLE_WINDOWS windows, acks kept pace
    with sends and the p99 stayed level (or low)."""
    last = windows[-SETTLE_WINDOWS:]
    if len(last) < SETTLE_WINDOWS or any(w.sent == 0 or not math.isfinite(w.p99_ms) for w in last):
        return False
    if any(abs(w.acked - w.sent) > max(PACE_TOLERANCE * w.sent, PACE_SLACK) for w in last):
        return False
    p99s = [w.p99_ms for w in last]
    if max(p99s) <= P99_FLOOR_MS:
        return True
    climbing = all(later > earlier for earlier, later in zip(p99s, p99s[1:]))
    return max(p99s) <= P99_SPREAD * statistics.median(p99s) and not climbing


# How long the warm-up may take before the run is invalid. Measured over 81 warm-ups of the seed
# labs here (make bench, 2026-11-28): median 16 s, p90 53 s, slowest settled 99 s (after a
# ZooKeeper restart); a lab right after another one restarted a broker (cloudurable-failover
# after atu-lab: its JIT-cold broker acks ~150 of 500 msg/s at first) took up to 75 s, and twice,
# with other work on the machine, was still catching up its backlog at 120 s, settling seconds later.
WARMUP_MAX_S = 180.0


def warm_produce_path(conn: Connection, topic: str, producer_config: dict[str, Any], rate: float | None,
                      keys: int = 0, min_s: float = 3.0, max_s: float = WARMUP_MAX_S, window_s: float = 1.0) -> Warmup:
    """Produce untagged messages to `topic` with the run's producer settings and keys at the
    run's rate (2,000/s for an unthrottled run) until the path has `settled` or `max_s` has passed."""
    from confluent_kafka import Producer

    rate = rate or 2000.0
    producer = Producer(conn.config({**producer_config, "logger": silent_logger()}))
    latencies: list[float] = []
    recent: list[list[float]] = []  # the last SETTLE_WINDOWS windows' latencies
    acked = sent = window_sent = 0
    windows: list[Window] = []

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
                producer.produce(topic, WARMUP_TAG + b"x" * 92, key=key_bytes(sent % keys) if keys else None,
                                 on_delivery=functools.partial(report, sent_at=time.monotonic()))
                sent += 1
            except BufferError:
                break
        producer.poll(0.005)
        if now >= window_end:
            lat = sorted(latencies)
            p99 = round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 3) if lat else math.inf
            windows.append(Window(sent - window_sent, len(lat), p99))
            recent = [*recent[1 - SETTLE_WINDOWS:], lat]
            latencies = []
            window_sent = sent
            window_end += window_s
            if (now - start >= min_s and settled(windows)) or now - start >= max_s:
                break
    producer.flush(30)
    last = sorted(x for lat in recent for x in lat)
    return Warmup(round(time.monotonic() - start, 3), sent, acked, windows, settled(windows),
                  round(last[len(last) // 2], 3) if last else None)
