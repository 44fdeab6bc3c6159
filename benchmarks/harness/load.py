"""Producer and consumer processes of a run. Each runs in its own process (spawned, so the
GIL of one is no ceiling for the others) and writes its own ledger.

Producers are open loop: message i of a producer is *intended* to be sent at
t0 + i / rate, whatever happened to earlier messages. When the client blocks (full queue,
no leader), the intended times keep marching and the delay shows up as send delay
(sent - intended) instead of silently lowering the offered load (coordinated omission).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.core.codes import CLIENT_NAME_PREFIX, OUTCOMES
from benchmarks.core.connection import Connection, silent_logger
from benchmarks.harness import transactions as txns
from benchmarks.kafka import broker_errors
from benchmarks.record import ledger
from benchmarks.record.message import HEADER, bind_keys, record_consumed, run_tag

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


def _raise_send_priority(args: ProducerArgs, scheduled: bool) -> dict[str, Any]:
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
    got for itself (`_raise_send_priority`, or NO_PRIORITY), what sending cost this machine (CPU
    seconds for `messages` sent) and every fatal error that replaced its client."""
    if args.ledger_enabled:
        meta = {"producer": args.index, **more, **priority, "cpu_s": round(cpu_s, 3), "messages": messages,
                **({"fatal_errors": replaced} if replaced else {})}
        Path(args.ledger_dir, f"producer-{args.index:03d}.json").write_text(json.dumps(meta))


def producer_meta(ledger_dir: Path) -> list[dict[str, Any]]:
    """What each producer process of a produce ledger recorded (`write_producer_meta`)."""
    return [json.loads(p.read_text()) for p in sorted(Path(ledger_dir).glob("producer-*.json"))]


def producer_main(args: ProducerArgs, counters, slot: int, end=None) -> None:
    """Produce on the open-loop schedule; record every message's outcome in the ledger.

    `end` (a shared integer, ns) lets the runner extend the load while it runs, so a fault that
    acted late is still watched under load; the load never ends before `args.end_ns`.

    On a schedule, messages are sent by `send_due`, which sends every message whose intended
    time has come. The loop calls it after sleeping until the next intended time, and the
    delivery callback calls it too: one poll can serve the reports of several whole batches
    (milliseconds of Python), and without that the schedule would wait for them."""
    from confluent_kafka import KafkaException, Producer

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
    def end_ns() -> int:
        return max(args.end_ns, end.value) if end is not None else args.end_ns

    def on_schedule() -> int:
        """Messages on the schedule: every one intended before the end. Unthrottled: none."""
        return -(-(end_ns() - args.start_ns) // interval_ns) if interval_ns else 0

    scheduled = on_schedule()
    start_ns, index = args.start_ns, args.index
    key_number, key_encoded = bind_keys(index, args.keys)
    unpack, pack, sink, time_ns = HEADER.unpack_from, out.ROW.pack, out.row_sink(), time.time_ns
    seq = 0        # the next message to send
    reports = 0    # delivery reports served since the callback last looked at the schedule

    def on_delivery(err, msg):
        nonlocal reports
        now = time_ns()
        _, _, sent_seq, sent = unpack(msg.value())
        reported[sent_seq] = 1
        intended = start_ns + sent_seq * interval_ns if interval_ns else sent
        key = key_number(sent_seq)
        if err is None:
            offset = msg.offset()
            sink(pack(sent_seq, key, intended, sent, now, msg.partition(),
                      offset if offset is not None and offset >= 0 else -1, 0, -1, -1))
            stats[1] += 1
        else:  # with the broker error behind it, where the client retried one until it gave up
            name = err.name()
            code = OUTCOMES.index(ledger.outcome_of(name))
            cause = said.last(msg.partition())
            sink(pack(sent_seq, key, intended, sent, now, -1, -1, code, out.error_code(name),
                      -1 if cause is None else out.error_code(cause)))
            stats[1 + code] += 1
        reports += 1
        if reports >= 32 and scheduled and txn is None:  # no transaction call in a callback
            reports = 0
            send_due()

    said = broker_errors.BrokerErrorLog(args.topic)  # the client's logger: keeps broker errors, prints nothing
    config = args.conn.config({**broker_errors.producer_config(args.config), "logger": said})
    txn, init_timeout_s = None, 60.0
    if args.transactions is not None:
        init_timeout_s = args.transactions.timeout_ms / 1000
        config |= txns.producer_config(args.transactions, args.run_id, index)
        txn = txns.Transactions(args.transactions, args.run_id, index, Path(args.ledger_dir).parent / "txn",
                                enabled=args.ledger_enabled)
    producer = Producer(config)
    if txn is not None:
        txns.init(producer, init_timeout_s)
    padding = b"\0" * max(0, args.message_size - HEADER.size)
    produce, poll, topic = producer.produce, producer.poll, args.topic
    fatal: list[str] = []  # the client's fatal error, until the producer is replaced
    replaced: list[dict[str, Any]] = []  # every fatal error and when the producer was replaced

    def send(now: int) -> bool:
        """Send message `seq` stamped with `now`; False when the client's queue is full, or when
        the client has had a fatal error (an idempotent producer's broken sequence: the instance
        is unusable) and must be replaced (`replace_producer`, outside any callback)."""
        nonlocal seq
        if txn is not None and not txn.admit(producer, seq, now):
            return False
        reported.append(0)
        try:
            produce(topic, HEADER.pack(tag, index, seq, now) + padding,
                    key=key_encoded(seq), on_delivery=on_delivery)
        except BufferError:
            reported.pop()
            return False
        except KafkaException as exc:
            reported.pop()
            refusal = f"{exc.args[0].name()}: {exc.args[0].str()}"
            if exc.args[0].fatal():
                fatal[:] = fatal or [refusal]
            elif txn is not None:  # refused inside a transaction (an abortable state): end it
                txn.refused(refusal)
            else:
                raise
            return False
        if txn is not None:
            txn.sent_one()
        seq += 1
        stats[0] += 1
        if seq % 64 == 0:
            out.maybe_flush()
            publish(counters, base, stats)
        return True

    def send_due() -> bool:
        """Send every message whose intended time has come; False when the client's queue is full."""
        now = time_ns()
        while seq < scheduled and start_ns + seq * interval_ns <= now:
            if not send(now):
                return False
            now = time_ns()
        return True

    def replace_producer() -> None:
        """What an application does on a fatal error: the unusable instance's messages purged
        (their reports: _PURGE_QUEUE, failed; _PURGE_INFLIGHT, indeterminate), the instance
        dropped, a new one (a new producer id) for the rest of the schedule."""
        nonlocal producer, produce, poll
        at, old = time_ns(), producer
        if txn is not None:
            txn.lost_with_instance(fatal[0] if fatal else "the producer instance was replaced")
        with contextlib.suppress(Exception):
            old.purge(in_queue=True, in_flight=True)
            old.flush(5)
        replaced.append({"at_ns": at, "seq": seq, "error": fatal[0] if fatal else "",
                         "replaced_after_s": (time_ns() - at) / 1e9})
        producer = Producer(config)
        produce, poll = producer.produce, producer.poll
        if txn is not None:  # the same transactional.id: fences the old instance, completes its transaction
            txns.init(producer, init_timeout_s)
        fatal.clear()

    def stalled() -> None:
        """send_due or send stopped short: a transaction to end, a client to replace, or a full queue to drain."""
        if txn is not None and txn.full() and txn.end(producer):
            fatal[:] = fatal or ["a transaction's end could not be confirmed"]
        if fatal:
            replace_producer()

    # Connections and the topic's metadata before the first intended time, not after it; should
    # that fail, the sends wait for them, which the ledger shows.
    with contextlib.suppress(Exception):
        producer.list_topics(topic, timeout=max(1.0, (start_ns - time_ns()) / 1e9))
    priority = _raise_send_priority(args, bool(scheduled))
    cpu_start = time.process_time()  # every thread of the process: the loop's and the client's
    if scheduled:
        while seq < scheduled or seq < (scheduled := on_schedule()):
            delay = start_ns + seq * interval_ns - time_ns()
            if delay > 0:
                time.sleep(delay / 1e9)
            if not send_due():  # the client's queue is full: let it drain, the intended times keep marching
                stalled()
                poll(0.005)
            poll(0)
    else:  # unthrottled: no schedule, a message is intended when it is sent
        stop = end_ns()  # read again only when reached: the shared value is not read per message
        while (now := time_ns()) < stop or now < (stop := end_ns()):
            if not send(now):
                stalled()
                poll(0.005)
            poll(0)
    if txn is not None:  # the last transaction, however many messages it holds
        if txn.end(producer):
            replace_producer()
        txn.close()
    deadline = time.monotonic() + args.flush_timeout_s
    while sum(stats[1:]) < stats[0] and time.monotonic() < deadline:
        producer.flush(0.5)
        out.maybe_flush()
        publish(counters, base, stats)
    for seq_left in (s for s, done in enumerate(reported) if not done):  # no delivery report at all
        intended = start_ns + seq_left * interval_ns if interval_ns else None
        out.append(args.run_id, index, seq_left, key_number(seq_left), intended, None, None, "indeterminate", None, None,
                   "_NO_REPORT", None)
        stats[3] += 1
    out.close()
    publish(counters, base, stats)
    # The process's CPU from the first send to the last report.
    write_producer_meta(args, priority, time.process_time() - cpu_start, seq, replaced)


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
