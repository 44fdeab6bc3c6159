"""Producer and consumer processes of a run. Each runs in its own process (spawned, so the
GIL of one is no ceiling for the others) and writes its own ledger. Here: what they share (their
arguments, counters and the producer's meta record) and the consumer; the librdkafka producer
is `producer`, the Java one `java_load`.

Producers are open loop: message i of a producer is *intended* to be sent at
t0 + i / rate, whatever happened to earlier messages. When the client blocks (full queue,
no leader), the intended times keep marching and the delay shows up as send delay
(sent - intended) instead of silently lowering the offered load (coordinated omission).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.core.codes import CLIENT_NAME_PREFIX
from benchmarks.core.connection import Connection, silent_logger
from benchmarks.harness import transactions as txns
from benchmarks.record import ledger
from benchmarks.record.message import record_consumed, run_tag

COUNTERS = 4  # per producer: sent, acked, failed, indeterminate; per consumer: consumed, joined, -, -
JOINED = 1  # a consumer's slot: set once the group has assigned it its partitions (or none)


def die_with_parent() -> None:
    """Linux: get SIGKILL when the runner dies, even by SIGKILL, so no load process outlives it."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def publish(counters, base: int, stats: list[int]) -> None:
    """Copy a process's counts into the shared array the runner reads for progress."""
    for i, value in enumerate(stats):
        counters[base + i] = value



@dataclasses.dataclass(frozen=True)
class ProducerArgs:
    index: int
    run_id: str
    conn: Connection
    topic: str
    config: dict[str, Any]
    rate: float | None  # messages/s of this producer; None: as fast as the client takes them
    start_ns: int       # wall-clock start of the schedule (warm-up included)
    end_ns: int         # no message is intended at or after this time (unless `end` moves it later)
    message_size: int
    keys: int
    ledger_dir: str
    ledger_enabled: bool = True
    flush_timeout_s: float = 60.0
    # Nice value asked for the sending thread when on a schedule (None: leave it). Where the
    # brokers share the machine's cores, they would otherwise delay the sends behind schedule.
    send_nice: int | None = -20
    # Exactly-once: every message inside a transaction (`benchmarks.harness.transactions`); None: plain sends.
    transactions: txns.TransactionArgs | None = None


@dataclasses.dataclass(frozen=True)
class ConsumerArgs:
    name: str
    run_id: str
    group: str
    conn: Connection
    topic: str
    config: dict[str, Any]
    ledger_dir: str


def raise_send_priority(args: ProducerArgs, scheduled: bool) -> dict[str, Any]:
    """Ask for `send_nice` for this thread only (Linux nice values are per thread), after the
    client's own threads exist, so they keep theirs; return what was got, for the ledger's side."""
    got, error = None, None
    if scheduled and args.send_nice is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), args.send_nice)
        except OSError as exc:  # not root, no CAP_SYS_NICE: the schedule runs at the default priority
            error = str(exc)
        got = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    return {"send_thread_nice_asked": args.send_nice if scheduled else None, "send_thread_nice": got, "error": error}


NO_PRIORITY: dict[str, Any] = {"send_thread_nice_asked": None, "send_thread_nice": None, "error": None}


def write_producer_meta(args: ProducerArgs, priority: dict[str, Any], cpu_s: float, messages: int,
                        replaced: list[dict[str, Any]], **more: Any) -> None:
    """Next to the ledger, for the run's load-end event (`producer_meta`): what one producer process
    got for itself (`raise_send_priority`, or NO_PRIORITY), what sending cost this machine (CPU
    seconds for `messages` sent) and every fatal error that replaced its client."""
    if args.ledger_enabled:
        meta = {"producer": args.index, **more, **priority, "cpu_s": round(cpu_s, 3), "messages": messages,
                **({"fatal_errors": replaced} if replaced else {})}
        Path(args.ledger_dir, f"producer-{args.index:03d}.json").write_text(json.dumps(meta))


def producer_meta(ledger_dir: Path) -> list[dict[str, Any]]:
    """What each producer process of a produce ledger recorded (`write_producer_meta`)."""
    return [json.loads(p.read_text()) for p in sorted(Path(ledger_dir).glob("producer-*.json"))]


def consumer_main(args: ConsumerArgs, counters, slot: int, stop) -> None:
    """A member of a consumer group: record every record of this run until told to stop."""
    from confluent_kafka import Consumer

    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # graceful: leave the group, hand partitions over
    tag = run_tag(args.run_id)
    out = ledger.LedgerWriter(Path(args.ledger_dir), f"consumer-{args.group}-{args.name}", ledger.CONSUME_SCHEMA)
    consumer = Consumer(args.conn.config({"auto.offset.reset": "earliest", **args.config,
                                          "group.id": f"{CLIENT_NAME_PREFIX}{args.run_id}-{args.group}",
                                          "logger": silent_logger("kafka_bench.consumer")}))
    changes = ledger.LedgerWriter(Path(args.ledger_dir).parent / "group", f"group-{args.group}-{args.name}",
                                  ledger.GROUP_SCHEMA)

    def changed(event: str) -> Any:
        def record(_consumer: Any, partitions: Any) -> None:
            now = time.time_ns()
            for tp in partitions:
                changes.append(args.run_id, args.group, args.name, now, event, tp.partition)
            changes.flush()
            if event == "assigned":
                counters[slot * COUNTERS + JOINED] = 1  # the runner waits for every member before its warm-up
        return record

    consumer.subscribe([args.topic], on_assign=changed("assigned"), on_revoke=changed("revoked"),
                       on_lost=changed("lost"))
    consumed = 0
    try:
        while not stop.is_set():
            for msg in consumer.consume(500, 0.2):
                value = msg.value()
                if msg.error() or value is None or not value.startswith(tag):
                    continue
                record_consumed(out, args.run_id, args.group, args.name, msg)
                consumed += 1
            out.maybe_flush()
            counters[slot * COUNTERS] = consumed
    finally:
        consumer.close()  # a graceful leave: its partitions are revoked (recorded) and move
        out.close()
        changes.close()
        counters[slot * COUNTERS] = consumed
