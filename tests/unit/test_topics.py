"""Topic administration with the admin client substituted: what a preferred-leader election asks
and how it reads the answer."""

from __future__ import annotations

from concurrent.futures import Future

from confluent_kafka import KafkaError, KafkaException

from benchmarks.core.connection import Connection
from benchmarks.kafka import topics


class ElectingAdmin:
    """An admin client whose election answers `errors` (partition -> KafkaError or None)."""

    def __init__(self, errors):
        self.errors, self.asked = errors, None

    def elect_leaders(self, election_type, partitions):
        self.asked = (election_type, [(tp.topic, tp.partition) for tp in partitions])
        future: Future = Future()
        future.set_result({tp: self.errors[tp.partition] for tp in partitions})
        return future


def test_an_election_waits_longer_than_a_status_read_for_the_controllers_answer(monkeypatch):
    """CI of stop 50: right after a broker restart the controller answered the election after more
    than the 5 s socket timeout the status reads use; the election's own client waits longer."""
    made: list[dict] = []

    def admin_client(conn, **extra):
        made.append(extra)
        return ElectingAdmin({0: None, 1: None})

    monkeypatch.setattr(topics, "admin_client", admin_client)
    assert topics.elect_preferred_leaders(Connection("127.0.0.1:9092"), "t", [0, 1]) == {0: None, 1: None}
    assert made == [{"socket.timeout.ms": int(topics.ELECTION_TIMEOUT_S * 1000)}]
    assert topics.ELECTION_TIMEOUT_S > 5
    topics.elect_preferred_leaders(Connection("127.0.0.1:9092"), "t", [0], timeout_s=2.5)
    assert made[-1] == {"socket.timeout.ms": 2500}


def test_a_partition_already_on_its_preferred_leader_is_no_error():
    from confluent_kafka import ElectionType

    admin = ElectingAdmin({0: KafkaException(KafkaError(KafkaError.ELECTION_NOT_NEEDED)),
                           1: KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION), 2: None})
    out = topics.elect_preferred_leaders(Connection("127.0.0.1:9092"), "t", [0, 1, 2], admin=admin)
    assert admin.asked == (ElectionType.PREFERRED, [("t", 0), ("t", 1), ("t", 2)])
    assert out[0] is None and out[2] is None
    assert out[1] is not None and "NOT_LEADER_FOR_PARTITION" in out[1]
