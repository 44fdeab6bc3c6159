"""Where a fault strikes: the targets a scenario names (a broker, the leader, a follower or any
replica of a partition, the controller, the transaction coordinator, a KRaft controller),
resolved against the cluster as it is at the moment the fault is due (`Situation`) to the hosts
its playbook acts on (`Resolved`)."""

from __future__ import annotations

import dataclasses
import random
from typing import Annotated

from pydantic import Field, model_validator

from benchmarks.hosts.inventory import ClusterInventory
from benchmarks.kafka.cluster import ClusterStatus, PartitionState
from benchmarks.spec.strict import Strict


class FaultError(RuntimeError):
    """A fault cannot be resolved, injected or reverted; the message says why."""


@dataclasses.dataclass(frozen=True)
class Situation:
    """What a fault resolves its target against, at the moment it is due."""

    inventory: ClusterInventory
    status: ClusterStatus | None  # None for kinds that do not read the cluster
    topic: str
    rng: random.Random
    exclude: frozenset[int] = frozenset()  # brokers already under a fault: not picked as a follower or at random
    transactional_id: str | None = None  # a transactional run's first producer's (its coordinator is a target)


@dataclasses.dataclass(frozen=True)
class Resolved:
    hosts: tuple[str, ...]  # inventory hosts the playbook is limited to
    broker_id: int | None
    reason: str  # how the target was chosen ("broker 1", "leader of t-0: broker 2", ...)


def _partition(status: ClusterStatus | None, topic: str, partition: int) -> PartitionState | None:
    """The partition as `status` shows it (None: not there, or no status)."""
    return next((p for p in (status.topic(topic) if status else []) if p.partition == partition), None)


def _leader(s: Situation, partition: int) -> int | None:
    part = _partition(s.status, s.topic, partition)
    return part.leader if part else None


def _live_replicas(s: Situation, partition: int) -> list[int]:
    """The partition's replicas, in their order, on live brokers not already under a fault."""
    part = _partition(s.status, s.topic, partition)
    live = {b.broker_id for b in s.status.brokers if b.alive} if s.status else set()
    return [r for r in part.replicas if r in live and r not in s.exclude] if part else []


TRANSACTION_STATE = "__transaction_state"


def _java_hash(text: str) -> int:
    """Java's String.hashCode, as the broker computes it for a transactional.id."""
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():  # UTF-16 code units, as Java strings hold them
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h  # a Java int


def _transaction_coordinator(status: ClusterStatus | None, transactional_id: str | None) -> tuple[int, str]:
    """(broker id, reason): the leader of the __transaction_state partition `transactional_id` maps to
    (the broker's partitionFor: the absolute value of the id's hash, modulo the partitions)."""
    if transactional_id is None:
        raise FaultError("target transaction_coordinator: the run has no transactional producer")
    state = status.topic(TRANSACTION_STATE) if status else []
    if not state:
        raise FaultError(f"{TRANSACTION_STATE} is not in the cluster's metadata (no transaction yet)")
    h = _java_hash(transactional_id)
    number = (0 if h == -(1 << 31) else abs(h)) % len(state)  # Kafka's Utils.abs
    part = next(p for p in state if p.partition == number)
    if part.leader is None:
        raise FaultError(f"{TRANSACTION_STATE}-{number} (the coordinator of {transactional_id}) has no leader")
    return part.leader, f"transaction coordinator of {transactional_id} ({TRANSACTION_STATE}-{number}): broker {part.leader}"


class FaultTarget(Strict):
    """Exactly one of: a broker id, the leader, a follower or any replica of a partition, the
    controller, or random."""

    broker: Annotated[int, Field(ge=0)] | None = None
    leader_of: Annotated[int, Field(ge=0)] | None = None  # partition of the workload's topic
    follower_of: Annotated[int, Field(ge=0)] | None = None  # a live replica of that partition that does not lead it
    replica_of: Annotated[int, Field(ge=0)] | None = None  # a live replica not already under a fault, its leader first
    controller: bool = False
    random: bool = False
    seed: int | None = None  # for random; recorded in the run either way
    # The transaction coordinator of the run's first producer: the broker leading the partition of
    # __transaction_state its transactional.id hashes to (a run with client.transactions only).
    transaction_coordinator: bool = False

    @model_validator(mode="after")
    def _exactly_one(self) -> FaultTarget:
        chosen = [self.broker is not None, self.leader_of is not None, self.follower_of is not None,
                  self.replica_of is not None, self.controller, self.random, self.transaction_coordinator]
        if sum(chosen) != 1:
            raise ValueError("set exactly one of broker, leader_of, follower_of, replica_of, controller: true, "
                             "random: true, transaction_coordinator: true")
        return self

    @property
    def words(self) -> str:
        return (f"broker {self.broker}" if self.broker is not None else
                f"leader of {self.leader_of}" if self.leader_of is not None else
                f"a follower of {self.follower_of}" if self.follower_of is not None else
                f"a replica of {self.replica_of}" if self.replica_of is not None else
                "controller" if self.controller else
                "transaction coordinator" if self.transaction_coordinator else "random broker")

    @property
    def names_role(self) -> bool:
        """Whether the target is a role a broker holds for a while (the leader of a partition, the
        controller, the transaction coordinator), not a broker chosen by id, as a follower or a
        replica, or at random."""
        return self.leader_of is not None or self.controller or self.transaction_coordinator

    def moved(self, s: Situation, broker_id: int) -> str | None:
        """Why `broker_id`, resolved as this target, no longer held the role it was chosen for on the
        cluster as `s.status` shows it (another broker leads the partition, is the controller or the
        transaction coordinator); None when it still did, when the target names no role (a broker,
        a follower, random), or when the role has no holder to tell."""
        status = s.status
        if status is None:
            return None
        if self.leader_of is not None:
            led = _partition(status, s.topic, self.leader_of)
            role, holder = f"leader of {s.topic}-{self.leader_of}", led.leader if led else None
        elif self.controller:
            role, holder = "controller", status.controller_id
        elif self.transaction_coordinator:
            try:
                holder, _ = _transaction_coordinator(status, s.transactional_id)
            except FaultError:
                return None
            role = f"transaction coordinator of {s.transactional_id}"
        else:
            return None
        return None if holder is None or holder == broker_id else f"the {role} was broker {holder}, not broker {broker_id}"

    def resolve(self, s: Situation) -> Resolved:
        """The broker this target names on the cluster as `s.status` shows it."""
        status, topic = s.status, s.topic
        if self.broker is not None:
            broker, reason = s.inventory.broker(self.broker), f"broker {self.broker}"
        elif self.controller:
            if status is None or status.controller_id is None:
                raise FaultError("the cluster reports no controller to target")
            broker, reason = s.inventory.broker(status.controller_id), f"controller: broker {status.controller_id}"
        elif self.transaction_coordinator:
            broker_id, reason = _transaction_coordinator(status, s.transactional_id)
            broker = s.inventory.broker(broker_id)
        elif self.leader_of is not None:
            led = _partition(status, topic, self.leader_of)
            if led is None or led.leader is None:
                raise FaultError(f"partition {topic}-{self.leader_of} has no leader to target")
            broker, reason = s.inventory.broker(led.leader), f"leader of {topic}-{self.leader_of}: broker {led.leader}"
        elif self.follower_of is not None:
            leader = _leader(s, self.follower_of)
            followers = [r for r in _live_replicas(s, self.follower_of) if r != leader]
            if not followers:
                raise FaultError(f"partition {topic}-{self.follower_of} has no live follower to target")
            broker = s.inventory.broker(followers[0])
            reason = f"follower of {topic}-{self.follower_of}: broker {followers[0]}"
        elif self.replica_of is not None:
            leader = _leader(s, self.replica_of)
            replicas = sorted(_live_replicas(s, self.replica_of), key=lambda r: r != leader)  # the leader first
            if not replicas:
                raise FaultError(f"partition {topic}-{self.replica_of} has no live replica left that is not "
                                 "already under a fault")
            broker = s.inventory.broker(replicas[0])
            role = "leader" if replicas[0] == leader else "follower"
            reason = f"replica of {topic}-{self.replica_of} ({role}): broker {replicas[0]}"
        else:
            alive = [b for b in s.inventory.brokers if b.broker_id not in s.exclude and (status is None or any(
                st.broker_id == b.broker_id and st.alive for st in status.brokers))]
            if not alive:
                raise FaultError("no live broker to target")
            broker = s.rng.choice(alive)
            reason = f"random: broker {broker.broker_id}"
        if any(c.name == broker.name for c in s.inventory.controllers):
            reason += f" (a combined node: controller {broker.broker_id} goes down with it)"
        return Resolved((broker.name,), broker.broker_id, reason)


class ControllerTarget(Strict):
    """Exactly one of: the active controller (the quorum's leader), a voter that follows it, or a node id."""

    active: bool = False
    follower: bool = False
    node: Annotated[int, Field(ge=0)] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ControllerTarget:
        if sum([self.active, self.follower, self.node is not None]) != 1:
            raise ValueError("set exactly one of active: true, follower: true, node")
        return self

    @property
    def words(self) -> str:
        return "active controller" if self.active else "a follower voter" if self.follower else f"controller {self.node}"

    def resolve(self, s: Situation) -> Resolved:
        quorum = s.status.quorum if s.status else None
        if self.node is not None:
            node, reason = self.node, f"controller {self.node}"
        elif quorum is None or quorum.leader_id is None:
            raise FaultError("the controller quorum has no leader to tell the active controller from its followers")
        elif self.active:
            node, reason = quorum.leader_id, f"active controller: {quorum.leader_id} (epoch {quorum.leader_epoch})"
        else:
            followers = [c.node_id for c in quorum.controllers if c.voter and c.node_id != quorum.leader_id
                         and c.node_id not in s.exclude]
            if not followers:
                raise FaultError("the quorum has no follower voter to target")
            node, reason = followers[0], f"follower voter: {followers[0]} (leader {quorum.leader_id})"
        controller = s.inventory.controller(node)
        if controller.combined:
            reason += f" (a combined node: broker {node} goes down with it)"
        return Resolved((controller.name,), node if controller.combined else None, reason)
