"""The hosts' health check (benchmarks/kafka/kafka_health.py, the kafka_bench.cluster.kafka_health
module's logic) on the answers a node can give; the answers' encoding is tests/unit/test_kafka_wire.py's,
the module on real clusters is every integration test's deploy and restart."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.kafka import kafka_health
from benchmarks.kafka import kafka_protocol as kp
from benchmarks.kafka.kafka_codec import ProtocolError


def _partition(index: int, isr: tuple[int, ...]) -> kp.PartitionInfo:
    return kp.PartitionInfo(index, isr[0] if isr else None, 1, (0, 1, 2), isr, None, None, ())


def _metadata(brokers: tuple[int, ...] = (0, 1, 2), lagging: int = 0) -> kp.ClusterMetadata:
    parts = tuple(_partition(i, (0, 2) if i < lagging else (0, 1, 2)) for i in range(max(lagging, 3)))
    return kp.ClusterMetadata("c", 0, tuple(kp.BrokerInfo(b, "127.0.0.1", 9092 + b, False) for b in brokers),
                              (kp.TopicMetadata("purchases", 0, False, parts),))


def _quorum(leader: int | None = 9990, voters: tuple[int, ...] = (9990, 9991), observers: tuple[int, ...] = ()):
    return kp.Quorum(leader, 3, 10, tuple(kp.Replica(n, 10, 0, 0) for n in voters),
                     tuple(kp.Replica(n, 10, 0, 0) for n in observers))


class Node:
    """A node's answers by address; an address without answers refuses the connection."""

    def __init__(self, **answers: Any) -> None:
        self.answers, self.asked = answers, list[tuple[str, float, Any]]()

    def __call__(self, address: str, timeout: float, settings: Any = None) -> Any:
        self.asked.append((address, timeout, settings))
        if address not in self.answers:
            raise ProtocolError(f"{address} does not answer: [Errno 111] Connection refused")
        answer = self.answers[address]

        class Conn:
            def __enter__(self) -> Any:
                return self

            def __exit__(self, *_: object) -> None:
                pass

            def metadata(self) -> Any:
                return answer

            def describe_quorum(self) -> Any:
                if isinstance(answer, Exception):
                    raise answer
                return answer

        return Conn()


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_a_registered_broker_with_every_replica_in_sync_is_healthy(mode):
    node = Node(**{"127.0.0.1:9093": _metadata()})
    client = {"security.protocol": "SASL_SSL", "sasl.username": "admin"}
    assert kafka_health.node_problems(mode, 1, broker="127.0.0.1:9093", timeout=2.5, client=client,
                                      connect=node) == []
    assert node.asked == [("127.0.0.1:9093", 2.5, client)]


@pytest.mark.parametrize(("mode", "problem"), [
    ("zookeeper", "broker 1 is not registered in ZooKeeper yet, or the controller has not told it so"),
    ("kraft", "broker 1 is not registered, or still fenced"),
])
def test_a_broker_missing_from_its_own_metadata_is_not_healthy(mode, problem):
    node = Node(**{"127.0.0.1:9093": _metadata(brokers=(0, 2))})
    assert kafka_health.node_problems(mode, 1, broker="127.0.0.1:9093", connect=node) == [
        kafka_health.Problem(kafka_health.NOT_REGISTERED, problem)]


def test_a_broker_registered_with_another_address_is_not_healthy():
    node = Node(**{"10.0.0.5:9093": _metadata()})
    assert kafka_health.node_problems("zookeeper", 1, broker="10.0.0.5:9093", connect=node) == [
        kafka_health.Problem(kafka_health.OTHER_ADDRESS, "broker 1 is registered with 127.0.0.1:9093, not 10.0.0.5:9093")]


def test_under_replicated_partitions_are_named_up_to_ten_then_counted():
    node = Node(**{"127.0.0.1:9093": _metadata(lagging=12)})
    [found] = kafka_health.node_problems("kraft", 1, broker="127.0.0.1:9093", connect=node)
    assert found.kind == kafka_health.UNDER_REPLICATED
    problem = found.text
    assert problem.startswith("under-replicated partitions: purchases-0 (replicas [0, 1, 2], in sync [0, 2]), ")
    assert problem.count("purchases-") == 10 and problem.endswith(" and 2 more")


def test_a_broker_that_does_not_answer_says_where_it_was_asked():
    assert kafka_health.node_problems("zookeeper", 1, broker="127.0.0.1:9093", connect=Node()) == [
        kafka_health.Problem(kafka_health.UNREACHABLE, "cannot read the cluster's metadata through 127.0.0.1:9093: "
                             "127.0.0.1:9093 does not answer: [Errno 111] Connection refused")]


@pytest.mark.parametrize(("quorum", "problem"), [
    (_quorum(), None),
    (_quorum(observers=(9991,), voters=(9990,)), None),
    (_quorum(leader=None), kafka_health.Problem(kafka_health.NO_LEADER, "controller 9991: the quorum has no leader")),
    (_quorum(voters=(9990, 9992)), kafka_health.Problem(
        kafka_health.NOT_IN_QUORUM, "controller 9991 is neither a voter nor an observer of the quorum (leader 9990)")),
])
def test_a_controller_is_healthy_in_a_led_quorum_it_belongs_to(quorum, problem):
    node = Node(**{"127.0.0.1:9193": quorum})
    assert kafka_health.node_problems("kraft", 9991, controller="127.0.0.1:9193", connect=node) == (
        [problem] if problem else [])


def test_a_controller_that_is_not_the_leader_has_the_quorum_asked_of_the_others_in_turn():
    not_leader = kp.NotLeader("not the leader of the metadata quorum")
    node = Node(**{"127.0.0.1:9193": not_leader, "127.0.0.1:9194": not_leader, "127.0.0.1:9195": _quorum(voters=(1, 2, 3))})
    quorum = ["127.0.0.1:9193", "127.0.0.1:9194", "127.0.0.1:9195"]
    assert kafka_health.node_problems("kraft", 1, controller="127.0.0.1:9193", quorum=quorum, connect=node) == []
    assert [a for a, _, _ in node.asked] == quorum
    leaderless = Node(**{"127.0.0.1:9193": not_leader, "127.0.0.1:9194": not_leader})
    assert kafka_health.node_problems("kraft", 1, controller="127.0.0.1:9193", quorum=quorum, connect=leaderless) == [
        kafka_health.Problem(kafka_health.NO_LEADER, "controller 1: the quorum has no leader (no controller answered "
                             "as its leader; last: 127.0.0.1:9195 does not answer: [Errno 111] Connection refused)")]


def test_a_combined_node_is_asked_as_controller_first_then_as_broker():
    node = Node(**{"127.0.0.1:9193": _quorum(voters=(1, 2)), "127.0.0.1:9093": _metadata(lagging=1)})
    problems = kafka_health.node_problems("kraft", 1, broker="127.0.0.1:9093", controller="127.0.0.1:9193",
                                          connect=node)
    assert [a for a, _, _ in node.asked] == ["127.0.0.1:9193", "127.0.0.1:9093"]
    assert problems == [kafka_health.Problem(kafka_health.UNDER_REPLICATED,
                                             "under-replicated partitions: purchases-0 (replicas [0, 1, 2], in sync [0, 2])")]
    down = Node(**{"127.0.0.1:9093": _metadata()})
    assert kafka_health.node_problems("kraft", 1, broker="127.0.0.1:9093", controller="127.0.0.1:9193",
                                      connect=down) == [kafka_health.Problem(
        kafka_health.UNREACHABLE,
        "controller 1 does not answer on 127.0.0.1:9193: 127.0.0.1:9193 does not answer: [Errno 111] Connection refused")]
    assert [a for a, _, _ in down.asked] == ["127.0.0.1:9193"]
