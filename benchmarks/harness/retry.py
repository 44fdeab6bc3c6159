"""Retriable errors retried, the rest raised: one helper for every call a run makes to Kafka.

Right after a leader moves (a fault healed, a broker restarted) the brokers answer some
requests with errors that mean "not yet": OFFSET_NOT_AVAILABLE until the new leader's high
watermark has caught up with its epoch, NOT_LEADER_OR_FOLLOWER while the client's metadata is
stale, LEADER_NOT_AVAILABLE during an election, a request timed out while a broker restarts.
`Retrier.call` retries those with a growing backoff until the bound the caller gives (tied to
the run's own deadlines), records the wait as a `RetryWaited` event, and raises anything else
(and a retriable error past its bound) at once, for the run to fail with the error named.

A run's playbooks go through `RetryingRunner`: one that reached no host at all (every failure
"unreachable", nothing changed: an SSH connection that could not be set up) is run again under
the same policy; one that got anywhere is returned as it is, for its caller to judge.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.core.wait import WaitTimeout
from benchmarks.hosts.ansible import PlaybookResult, PlaybookRunner, ProgressCallback, summarize_failures
from benchmarks.record import run_events

T = TypeVar("T")

# Kafka's and librdkafka's error names (confluent_kafka.KafkaError) that mean "not yet": the
# cluster is moving a leader, a coordinator or a controller, or a broker is on its way up. The
# client marks some of them retriable itself (KafkaError.retriable()); these it does not always
# mark so on the calls a run makes (watermarks, metadata, describe_configs, list_offsets).
RETRIABLE_CODES = frozenset({
    "OFFSET_NOT_AVAILABLE", "NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE",
    "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "REPLICA_NOT_AVAILABLE", "BROKER_NOT_AVAILABLE",
    "NOT_CONTROLLER", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS",
    "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "UNKNOWN_TOPIC_OR_PART", "KAFKA_STORAGE_ERROR",
    "THROTTLING_QUOTA_EXCEEDED",
    "_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN", "_WAIT_COORD", "_NOT_IMPLEMENTED_LEADER", "_LEADER_NOT_AVAILABLE",
    "_NO_OFFSET", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC", "_WAIT_CACHE", "_DESTROY_BROKER",
})

# How long a run's calls to Kafka are retried (Retrier.call) while the brokers answer "not yet": a
# leader elected after a heal, a ZooKeeper session expiring (18 s), a broker restarting and
# recovering its logs (~40 s on 2 busy cores) all fit.
CALL_RETRY_S = 60.0
# The first wait, its growth per attempt, and its ceiling.
FIRST_BACKOFF_S = 0.25
BACKOFF_FACTOR = 2.0
MAX_BACKOFF_S = 4.0


def retriable(exc: BaseException) -> str | None:
    """The name of the error behind `exc` when it means "not yet" (None: it does not).

    A confluent_kafka.KafkaException carries a KafkaError: retriable when its name is one of
    RETRIABLE_CODES or the client says so. No broker answering the harness's own reads of the
    cluster (benchmarks.kafka.cluster.ClusterUnreachable, a refused or timed-out socket) is retriable
    too: a restart explains it; the harness's own waits (WaitTimeout) are not: they were waited
    out. An exception raised from another (`raise ... from exc`, as topics.TopicError is) is
    judged by its cause."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        error = current.args[0] if current.args else None
        name = getattr(error, "name", None)
        if callable(name):  # a KafkaError
            code = str(name())
            return code if code in RETRIABLE_CODES or getattr(error, "retriable", lambda: False)() else None
        if isinstance(current, WaitTimeout):  # the harness's own wait, already waited out
            return None
        if isinstance(current, (ConnectionError, TimeoutError)) or type(current).__name__ == "ClusterUnreachable":
            return type(current).__name__
        current = current.__cause__
    return None


class RetriesExhausted(RuntimeError):
    """A retriable error went on past its bound; the message names the step, the call and the error."""


@dataclasses.dataclass
class Retrier:
    """Calls under a run's retry policy. `record` takes the RetryWaited events (the run's event
    log); clock and sleep are injectable so the sequencing is tested without waiting."""

    record: Callable[[run_events.Event], object] = lambda event: None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def call(self, step: str, what: str, fn: Callable[[], T], within_s: float) -> T:
        """`fn()`, retried while it raises a retriable error, for at most `within_s` seconds.
        A call that needed retries is recorded once it ends (in success or not)."""
        started = self.clock()
        attempts, errors = 0, list[str]()
        backoff = FIRST_BACKOFF_S
        while True:
            attempts += 1
            try:
                result = fn()
            except Exception as exc:
                code = retriable(exc)
                if code is None:
                    if errors:
                        self._record(step, what, attempts, errors, started, ok=False)
                    raise
                errors.append(code)
                waited = self.clock() - started
                if waited + backoff > within_s:
                    self._record(step, what, attempts, errors, started, ok=False)
                    raise RetriesExhausted(f"{step}: {what}: still {code} after {attempts} attempts in "
                                           f"{waited:.1f} s ({exc})") from exc
                self.sleep(backoff)
                backoff = min(MAX_BACKOFF_S, backoff * BACKOFF_FACTOR)
                continue
            if errors:
                self._record(step, what, attempts, errors, started, ok=True)
            return result

    def _record(self, step: str, what: str, attempts: int, errors: list[str], started: float, ok: bool) -> None:
        self.record(run_events.RetryWaited(step=step, call=what, attempts=attempts, errors=sorted(set(errors)),
                                           waited_s=round(self.clock() - started, 3), ok=ok))


# Outside a run (the CLI's own reads, tests): the same policy, recorded nowhere.
DEFAULT = Retrier()


class Unreachable(ConnectionError):
    """A playbook reached none of its hosts and changed nothing (retriable: a ConnectionError)."""


@dataclasses.dataclass
class RetryingRunner:
    """A PlaybookRunner that runs a playbook again while it reaches no host (Unreachable), under
    `retrier`'s policy for at most `within_s`, naming the step `step()` says is under way. Past the
    bound, the last failed result is returned: its caller judges it as it would have."""

    inner: PlaybookRunner
    retrier: Retrier
    step: Callable[[], str] = lambda: "playbook"
    within_s: float = 30.0

    def run(self, playbook: str, inventory: Path, extravars: Mapping[str, Any] | None = None, limit: str | None = None,
            check: bool = False, progress: ProgressCallback | None = None) -> PlaybookResult:
        last: list[PlaybookResult] = []

        def attempt() -> PlaybookResult:
            result = self.inner.run(playbook, inventory, extravars, limit=limit, check=check, progress=progress)
            if (not result.ok and result.failures and all(f.unreachable for f in result.failures)
                    and not result.count("changed")):
                last[:] = [result]
                raise Unreachable(summarize_failures(result.failures))
            return result

        try:
            return self.retrier.call(self.step(), f"playbook {playbook}", attempt, self.within_s)
        except RetriesExhausted:
            return last[0]
