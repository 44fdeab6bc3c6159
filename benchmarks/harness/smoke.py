"""Produce to a replicated topic and read everything back: the go-live check of a cluster.

Every message carries this check's run id and its sequence number, so messages from earlier
checks in the same topic are ignored and every message is accounted for: acked, failed,
or read back.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable

import pyarrow as pa

from benchmarks.check import checker
from benchmarks.core.codes import CLIENT_NAME_PREFIX, FINAL_READ
from benchmarks.core.connection import Connection, silent_logger
from benchmarks.kafka import topics
from benchmarks.record import ledger


@dataclasses.dataclass
class SmokeResult:
    topic: str
    sent: int
    acked: int
    failed: int
    consumed: int
    missing: list[int]  # acknowledged and not read back (the checker's lost and unseen), by sequence number
    produce_s: float
    consume_s: float
    errors: list[str]
    duplicates: int = 0

    @property
    def ok(self) -> bool:
        return self.acked == self.sent and not self.missing and self.failed == 0


def run_smoke(conn: Connection, topic: str = "purchases", partitions: int = 3, replication_factor: int = 3,
              messages: int = 1000, timeout: float = 60.0,
              clock: Callable[[], float] = time.monotonic) -> SmokeResult:
    """Its sends and its reads become ledger rows, judged by the same checker as a run's."""
    from confluent_kafka import Consumer, Producer

    topics.ensure_topic(conn, topic, partitions, replication_factor)
    run_id = uuid.uuid4().hex[:12]
    sent: list[dict] = []
    read: list[dict] = []
    errors: list[str] = []

    def on_delivery(err, msg):
        seq = int(msg.value().split(b":")[1])
        row = {"run_id": run_id, "producer": 0, "seq": seq, "outcome": "acked", "partition": msg.partition(),
               "offset": msg.offset()}
        if err is not None:
            row.update(outcome=ledger.outcome_of(err.name()), partition=None, offset=None, error=err.name())
            errors.append(f"message {seq}: {err}")
        sent.append(row)

    producer = Producer(conn.config({"acks": "all", "enable.idempotence": True, "linger.ms": 5,
                                     "logger": silent_logger()}))
    start = clock()
    for seq in range(messages):
        producer.produce(topic, key=f"key-{seq % 16}".encode(), value=f"{run_id}:{seq}".encode(),
                         on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(timeout)
    produce_s = clock() - start
    if remaining:
        errors.append(f"{remaining} messages still in flight after {timeout}s")
    acked = {r["seq"] for r in sent if r["outcome"] == "acked"}

    consumer = Consumer(conn.config({"group.id": f"{CLIENT_NAME_PREFIX}smoke-{run_id}", "auto.offset.reset": "earliest",
                                     "enable.auto.commit": False, "logger": silent_logger()}))
    consumer.subscribe([topic])
    seen: set[int] = set()
    start = clock()
    try:
        while not acked <= seen and clock() - start < timeout:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            value = msg.value() or b""
            if value.startswith(run_id.encode() + b":"):
                seq = int(value.split(b":")[1])
                seen.add(seq)
                read.append({"run_id": run_id, "group": FINAL_READ, "producer": 0, "seq": seq,
                             "partition": msg.partition(), "offset": msg.offset()})
    finally:
        consumer.close()
    verdict = checker.check(pa.Table.from_pylist(sent, ledger.PRODUCE_SCHEMA),
                            pa.Table.from_pylist(read, ledger.CONSUME_SCHEMA), show=messages)
    return SmokeResult(topic, messages, verdict.acked, verdict.failed + verdict.indeterminate, verdict.final_read,
                       [int(i.split(":")[1]) for i in verdict.missing_ids], produce_s, clock() - start, errors[:20],
                       verdict.duplicates)
