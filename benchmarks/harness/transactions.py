"""The transactional side of a producer process (`client.transactions`): when to begin and end
a transaction, whether to commit or abort it (a ratio seeded per producer), and the transaction
ledger (`ledger.TXN_SCHEMA`), one row per transaction with its fate as the client was told it.

Kept out of the send loop (`producer.OpenLoopProducer`), which asks only three things: may this
message be sent now (`admit`), is the transaction full (`full`), and end it (`end`). Every call
into librdkafka's transaction API happens on the producer's own thread, never in a callback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.core.codes import CLIENT_NAME_PREFIX
from benchmarks.record import ledger

CALL_TIMEOUT_S = 10.0  # one commit_transaction / abort_transaction / init_transactions call


def transactional_id(run_id: str, producer: int) -> str:
    """The transactional.id of a run's producer: the fault targets and the checker derive it too."""
    return f"{CLIENT_NAME_PREFIX}{run_id}-p{producer:03d}"


@dataclasses.dataclass(frozen=True)
class TransactionArgs:
    messages: int       # messages per transaction
    abort_ratio: float  # share aborted on purpose
    timeout_ms: int     # transaction.timeout.ms
    seed: int           # the run's seed: producer N draws from Random(seed * 1009 + N)


def producer_config(args: TransactionArgs, run_id: str, producer: int) -> dict[str, Any]:
    return {"transactional.id": transactional_id(run_id, producer), "transaction.timeout.ms": args.timeout_ms}


def init(producer: Any, timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
    """init_transactions, retried while retriable (a coordinator still loading, being elected)."""
    from confluent_kafka import KafkaException

    deadline = clock() + timeout_s
    while True:
        try:
            producer.init_transactions(CALL_TIMEOUT_S)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() or clock() >= deadline:
                raise


class Transactions:
    """One producer's transactions. `admit(producer, seq, now)` before each send: begins a
    transaction at its first message, False when the current one is full; `end(producer)` commits
    or aborts it and returns True when the producer instance must be replaced (a fatal error, or
    an end that could not be confirmed and leaves the instance mid-transaction)."""

    def __init__(self, args: TransactionArgs, run_id: str, producer: int, ledger_dir: Path, enabled: bool = True,
                 clock_ns: Callable[[], int] = time.time_ns, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.args = args
        self.run_id, self.producer = run_id, producer
        self.rng = random.Random(args.seed * 1009 + producer)
        self.out = ledger.LedgerWriter(Path(ledger_dir), f"txn-{producer:03d}", ledger.TXN_SCHEMA, enabled=enabled)
        self.clock_ns, self.monotonic = clock_ns, monotonic
        self.number = 0            # the next transaction's number
        self.first_seq: int | None = None  # the open transaction's first message (None: none open)
        self.sent = 0              # messages in the open transaction
        self.begin_ns = 0
        self.broken = ""           # a send refused inside the open transaction: it cannot commit

    def full(self) -> bool:
        return self.first_seq is not None and (self.sent >= self.args.messages or bool(self.broken))

    def admit(self, producer: Any, seq: int, now: int) -> bool:
        """Whether message `seq` may be sent now; begins a transaction at its first message."""
        if self.full():
            return False
        if self.first_seq is None:
            producer.begin_transaction()
            self.first_seq, self.sent, self.begin_ns, self.broken = seq, 0, now, ""
        return True

    def sent_one(self) -> None:
        self.sent += 1

    def refused(self, error: str) -> None:
        """produce() refused a message inside the transaction (an abortable state): end it now."""
        self.broken = self.broken or error

    def end(self, producer: Any) -> bool:
        """Commit or abort the open transaction (none open: nothing to do); its row in the
        ledger. True when the producer must be replaced."""
        if self.first_seq is None:
            return False
        if not self.sent:  # begun, nothing in it: nothing to commit either
            from confluent_kafka import KafkaException

            with contextlib.suppress(KafkaException):  # nothing at stake in an empty transaction
                producer.abort_transaction(CALL_TIMEOUT_S)
            self.first_seq = None
            return False
        intent = "abort" if self.rng.random() < self.args.abort_ratio else "commit"
        fate, error, replace = self._finish(producer, intent)
        self.out.append(self.run_id, self.producer, self.number, self.first_seq, self.sent, intent, fate,
                        self.begin_ns, self.clock_ns(), error or self.broken or None)
        self.out.maybe_flush()
        self.number += 1
        self.first_seq = None
        return replace

    def lost_with_instance(self, error: str) -> None:
        """The producer instance is being replaced (a fatal error) with a transaction open: the
        new instance's init_transactions completes it one way or the other: unknown."""
        if self.first_seq is not None and self.sent:
            self.out.append(self.run_id, self.producer, self.number, self.first_seq, self.sent, "commit", "unknown",
                            self.begin_ns, self.clock_ns(), error)
            self.number += 1
        self.first_seq = None

    def _finish(self, producer: Any, intent: str) -> tuple[str, str, bool]:
        """(fate, error, replace the instance). A commit is retried while retriable; one that needs
        an abort is aborted; what cannot be confirmed within the transaction timeout is unknown."""
        from confluent_kafka import KafkaException

        deadline = self.monotonic() + self.args.timeout_ms / 1000
        call = producer.commit_transaction if intent == "commit" and not self.broken else producer.abort_transaction
        error = ""
        while True:
            try:
                call(CALL_TIMEOUT_S)
                return ("committed" if call == producer.commit_transaction else "aborted"), error, False
            except KafkaException as exc:
                err = exc.args[0]
                error = f"{err.name()}: {err.str()}"
                if err.fatal():
                    return "unknown", error, True
                if err.txn_requires_abort() and call == producer.commit_transaction:
                    call = producer.abort_transaction
                    continue
                if not err.retriable() or self.monotonic() >= deadline:
                    return "unknown", error, True

    def close(self) -> None:
        self.out.close()

