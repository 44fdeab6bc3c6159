"""The open-loop producer process of a run (librdkafka through confluent-kafka): its schedule,
its sends, their delivery reports into the produce ledger, and what it does on a fatal error.

Message i of a producer is *intended* at start + i / rate, whatever happened to earlier ones;
when the client blocks, the intended times keep marching and the delay shows as send delay
(`load` says why). `producer_main` is the process's entry point; `OpenLoopProducer` holds one
process's state, and its two hot methods (`send`, `on_delivery`) run once per message.
"""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path
from typing import Any

from benchmarks.core.codes import OUTCOMES
from benchmarks.harness import transactions as txns
from benchmarks.harness.load import (
    COUNTERS,
    ProducerArgs,
    die_with_parent,
    publish,
    raise_send_priority,
    write_producer_meta,
)
from benchmarks.kafka import broker_errors
from benchmarks.record import ledger
from benchmarks.record.message import HEADER, bind_keys, run_tag

CALLBACK_SENDS_EVERY = 32  # delivery reports between two looks at the schedule from the callback


class OpenLoopProducer:
    """One producer process: the client, the schedule and the ledger of every message it sent.

    Nothing is kept per message in flight: the delivery report carries the message, whose header
    holds its sequence number and send time; the intended time and the key follow from the
    sequence number. `reported` has one byte per message sent, set when its report comes.

    On a schedule, messages are sent by `send_due`, which sends every message whose intended
    time has come. The loop calls it after sleeping until the next intended time, and the
    delivery callback calls it too: one poll can serve the reports of several whole batches
    (milliseconds of Python), and without that the schedule would wait for them."""

    __slots__ = ("args", "end", "counters", "base", "out", "tag", "interval_ns", "start_ns", "index", "topic",
                 "padding", "key_number", "key_encoded", "unpack", "pack", "sink", "time_ns", "reported", "stats",
                 "seq", "scheduled", "reports", "said", "config", "txn", "init_timeout_s", "producer", "produce",
                 "poll", "fatal", "replaced", "kafka_exception")

    def __init__(self, args: ProducerArgs, counters: Any, slot: int, end: Any = None) -> None:
        from confluent_kafka import KafkaException, Producer

        self.args, self.end, self.counters, self.base = args, end, counters, slot * COUNTERS
        self.out = ledger.ProduceLedgerWriter(Path(args.ledger_dir), f"producer-{args.index:03d}", args.run_id,
                                              args.index, enabled=args.ledger_enabled)
        self.tag, self.start_ns, self.index, self.topic = run_tag(args.run_id), args.start_ns, args.index, args.topic
        self.interval_ns = int(1e9 / args.rate) if args.rate else 0
        self.padding = b"\0" * max(0, args.message_size - HEADER.size)
        self.key_number, self.key_encoded = bind_keys(args.index, args.keys)
        self.unpack, self.pack, self.sink, self.time_ns = HEADER.unpack_from, self.out.ROW.pack, self.out.row_sink(), time.time_ns
        self.reported = bytearray()
        self.stats = [0, 0, 0, 0]  # sent, acked, failed, indeterminate
        self.seq = 0               # the next message to send
        self.reports = 0           # delivery reports served since the callback last looked at the schedule
        self.scheduled = self.on_schedule()
        self.said = broker_errors.BrokerErrorLog(args.topic)  # the client's logger: keeps broker errors, prints nothing
        self.config = args.conn.config({**broker_errors.producer_config(args.config), "logger": self.said})
        self.txn: txns.Transactions | None = None
        self.init_timeout_s = 60.0
        if args.transactions is not None:
            self.init_timeout_s = args.transactions.timeout_ms / 1000
            self.config |= txns.producer_config(args.transactions, args.run_id, args.index)
            self.txn = txns.Transactions(args.transactions, args.run_id, args.index,
                                         Path(args.ledger_dir).parent / "txn", enabled=args.ledger_enabled)
        self.kafka_exception = KafkaException
        self.producer = Producer(self.config)
        self.produce, self.poll = self.producer.produce, self.producer.poll
        if self.txn is not None:
            txns.init(self.producer, self.init_timeout_s)
        self.fatal: list[str] = []  # the client's fatal error, until the producer is replaced
        self.replaced: list[dict[str, Any]] = []  # every fatal error and when the producer was replaced

    def end_ns(self) -> int:
        return max(self.args.end_ns, self.end.value) if self.end is not None else self.args.end_ns

    def on_schedule(self) -> int:
        """Messages on the schedule: every one intended before the end. Unthrottled: none."""
        return -(-(self.end_ns() - self.start_ns) // self.interval_ns) if self.interval_ns else 0

    def on_delivery(self, err: Any, msg: Any) -> None:
        now = self.time_ns()
        _, _, sent_seq, sent = self.unpack(msg.value())
        self.reported[sent_seq] = 1
        intended = self.start_ns + sent_seq * self.interval_ns if self.interval_ns else sent
        key = self.key_number(sent_seq)
        if err is None:
            offset = msg.offset()
            self.sink(self.pack(sent_seq, key, intended, sent, now, msg.partition(),
                                offset if offset is not None and offset >= 0 else -1, 0, -1, -1))
            self.stats[1] += 1
        else:  # with the broker error behind it, where the client retried one until it gave up
            name = err.name()
            code = OUTCOMES.index(ledger.outcome_of(name))
            cause = self.said.last(msg.partition())
            self.sink(self.pack(sent_seq, key, intended, sent, now, -1, -1, code, self.out.error_code(name),
                                -1 if cause is None else self.out.error_code(cause)))
            self.stats[1 + code] += 1
        self.reports += 1
        if self.reports >= CALLBACK_SENDS_EVERY and self.scheduled and self.txn is None:  # no transaction call in a callback
            self.reports = 0
            self.send_due()

    def send(self, now: int) -> bool:
        """Send message `seq` stamped with `now`; False when the client's queue is full, or when
        the client has had a fatal error (an idempotent producer's broken sequence: the instance
        is unusable) and must be replaced (`replace_producer`, outside any callback)."""
        seq, txn = self.seq, self.txn
        if txn is not None and not txn.admit(self.producer, seq, now):
            return False
        self.reported.append(0)
        try:
            self.produce(self.topic, HEADER.pack(self.tag, self.index, seq, now) + self.padding,
                         key=self.key_encoded(seq), on_delivery=self.on_delivery)
        except BufferError:
            self.reported.pop()
            return False
        except self.kafka_exception as exc:
            self.reported.pop()
            self.refused(exc)
            return False
        if txn is not None:
            txn.sent_one()
        self.seq = seq = seq + 1
        self.stats[0] += 1
        if seq % 64 == 0:
            self.out.maybe_flush()
            publish(self.counters, self.base, self.stats)
        return True

    def refused(self, exc: Any) -> None:
        """The client refused a send: a fatal error (replace the client), or, inside a transaction,
        an abortable state (end the transaction); any other refusal is raised."""
        error = exc.args[0]
        refusal = f"{error.name()}: {error.str()}"
        if error.fatal():
            self.fatal[:] = self.fatal or [refusal]
        elif self.txn is not None:
            self.txn.refused(refusal)
        else:
            raise exc

    def send_due(self) -> bool:
        """Send every message whose intended time has come; False when the client's queue is full."""
        time_ns, start_ns, interval_ns, scheduled = self.time_ns, self.start_ns, self.interval_ns, self.scheduled
        now = time_ns()
        while self.seq < scheduled and start_ns + self.seq * interval_ns <= now:
            if not self.send(now):
                return False
            now = time_ns()
        return True

    def replace_producer(self) -> None:
        """What an application does on a fatal error: the unusable instance's messages purged
        (their reports: _PURGE_QUEUE, failed; _PURGE_INFLIGHT, indeterminate), the instance
        dropped, a new one (a new producer id) for the rest of the schedule."""
        from confluent_kafka import Producer

        at, old = self.time_ns(), self.producer
        error = self.fatal[0] if self.fatal else ""
        if self.txn is not None:
            self.txn.lost_with_instance(error or "the producer instance was replaced")
        with contextlib.suppress(Exception):
            old.purge(in_queue=True, in_flight=True)
            old.flush(5)
        self.replaced.append({"at_ns": at, "seq": self.seq, "error": error,
                              "replaced_after_s": (self.time_ns() - at) / 1e9})
        self.producer = Producer(self.config)
        self.produce, self.poll = self.producer.produce, self.producer.poll
        if self.txn is not None:  # the same transactional.id: fences the old instance, completes its transaction
            txns.init(self.producer, self.init_timeout_s)
        self.fatal.clear()

    def stalled(self) -> None:
        """send_due or send stopped short: a transaction to end, a client to replace, or a full queue to drain."""
        txn = self.txn
        if txn is not None and txn.full() and txn.end(self.producer):
            self.fatal[:] = self.fatal or ["a transaction's end could not be confirmed"]
        if self.fatal:
            self.replace_producer()
        self.poll(0.005)

    def run_scheduled(self) -> None:
        """Sleep until the next intended time, send what is due; the schedule grows with `end`."""
        start_ns, interval_ns, sleep, time_ns = self.start_ns, self.interval_ns, time.sleep, self.time_ns
        while self.seq < self.scheduled or self.seq < self.grow_schedule():
            delay = start_ns + self.seq * interval_ns - time_ns()
            if delay > 0:
                sleep(delay / 1e9)
            if not self.send_due():  # the client's queue is full: let it drain, the intended times keep marching
                self.stalled()
            self.poll(0)

    def grow_schedule(self) -> int:
        self.scheduled = self.on_schedule()
        return self.scheduled

    def run_unthrottled(self) -> None:
        """No schedule: a message is intended when it is sent, until the end."""
        time_ns, stop = self.time_ns, self.end_ns()  # read again only when reached: not per message
        while (now := time_ns()) < stop or now < (stop := self.end_ns()):
            if not self.send(now):
                self.stalled()
            self.poll(0)

    def finish(self) -> None:
        """The last transaction ended; every report waited for up to the flush timeout; each
        message without one recorded as indeterminate (_NO_REPORT); the ledger closed."""
        args, out, stats = self.args, self.out, self.stats
        if self.txn is not None:  # the last transaction, however many messages it holds
            if self.txn.end(self.producer):
                self.replace_producer()
            self.txn.close()
        deadline = time.monotonic() + args.flush_timeout_s
        while sum(stats[1:]) < stats[0] and time.monotonic() < deadline:
            self.producer.flush(0.5)
            out.maybe_flush()
            publish(self.counters, self.base, stats)
        for seq_left in (s for s, done in enumerate(self.reported) if not done):
            intended = self.start_ns + seq_left * self.interval_ns if self.interval_ns else None
            out.append(args.run_id, self.index, seq_left, self.key_number(seq_left), intended, None, None,
                       "indeterminate", None, None, "_NO_REPORT", None)
            stats[3] += 1
        out.close()
        publish(self.counters, self.base, stats)


def producer_main(args: ProducerArgs, counters: Any, slot: int, end: Any = None) -> None:
    """Produce on the open-loop schedule; record every message's outcome in the ledger.

    `end` (a shared integer, ns) lets the runner extend the load while it runs, so a fault that
    acted late is still watched under load; the load never ends before `args.end_ns`."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides when producers stop
    loop = OpenLoopProducer(args, counters, slot, end)
    # Connections and the topic's metadata before the first intended time, not after it; should
    # that fail, the sends wait for them, which the ledger shows.
    with contextlib.suppress(Exception):
        loop.producer.list_topics(args.topic, timeout=max(1.0, (args.start_ns - time.time_ns()) / 1e9))
    priority = raise_send_priority(args, bool(loop.scheduled))
    cpu_start = time.process_time()  # every thread of the process: the loop's and the client's
    if loop.scheduled:
        loop.run_scheduled()
    else:
        loop.run_unthrottled()
    loop.finish()
    # The process's CPU from the first send to the last report.
    write_producer_meta(args, priority, time.process_time() - cpu_start, loop.seq, loop.replaced)
