"""Producer and consumer processes of a run. Each runs in its own process (spawned, so the
GIL of one is no ceiling for the others) and writes its own ledger.

Producers are open loop: message i of a producer is *intended* to be sent at
t0 + i / rate, whatever happened to earlier messages. When the client blocks (full queue,
no leader), the intended times keep marching and the delay shows up as send delay
(sent - intended) instead of silently lowering the offered load (coordinated omission).
"""

from __future__ import annotations

import dataclasses
import signal
import struct
import time
from pathlib import Path
from typing import Any

from benchmarks import ledger
from benchmarks.cluster import silent_logger

# Every message starts with: run tag (8 bytes), producer (u32), sequence (u64), send time (ns).
HEADER = struct.Struct(">8sIQq")
COUNTERS = 4  # per producer: sent, acked, failed, indeterminate; per consumer: consumed, -, -, -


def die_with_parent() -> None:
    """Linux: get SIGKILL when the runner dies, even by SIGKILL, so no load process outlives it."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run_tag(run_id: str) -> bytes:
    return run_id.encode()[:8].ljust(8, b"_")


def _publish(counters, base: int, stats: list[int]) -> None:
    """Copy a process's counts into the shared array the runner reads for progress."""
    for i, value in enumerate(stats):
        counters[base + i] = value


def _record(out: ledger.LedgerWriter, run_id: str, group: str, consumer: str, msg) -> None:
    """One consumed record of this run, decoded from its header, into the consume ledger."""
    _, producer, seq, sent = HEADER.unpack_from(msg.value())
    out.append(run_id, group, consumer, producer, seq, msg.partition(), msg.offset(), sent, time.time_ns())


@dataclasses.dataclass(frozen=True)
class ProducerArgs:
    index: int
    run_id: str
    bootstrap: str
    topic: str
    config: dict[str, Any]
    rate: float | None  # messages/s of this producer; None: as fast as the client takes them
    start_ns: int       # wall-clock start of the schedule (warm-up included)
    end_ns: int         # no message is intended at or after this time
    message_size: int
    keys: int
    ledger_dir: str
    ledger_enabled: bool = True
    flush_timeout_s: float = 60.0


@dataclasses.dataclass(frozen=True)
class ConsumerArgs:
    name: str
    run_id: str
    group: str
    bootstrap: str
    topic: str
    config: dict[str, Any]
    ledger_dir: str


def producer_main(args: ProducerArgs, counters, slot: int) -> None:
    """Produce on the open-loop schedule; record every message's outcome in the ledger."""
    from confluent_kafka import Producer

    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides when producers stop
    tag = run_tag(args.run_id)
    out = ledger.ProduceLedgerWriter(Path(args.ledger_dir), f"producer-{args.index:03d}", args.run_id, args.index,
                                     enabled=args.ledger_enabled)
    # Nothing is kept per message in flight: the delivery report carries the message, whose
    # header holds its sequence number and send time; the intended time and the key follow from
    # the sequence number. `reported` has one byte per message sent, set when its report comes.
    reported = bytearray()
    base = slot * COUNTERS
    stats = [0, 0, 0, 0]
    interval_ns = int(1e9 / args.rate) if args.rate else 0
    start_ns, index, keys = args.start_ns, args.index, args.keys
    unpack, pack, sink = HEADER.unpack_from, out.ROW.pack, out.row_sink()

    def on_delivery(err, msg):
        now = time.time_ns()
        _, _, seq, sent = unpack(msg.value())
        reported[seq] = 1
        intended = start_ns + seq * interval_ns if interval_ns else sent
        key = (index * 7919 + seq) % keys if keys else -1
        if err is None:
            offset = msg.offset()
            sink(pack(seq, key, intended, sent, now, msg.partition(), offset if offset is not None and offset >= 0 else -1, 0, -1))
            stats[1] += 1
        else:
            name = err.name()
            code = ledger.OUTCOMES.index(ledger.outcome_of(name))
            sink(pack(seq, key, intended, sent, now, -1, -1, code, out.error_code(name)))
            stats[1 + code] += 1

    producer = Producer({**args.config, "bootstrap.servers": args.bootstrap,
                         "logger": silent_logger("kafka_bench.producer")})
    padding = b"\0" * max(0, args.message_size - HEADER.size)
    produce, poll, topic = producer.produce, producer.poll, args.topic
    seq = 0
    while True:
        # Unthrottled, there is no schedule: a message is intended when it is sent.
        intended = start_ns + seq * interval_ns if interval_ns else 0
        if intended >= args.end_ns or (not interval_ns and time.time_ns() >= args.end_ns):
            break
        delay = intended - time.time_ns()
        if delay > 0:
            time.sleep(delay / 1e9)
        key = (index * 7919 + seq) % keys if keys else -1
        reported.append(0)
        while True:
            try:
                produce(topic, HEADER.pack(tag, index, seq, time.time_ns()) + padding,
                        key=None if key < 0 else b"k%d" % key, on_delivery=on_delivery)
                break
            except BufferError:  # the client's queue is full: let it drain, keep the intended time
                poll(0.005)
        stats[0] += 1
        poll(0)
        if seq % 64 == 0:
            out.maybe_flush()
            _publish(counters, base, stats)
        seq += 1
    deadline = time.monotonic() + args.flush_timeout_s
    while sum(stats[1:]) < stats[0] and time.monotonic() < deadline:
        producer.flush(0.5)
        out.maybe_flush()
        _publish(counters, base, stats)
    for seq_left in (s for s, done in enumerate(reported) if not done):  # no delivery report at all
        intended = start_ns + seq_left * interval_ns if interval_ns else None
        key = (index * 7919 + seq_left) % keys if keys else -1
        out.append(args.run_id, index, seq_left, key, intended, None, None, "indeterminate", None, None, "_NO_REPORT")
        stats[3] += 1
    out.close()
    _publish(counters, base, stats)


def consumer_main(args: ConsumerArgs, counters, slot: int, stop) -> None:
    """A member of a consumer group: record every record of this run until told to stop."""
    from confluent_kafka import Consumer

    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # graceful: leave the group, hand partitions over
    tag = run_tag(args.run_id)
    out = ledger.LedgerWriter(Path(args.ledger_dir), f"consumer-{args.group}-{args.name}", ledger.CONSUME_SCHEMA)
    consumer = Consumer({"auto.offset.reset": "earliest", **args.config, "bootstrap.servers": args.bootstrap,
                         "group.id": f"{args.run_id}-{args.group}",
                         "logger": silent_logger("kafka_bench.consumer")})
    consumer.subscribe([args.topic])
    consumed = 0
    try:
        while not stop.is_set():
            for msg in consumer.consume(500, 0.2):
                if msg.error() or msg.value() is None or not msg.value().startswith(tag):
                    continue
                _record(out, args.run_id, args.group, args.name, msg)
                consumed += 1
            out.maybe_flush()
            counters[slot * COUNTERS] = consumed
    finally:
        consumer.close()
        out.close()
        counters[slot * COUNTERS] = consumed


def final_read(bootstrap: str, topic: str, run_id: str, ledger_dir: Path, config: dict[str, Any] | None = None,
               timeout_s: float = 120.0) -> dict[int, int]:
    """Read every partition from the beginning to the end offsets as they are now (after healing),
    so an acknowledged message that never shows up is lost, not late. Returns partition -> end offset."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    tag = run_tag(run_id)
    consumer = Consumer({**(config or {}), "bootstrap.servers": bootstrap, "group.id": f"{run_id}-final-read",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "logger": silent_logger("kafka_bench.final")})
    out = ledger.LedgerWriter(ledger_dir, "consumer-final-read", ledger.CONSUME_SCHEMA)
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
        todo = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                if msg.error():
                    continue
                if msg.value() and msg.value().startswith(tag):
                    _record(out, run_id, "final-read", "final-read", msg)
                if msg.offset() >= ends[msg.partition()] - 1:
                    todo.discard(msg.partition())
            out.maybe_flush()
        if todo:
            raise RuntimeError(f"final read of {topic} did not reach the end offsets of partitions {sorted(todo)} "
                               f"within {timeout_s:.0f} s")
        return ends
    finally:
        out.close()
        consumer.close()
