"""The cluster timeline of a run: leader, replicas and ISR of every partition of the run's
topic and the controller, sampled every 500 ms, and every event (phases, fault intents,
injections and heals) on the same wall clock as the ledger.

Each sample also holds the partition's high watermark (what consumers may read). In KRaft the
same samples also hold the active controller's epoch, the fenced brokers and each
partition's Eligible Leader Replicas (ELR) and last known ELR, and a second table, `quorum`,
holds each controller's lag behind the quorum's high watermark (DescribeQuorum)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.core.codes import CLIENT_NAME_PREFIX
from benchmarks.core.connection import Connection, silent_logger
from benchmarks.record import ledger
from benchmarks.record.timeline_schema import QUORUM_SCHEMA, TIMELINE_SCHEMA

if TYPE_CHECKING:
    from benchmarks.kafka.cluster import KRaftProbe, KRaftState


def _ids(ids: Any) -> str | None:
    return None if ids is None else ",".join(map(str, ids))


def _watermark_consumer(conn: Connection) -> Any:
    """A consumer that only asks watermarks: it never joins its group nor commits. Silent: a broker
    down is what the run is about, and what it answered is sampled, not logged."""
    from confluent_kafka import Consumer

    return Consumer(conn.config({"group.id": f"{CLIENT_NAME_PREFIX}timeline", "enable.auto.commit": False,
                                 "logger": silent_logger("kafka_bench.timeline")}))


class TimelineSampler(threading.Thread):
    """Samples metadata of one topic every `interval_s` until stopped."""

    def __init__(self, conn: Connection, topic: str, directory: Path, interval_s: float = 0.5,
                 admin_factory: Callable[[Connection], Any] | None = None, run_id: str = "",
                 kraft: KRaftProbe | None = None, quorum_directory: Path | None = None,
                 watermark_factory: Callable[[Connection], Any] | None = None, last_stable: bool = False) -> None:
        super().__init__(name="timeline", daemon=True)
        from benchmarks.kafka.cluster import admin_client

        self.admin = (admin_factory or admin_client)(conn)
        self.conn = conn
        self._watermark_factory = watermark_factory or _watermark_consumer
        self._watermark_client: Any = None
        self._last_hw: dict[int, tuple[int, int]] = {}  # partition -> (leader, high watermark it reported)
        self._not_caught_up: set[int] = set()
        self.topic = topic
        self.run_id = run_id
        self.interval_s = interval_s
        self.kraft = kraft
        self.last_stable = last_stable
        self.out = ledger.LedgerWriter(directory, "timeline", TIMELINE_SCHEMA)
        self.quorum_out = (ledger.LedgerWriter(quorum_directory or directory.parent / "quorum", "quorum", QUORUM_SCHEMA)
                           if kraft else None)
        self._halt = threading.Event()
        self.samples = 0
        self.last: dict[int, tuple[int | None, tuple[int, ...]]] = {}  # partition -> (leader, isr)

    def run(self) -> None:
        next_at = time.monotonic()
        while not self._halt.is_set():
            self.sample()
            next_at += self.interval_s
            self._halt.wait(max(0.0, next_at - time.monotonic()))
        self.out.close()
        if self.quorum_out:
            self.quorum_out.close()
        if self._watermark_client is not None:
            self._watermark_client.close()

    def sample(self) -> None:
        now = time.time_ns()
        kraft = self._sample_quorum(now) if self.kraft else None
        # In KRaft the metadata's controller id is any broker; the active controller is the quorum's leader.
        epoch = kraft.raw_quorum.leader_epoch if kraft and kraft.raw_quorum else None
        fenced = ",".join(map(str, sorted(kraft.fenced))) if kraft else None
        try:
            md = self.admin.list_topics(self.topic, timeout=max(0.4, self.interval_s))
        except Exception as exc:  # no broker answered: that is data too
            self.out.append(self.run_id, now, kraft.leader if kraft else None, "", None, None, None, None,
                            str(exc)[:200], epoch, fenced, None, None, None, None)
            return
        alive = ",".join(str(b) for b in sorted(md.brokers))
        controller = kraft.leader if kraft else (md.controller_id if md.controller_id >= 0 else None)
        topic = md.topics.get(self.topic)
        if topic is None or not topic.partitions:
            self.out.append(self.run_id, now, controller, alive, None, None, None, None, "topic not in metadata",
                            epoch, fenced, None, None, None, None)
        else:
            led = {p.id: p.leader for p in topic.partitions.values() if p.leader >= 0}
            hw = self._high_watermarks(led)
            lso = self._last_stable_offsets(led) if self.last_stable else {}
            for p in sorted(topic.partitions.values(), key=lambda p: p.id):
                leader = p.leader if p.leader >= 0 else None
                elr = kraft.partitions.get((self.topic, p.id)) if kraft else None
                self.out.append(self.run_id, now, controller, alive, p.id, leader, ",".join(map(str, p.replicas)),
                                ",".join(map(str, p.isrs)), None, epoch, fenced,
                                _ids(elr.elr) if elr else None, _ids(elr.last_known_elr) if elr else None,
                                hw.get(p.id), lso.get(p.id))
                self.last[p.id] = (leader, tuple(p.isrs))
        self.samples += 1
        self.out.maybe_flush()

    def _high_watermarks(self, leaders: dict[int, int]) -> dict[int, int]:
        """Each led partition's high watermark (partition -> leader), as far as its leader answers
        within the interval. A leader that answers its high watermark has not caught up with the
        start of its epoch (OFFSET_NOT_AVAILABLE: under ZooKeeper the epoch moves on when the ISR
        shrinks, and the high watermark stands still while the ISR is below min ISR) still holds
        the one it last reported: that one is recorded again, for as long as the same leader says so,
        across samples in which it did not answer at all (those stay null)."""
        found, missed = self._latest_offsets(leaders)
        found |= self._watermarks(missed)
        held = {p: hw for p, (leader, hw) in self._last_hw.items()
                if p in self._not_caught_up and p not in found and leaders.get(p) == leader}
        found |= held
        # A sample the leader did not answer at all (a watermark client still connecting, a busy
        # broker) is no new report: what the same leader reported last is kept for the next sample.
        unanswered = {p: last for p, last in self._last_hw.items() if p not in found and leaders.get(p) == last[0]}
        self._last_hw = unanswered | {p: (leaders[p], hw) for p, hw in found.items()}
        return found

    def _last_stable_offsets(self, leaders: dict[int, int]) -> dict[int, int]:
        """Each led partition's last stable offset, as far as its leader answers within the interval."""
        from confluent_kafka import IsolationLevel

        return self._latest_offsets(leaders, IsolationLevel.READ_COMMITTED)[0]

    def _latest_offsets(self, leaders: dict[int, int], isolation: Any = None) -> tuple[dict[int, int], list[Any]]:
        """ListOffsets latest of the led partitions at `isolation` (None, read uncommitted: the high
        watermark; READ_COMMITTED: the last stable offset): (partition -> offset, those not answered)."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        if not leaders:
            return {}, []
        try:
            futures = self.admin.list_offsets({TopicPartition(self.topic, p): OffsetSpec.latest() for p in leaders},
                                              request_timeout=max(0.3, self.interval_s * 0.8),
                                              **({"isolation_level": isolation} if isolation is not None else {}))
        except Exception:  # an admin client without ListOffsets, or a closed one: none
            return {}, []
        found, missed = {}, []
        for tp, future in futures.items():
            try:
                found[tp.partition] = future.result(timeout=self.interval_s).offset
            except Exception:  # the leader moved, did not answer in time, or was asked with a stale epoch
                missed.append(tp)
        return found, missed

    def _watermarks(self, partitions: list[Any]) -> dict[int, int]:
        """High watermarks asked without a leader epoch, for the partitions the admin client's
        ListOffsets missed: after an ISR change under ZooKeeper librdkafka's admin request, sent
        with the epoch it cached, is refused (FENCED_LEADER_EPOCH) until its metadata catches up;
        a consumer's watermark query carries no epoch. Within half the interval; a partition whose
        leader does not answer stays null for this sample. Notes the partitions whose leader said
        its high watermark has not caught up with its epoch."""
        from confluent_kafka import KafkaError

        self._not_caught_up = set()
        if not partitions:
            return {}
        if self._watermark_client is None:
            self._watermark_client = self._watermark_factory(self.conn)
        found, deadline = {}, time.monotonic() + self.interval_s / 2
        for tp in partitions:
            left = deadline - time.monotonic()
            if left <= 0.05:
                break
            try:
                found[tp.partition] = self._watermark_client.get_watermark_offsets(tp, timeout=left)[1]
            except Exception as exc:  # no answer in time: null for this sample, unless the leader is behind its epoch
                error = exc.args[0] if exc.args else None
                if getattr(error, "code", lambda: None)() == KafkaError.OFFSET_NOT_AVAILABLE:
                    self._not_caught_up.add(tp.partition)
        return found

    def _sample_quorum(self, now: int) -> KRaftState:
        assert self.kraft is not None and self.quorum_out is not None
        state = self.kraft.read([self.topic])
        q = state.raw_quorum
        if q is None:
            self.quorum_out.append(self.run_id, now, None, None, None, None, None, None, (state.error or "")[:200])
        else:
            voters = {r.node_id for r in q.voters}
            for r in sorted(q.voters + q.observers, key=lambda r: r.node_id):
                self.quorum_out.append(self.run_id, now, q.leader_id, q.leader_epoch, q.high_watermark, r.node_id,
                                       r.node_id in voters, q.lag(r), None)
        self.quorum_out.maybe_flush()
        return state

    def stop(self) -> None:
        self._halt.set()
        self.join(10)
        if self.kraft:
            self.kraft.close()
