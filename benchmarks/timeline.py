"""The cluster timeline of a run: leader, replicas and ISR of every partition of the run's
topic and the controller, sampled every 500 ms, and every event (phases, fault intents,
injections and heals) on the same wall clock as the ledger."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from benchmarks import ledger, records

TIMELINE_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("t_ns", pa.int64()),
    ("controller", pa.int32()),       # null when no broker answered
    ("brokers_alive", pa.string()),   # comma-separated broker ids registered
    ("partition", pa.int32()),
    ("leader", pa.int32()),           # null: no leader
    ("replicas", pa.string()),
    ("isr", pa.string()),
    ("error", pa.string()),           # why the sample is empty, if it is
])


class TimelineSampler(threading.Thread):
    """Samples metadata of one topic every `interval_s` until stopped."""

    def __init__(self, bootstrap: str, topic: str, directory: Path, interval_s: float = 0.5,
                 admin_factory: Callable[[str], Any] | None = None, run_id: str = "") -> None:
        super().__init__(name="timeline", daemon=True)
        from benchmarks.cluster import admin_client

        self.admin = (admin_factory or admin_client)(bootstrap)
        self.topic = topic
        self.run_id = run_id
        self.interval_s = interval_s
        self.out = ledger.LedgerWriter(directory, "timeline", TIMELINE_SCHEMA)
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

    def sample(self) -> None:
        now = time.time_ns()
        try:
            md = self.admin.list_topics(self.topic, timeout=max(0.4, self.interval_s))
        except Exception as exc:  # no broker answered: that is data too
            self.out.append(self.run_id, now, None, "", None, None, None, None, str(exc)[:200])
            return
        alive = ",".join(str(b) for b in sorted(md.brokers))
        controller = md.controller_id if md.controller_id >= 0 else None
        topic = md.topics.get(self.topic)
        if topic is None or not topic.partitions:
            self.out.append(self.run_id, now, controller, alive, None, None, None, None, "topic not in metadata")
        else:
            for p in sorted(topic.partitions.values(), key=lambda p: p.id):
                leader = p.leader if p.leader >= 0 else None
                self.out.append(self.run_id, now, controller, alive, p.id, leader, ",".join(map(str, p.replicas)),
                                ",".join(map(str, p.isrs)), None)
                self.last[p.id] = (leader, tuple(p.isrs))
        self.samples += 1
        self.out.maybe_flush()

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


class EventLog:
    """events.jsonl of a run: one typed event (`benchmarks.records`) per line, flushed at once,
    each stamped with the time it was written and its run."""

    def __init__(self, path: Path, run_id: str = "", clock: Callable[[], int] = time.time_ns) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.clock = clock
        self._lock = threading.Lock()

    def write(self, event: records.Event) -> records.Event:
        stamped = event.model_copy(update={"t_ns": self.clock(), "run_id": self.run_id})
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(stamped.model_dump_json() + "\n")
        return stamped

    def read(self) -> list[records.AnyEvent]:
        if not self.path.exists():
            return []
        return [records.EVENT.validate_json(line) for line in self.path.read_text().splitlines() if line.strip()]
