"""Whether one Kafka node is healthy, asked of Kafka's own protocol: no JVM.

The role's control scripts answered this with Kafka's tools, a JVM or two per check (a second of
CPU or more, and seconds of wall time while producers load the machine), repeated each second
while a node restarts. The same answers are one request each:

- a controller (KRaft): DescribeQuorum on its own listener has a leader, and the node is one of
  its voters or observers;
- a broker: the Metadata its own listener answers lists it (KRaft: registered and unfenced;
  ZooKeeper mode: registered, and the controller has told the broker so) at the address it was
  asked on, and no partition of the cluster has fewer in-sync replicas than replicas (what
  `kafka-topics --under-replicated-partitions` lists).

This module and the codec it imports (kafka_protocol, kafka_auth, kafka_codec: stdlib only,
relative imports) are also the kafka_bench.cluster collection's module_utils, by symlink, for its
kafka_health module: one copy of the code, on the controller and on the hosts.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from .kafka_codec import ProtocolError
from .kafka_protocol import KafkaConnection, NotLeader

Connect = Callable[..., KafkaConnection]
T = TypeVar("T")
#: How many under-replicated partitions a problem names before it counts the rest.
SHOWN_PARTITIONS = 10
#: What can keep a node from being healthy: Problem.kind.
UNREACHABLE, NO_LEADER, NOT_IN_QUORUM = "unreachable", "no-leader", "not-in-quorum"
NOT_REGISTERED, OTHER_ADDRESS, UNDER_REPLICATED = "not-registered", "other-address", "under-replicated"


@dataclasses.dataclass(frozen=True)
class Problem:
    """Why the node is not healthy: its kind (one of the constants above) and what to tell an operator."""

    kind: str
    text: str


def _ask(connect: Connect, address: str, timeout: float, settings: Mapping[str, str] | None,
         question: Callable[[KafkaConnection], T]) -> T | Exception:
    """The answer to `question`, or the error in its place."""
    try:
        with connect(address, timeout, settings=settings) as conn:
            return question(conn)
    except (ProtocolError, OSError, struct.error) as exc:
        return exc


def controller_problems(node_id: int, address: str, timeout: float = 5.0,
                        settings: Mapping[str, str] | None = None,
                        connect: Connect = KafkaConnection, quorum: Sequence[str] = ()) -> list[Problem]:
    """A KRaft controller's: it answers, the quorum has a leader and the node is one of its voters or
    observers. Only the leader answers DescribeQuorum: asked of this node first, then of the other
    controllers of `quorum` (their listeners) in turn."""
    answer = _ask(connect, address, timeout, settings, lambda conn: conn.describe_quorum())
    if isinstance(answer, Exception) and not isinstance(answer, NotLeader):
        return [Problem(UNREACHABLE, f"controller {node_id} does not answer on {address}: {answer}")]
    for other in (a for a in quorum if a != address):
        if not isinstance(answer, Exception):
            break
        answer = _ask(connect, other, timeout, settings, lambda conn: conn.describe_quorum())
    if isinstance(answer, Exception):
        return [Problem(NO_LEADER, f"controller {node_id}: the quorum has no leader "
                                   f"(no controller answered as its leader; last: {answer})")]
    leader = answer.leader_id
    if leader is None:
        return [Problem(NO_LEADER, f"controller {node_id}: the quorum has no leader")]
    members = {r.node_id for r in (*answer.voters, *answer.observers)}
    if node_id not in members:
        return [Problem(NOT_IN_QUORUM,
                        f"controller {node_id} is neither a voter nor an observer of the quorum (leader {leader})")]
    return []


def broker_problems(mode: str, node_id: int, address: str, timeout: float = 5.0,
                    settings: Mapping[str, str] | None = None,
                    connect: Connect = KafkaConnection) -> list[Problem]:
    """A broker's: listed by its own Metadata at `address`, and nothing under-replicated."""
    metadata = _ask(connect, address, timeout, settings, lambda conn: conn.metadata())
    if isinstance(metadata, Exception):
        return [Problem(UNREACHABLE, f"cannot read the cluster's metadata through {address}: {metadata}")]
    listed = {b.broker_id: f"{b.host}:{b.port}" for b in metadata.brokers}
    if node_id not in listed:
        return [Problem(NOT_REGISTERED, f"broker {node_id} is not registered, or still fenced" if mode == "kraft" else
                        f"broker {node_id} is not registered in ZooKeeper yet, or the controller has not told it so")]
    if listed[node_id] != address:
        return [Problem(OTHER_ADDRESS, f"broker {node_id} is registered with {listed[node_id]}, not {address}")]
    lagging = metadata.under_replicated()
    if lagging:
        named = ", ".join(f"{topic}-{p.partition} (replicas {list(p.replicas)}, in sync {list(p.isr)})"
                          for topic, p in lagging[:SHOWN_PARTITIONS])
        more = f" and {len(lagging) - SHOWN_PARTITIONS} more" if len(lagging) > SHOWN_PARTITIONS else ""
        return [Problem(UNDER_REPLICATED, f"under-replicated partitions: {named}{more}")]
    return []


def node_problems(mode: str, node_id: int, broker: str = "", controller: str = "", timeout: float = 5.0,
                  client: Mapping[str, str] | None = None, controller_client: Mapping[str, str] | None = None,
                  connect: Connect = KafkaConnection, quorum: Sequence[str] = ()) -> list[Problem]:
    """What keeps the node from being healthy (empty: healthy). `broker`, `controller`: the node's own
    listeners ("" where it has none); `quorum`: every controller's listener; `client`,
    `controller_client`: their security settings as librdkafka names them (security.protocol,
    ssl.ca.location, sasl.mechanism, sasl.username, sasl.password)."""
    if controller:
        problems = controller_problems(node_id, controller, timeout, controller_client, connect, quorum)
        if problems:
            return problems
    if broker:
        return broker_problems(mode, node_id, broker, timeout, client, connect)
    return []
