"""The final read: after the faults are healed, every partition of the run's topic read from the
beginning to its end offsets as they are then, so an acknowledged message that never shows up is
lost, not late. Its records go to the consume ledger like any consumer's, under its own group."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from benchmarks.core.codes import CLIENT_NAME_PREFIX, FINAL_READ, FINAL_READ_COMMITTED
from benchmarks.core.connection import Connection, silent_logger
from benchmarks.harness import retry
from benchmarks.record import ledger
from benchmarks.record.message import record_consumed, run_tag


def _partitions(consumer: Any, topic: str) -> list[int]:
    """The topic's partitions, as the cluster's metadata has them (its error raised: a leader moving)."""
    from confluent_kafka import KafkaException

    md = consumer.list_topics(topic, timeout=30).topics[topic]
    if md.error is not None:
        raise KafkaException(md.error)
    return list(md.partitions)


def read(conn: Connection, topic: str, run_id: str, ledger_dir: Path, config: dict[str, Any] | None = None,
               timeout_s: float = 120.0, group: str = FINAL_READ, retrier: retry.Retrier = retry.DEFAULT,
               ) -> dict[int, int]:
    """Read every partition from the beginning to the end offsets as they are now (after healing),
    so an acknowledged message that never shows up is lost, not late. Returns partition -> end offset.

    `group` FINAL_READ reads uncommitted (every acknowledged write, in a transaction or not);
    FINAL_READ_COMMITTED reads committed, as a read_committed consumer would. A partition is done
    when the read's position reaches its end offset: transaction markers take offsets no record is
    delivered for, and a read_committed read skips aborted records too: the client's end-of-partition
    event says where it stands. The topic's partitions and end offsets are asked under `retrier`'s
    policy, for at most `timeout_s`: just after a heal a new leader answers OFFSET_NOT_AVAILABLE until
    its high watermark has caught up, and a stale client is told NOT_LEADER_OR_FOLLOWER. A client
    whose metadata went stale while a partition's replicas were down keeps answering
    _UNKNOWN_PARTITION for it (seen for two minutes after two of three brokers came back): after a
    miss the end offsets are asked by a new client, whose metadata is the cluster's as it is now."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

    tag = run_tag(run_id)
    isolation = "read_committed" if group == FINAL_READ_COMMITTED else "read_uncommitted"
    settings = conn.config({**(config or {}), "group.id": f"{CLIENT_NAME_PREFIX}{run_id}-{group}",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "isolation.level": isolation, "enable.partition.eof": True,
                            "logger": silent_logger("kafka_bench.final")})
    consumer = Consumer(settings)
    askers = [consumer]  # who asks the end offsets: the last one (a new client after each miss)
    out = ledger.LedgerWriter(ledger_dir, f"consumer-{group}", ledger.CONSUME_SCHEMA)
    try:
        step = f"final read ({isolation})"
        partitions = sorted(retrier.call(step, f"list the partitions of {topic}", lambda: _partitions(consumer, topic),
                                         timeout_s))

        def end_offset(partition: int) -> int:
            try:
                return int(askers[-1].get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1])
            except KafkaException:
                askers.append(Consumer(settings))
                _partitions(askers[-1], topic)  # its metadata of the topic, asked now
                raise

        ends: dict[int, int] = {p: retrier.call(step, f"end offset of {topic}-{p}", functools.partial(end_offset, p),
                                                timeout_s) for p in partitions}
        todo = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                error, offset, value, partition = msg.error(), msg.offset(), msg.value(), msg.partition()
                if error is None and value and value.startswith(tag):
                    record_consumed(out, run_id, group, group, msg)
                # Done at its last record, or at the end of the partition as the client reports it
                # (past transaction markers and skipped aborted records).
                if offset is not None and partition is not None and (
                        offset >= ends[partition] - 1 if error is None else
                        error.code() == KafkaError._PARTITION_EOF and offset >= ends[partition]):
                    todo.discard(partition)
            out.maybe_flush()
        if todo:
            raise RuntimeError(f"final read ({isolation}) of {topic} did not reach the end offsets of partitions "
                               f"{sorted(todo)} within {timeout_s:.0f} s")
        return ends
    finally:
        out.close()
        for client in askers:
            client.close()
