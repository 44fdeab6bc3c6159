"""Topic administration through the Kafka admin API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.core.connection import Connection
from benchmarks.kafka.cluster import admin_client


class TopicError(RuntimeError):
    pass


# An election waits on the controller, which right after a broker restarts is busy sending every
# partition's new state: on this 2-core machine its answer has come after more than the 5 s the
# status reads allow (KafkaError _TIMED_OUT, CI of stop 50). The election's own client waits this long.
ELECTION_TIMEOUT_S = 30.0


def ensure_topic(conn: Connection, name: str, partitions: int, replication_factor: int,
                 config: Mapping[str, str] | None = None, timeout: float = 30.0, admin: Any = None) -> bool:
    """Create the topic, or check that the existing one has the same layout. True if created."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    admin = admin or admin_client(conn)
    existing = admin.list_topics(timeout=timeout).topics.get(name)
    if existing is not None and not existing.error:
        have_p = len(existing.partitions)
        have_rf = len(next(iter(existing.partitions.values())).replicas) if existing.partitions else 0
        if (have_p, have_rf) != (partitions, replication_factor):
            raise TopicError(f"topic {name} exists with {have_p} partitions and RF {have_rf}, "
                             f"not {partitions} partitions and RF {replication_factor}; delete it or pick another name")
        return False
    future = admin.create_topics([NewTopic(name, partitions, replication_factor, config=dict(config or {}))],
                                 operation_timeout=timeout, request_timeout=timeout)[name]
    try:
        future.result()
    except KafkaException as exc:
        if exc.args and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise TopicError(f"cannot create topic {name}: {exc}") from exc
    return True


def delete_topic(conn: Connection, name: str, timeout: float = 30.0, admin: Any = None) -> bool:
    """Delete the topic; False when there was none to delete. A cluster keeps every partition it
    holds replicated whether or not anything writes to it: topics left behind make every later
    produce request dearer (benchmarks.harness.runner deletes each run's topic after the run)."""
    from confluent_kafka import KafkaError, KafkaException

    admin = admin or admin_client(conn)
    future = admin.delete_topics([name], operation_timeout=timeout, request_timeout=timeout)[name]
    try:
        future.result(timeout=timeout + 5)
    except KafkaException as exc:
        if exc.args and exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return False
        raise TopicError(f"cannot delete topic {name}: {exc}") from exc
    return True


def elect_preferred_leaders(conn: Connection, topic: str, partitions: list[int], admin: Any = None,
                            timeout_s: float = ELECTION_TIMEOUT_S) -> dict[int, str | None]:
    """Move leadership back to the preferred (first) replica; partition -> error text or None.
    The answer is waited for `timeout_s` (the client's socket timeout, which librdkafka's admin
    requests take as theirs)."""
    from confluent_kafka import ElectionType, KafkaError, TopicPartition

    admin = admin or admin_client(conn, **{"socket.timeout.ms": int(timeout_s * 1000)})
    # No timeout keyword arguments: confluent-kafka 2.16's elect_leaders fails with any of them.
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, p) for p in partitions]).result()
    out: dict[int, str | None] = {}
    for tp, error in result.items():
        error = error.args[0] if hasattr(error, "args") else error  # KafkaException or KafkaError
        # ELECTION_NOT_NEEDED means the preferred replica already leads: that is success.
        out[tp.partition] = None if error is None or error.code() == KafkaError.ELECTION_NOT_NEEDED else str(error)
    return out
