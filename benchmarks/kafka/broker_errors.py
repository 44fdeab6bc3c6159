"""What the broker said behind a message the client gave up on.

librdkafka retries retriable broker errors (NOT_ENOUGH_REPLICAS when the ISR is below
min.insync.replicas, NOT_LEADER_OR_FOLLOWER, ...) until `delivery.timeout.ms`, and then
reports only `_MSG_TIMED_OUT`: the broker's refusal, which is the point of a min-ISR lab, never
reaches the delivery report. The client says it only in its debug log (the `msg` context: one
line per failed produce request, naming topic, partition and error), so the producer turns
that log on and keeps, per partition, the last error a produce request met; a message that
fails or times out is recorded in the ledger with it as its `cause`. That error is a broker's
answer, or the client's own (librdkafka's names start with "_": `_TIMED_OUT`, a request left
unanswered; `_TRANSPORT`, a connection lost).

This is the only place that reads librdkafka's words; they are the client's, not ours, and
there is no other API for them.
"""

from __future__ import annotations

import re
import threading
from typing import Any

# The debug context whose lines name a failed produce request's partition and error.
DEBUG_CONTEXT = "msg"

# "<topic> [<partition>]: MessageSet with 3 message(s) (MsgId 12, BaseSeq -1) encountered error:
#  Broker: Not enough in-sync replicas (actions Retry,MsgNotPersisted)"
_MSGSET = re.compile(r"(?P<topic>\S+) \[(?P<partition>\d+)\]: MessageSet with \d+ message\(s\).*?"
                     r"encountered error: (?P<error>.+?) \(actions")


def _names() -> dict[str, str]:
    """librdkafka's error descriptions ("Broker: Not enough in-sync replicas") to error names."""
    from confluent_kafka import KafkaError

    out = {}
    for name in dir(KafkaError):
        code = getattr(KafkaError, name)
        if name.isupper() and isinstance(code, int):
            out[KafkaError(code).str()] = KafkaError(code).name()
    return out


def producer_config(config: dict[str, Any]) -> dict[str, Any]:
    """The producer's configuration with the debug context this needs added to any the user set."""
    contexts = [c for c in str(config.get("debug", "")).split(",") if c]
    return {**config, "debug": ",".join(dict.fromkeys([*contexts, DEBUG_CONTEXT]))}


class BrokerErrorLog:
    """The producer's librdkafka logger: keeps the last broker error per partition of `topic`
    (by error name) and drops every other line, printing nothing.

    Given to the client as its `logger`, it is called as confluent-kafka calls a logger,
    `log(level, "%s [%s] %s", facility, client name, line)`, once per line, from the client's
    poll(). With the `msg` context on, that is a line per produce request: a logging.Logger would
    build a record and find its caller for each (measured: two fifths of a producer's CPU at
    1,000 messages/s); this tests the line for the one substring that matters first."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self._last: dict[int, str] = {}
        self._names = _names()
        self._lock = threading.Lock()

    def log(self, _level: int, _format: str, *args: Any) -> None:
        line = args[-1] if args else ""
        if not isinstance(line, str) or "encountered error" not in line:  # most lines are not errors
            return
        match = _MSGSET.search(line)
        if match is None or match["topic"] != self.topic:
            return
        error = match["error"].strip()
        with self._lock:
            self._last[int(match["partition"])] = self._names.get(error, error)

    def last(self, partition: int | None) -> str | None:
        """The last broker error seen for `partition` (None: not known, or none seen)."""
        if partition is None or partition < 0:
            return None
        with self._lock:
            return self._last.get(partition)
