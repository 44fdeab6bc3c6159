"""Fault kinds: one spec class each (Trogdor's shape), keyed on `kind`.

A spec holds the fault's fields as a scenario states them, names the playbook under
playbooks/faults/ that injects and reverts it, says how it picks its target on the cluster at
the moment it is due (`resolve`), which options its playbook takes (`extravars`) and which
targets an inventory cannot carry out (`inventory_errors`). A new kind is one class here, in
the `Fault` union, and one playbook: the scenario, the runner, the journal and `heal` read
everything else from the spec.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchmarks.cluster import ClusterStatus, PartitionState
from benchmarks.inventory import ClusterInventory


class Strict(BaseModel):
    """A model of the scenario file: unknown keys are errors, values are frozen once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


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
    """Exactly one of: a broker id, the leader or a follower of a partition, the controller, or random."""

    broker: Annotated[int, Field(ge=0)] | None = None
    leader_of: Annotated[int, Field(ge=0)] | None = None  # partition of the workload's topic
    follower_of: Annotated[int, Field(ge=0)] | None = None  # a live replica of that partition that does not lead it
    controller: bool = False
    random: bool = False
    seed: int | None = None  # for random; recorded in the run either way
    # The transaction coordinator of the run's first producer: the broker leading the partition of
    # __transaction_state its transactional.id hashes to (a run with client.transactions only).
    transaction_coordinator: bool = False

    @model_validator(mode="after")
    def _exactly_one(self) -> FaultTarget:
        chosen = [self.broker is not None, self.leader_of is not None, self.follower_of is not None,
                  self.controller, self.random, self.transaction_coordinator]
        if sum(chosen) != 1:
            raise ValueError("set exactly one of broker, leader_of, follower_of, controller: true, random: true, "
                             "transaction_coordinator: true")
        return self

    @property
    def words(self) -> str:
        return (f"broker {self.broker}" if self.broker is not None else
                f"leader of {self.leader_of}" if self.leader_of is not None else
                f"a follower of {self.follower_of}" if self.follower_of is not None else
                "controller" if self.controller else
                "transaction coordinator" if self.transaction_coordinator else "random broker")

    @property
    def names_role(self) -> bool:
        """Whether the target is a role a broker holds for a while (the leader of a partition, the
        controller, the transaction coordinator), not a broker chosen by id, as a follower or at random."""
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
            part = _partition(status, topic, self.follower_of)
            live = {b.broker_id for b in status.brokers if b.alive} if status else set()
            followers = [r for r in part.replicas if r != part.leader and r in live and r not in s.exclude] if part else []
            if not followers:
                raise FaultError(f"partition {topic}-{self.follower_of} has no live follower to target")
            broker = s.inventory.broker(followers[0])
            reason = f"follower of {topic}-{self.follower_of}: broker {followers[0]}"
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


class FaultSpec(Strict):
    """What every kind has: when it is injected and healed, in seconds into the measured phase.
    A fault with `every_s` recurs (a nemesis): injected at `at_s` (default: `every_s`) and every
    `every_s` seconds after, until `until_s` (default: the end of the workload's duration), each
    injection healed `duration_s` after it acted and resolving its target anew. With `count`
    instead of `until_s`, that many are due, and each one skipped, or that missed its target (a
    leader that moved before the kill acted), is made up for by one more at the end of the schedule
    (at most `count` more), the load going on past the workload's duration until they have acted."""

    at_s: Annotated[float, Field(ge=0)] | None = None  # required for a one-off fault
    heal_at_s: Annotated[float, Field(ge=0)] | None = None  # None: healed at the end of the run
    every_s: Annotated[float, Field(gt=0)] | None = None
    duration_s: Annotated[float, Field(gt=0)] | None = None
    until_s: Annotated[float, Field(gt=0)] | None = None
    # How many injections must act on their target: each one skipped (a cluster not recovered in time,
    # no target, max_brokers_down) or that missed (`moved`) is made up for at the end of the schedule.
    # None: those due until until_s.
    count: Annotated[int, Field(ge=1)] | None = None
    # Before injecting, wait up to this long for a recovered cluster (every node up, every partition
    # led with its full ISR, a quorum leader): each injection then starts from the same state, and
    # one whose cluster does not recover in time is skipped with what was still wrong. None: on time.
    wait_recovered_s: Annotated[float, Field(gt=0)] | None = None

    kind: str  # each kind's class narrows it to its own name
    playbook: ClassVar[str]  # under playbooks/: inject and revert by fault_phase
    reads_cluster: ClassVar[bool] = True  # resolving the target needs the cluster's state
    # ... and, on KRaft, the controller quorum's: who leads it, who follows. Not read otherwise: a
    # paused node, or a quorum without a majority, holds a request for it until it times out.
    reads_quorum: ClassVar[bool] = False
    modes: ClassVar[frozenset[str]] = frozenset({"kraft", "zookeeper"})  # metadata modes the kind applies to
    needs_own_addresses: ClassVar[bool] = False  # brokers on hosts with addresses of their own
    needs_netem: ClassVar[bool] = False  # the hosts' kernel must have sch_netem (tc netem)
    needs_data_disk: ClassVar[bool] = False  # brokers whose data is on a filesystem of its own
    heal_order: ClassVar[int] = 1  # `heal` reverts outstanding faults of lower order first
    # The target keeps what it was chosen for (leading a partition, being the controller) until the
    # cluster notices the fault, seconds after it acted (a session expires): the cluster read just
    # after the act tells whether that role had moved before it (`moved`). Not so for a controlled
    # shutdown, which hands leadership over at once.
    roles_outlive_act: ClassVar[bool] = False

    @model_validator(mode="after")
    def _when(self) -> FaultSpec:
        if self.every_s is None:
            recurring = [f for f in ("duration_s", "until_s", "count") if getattr(self, f) is not None]
            if recurring:
                raise ValueError(f"{' and '.join(recurring)} belong to a recurring fault: set every_s too, or heal "
                                 "a one-off fault with heal_at_s")
            if self.at_s is None:
                raise ValueError("at_s is required (or every_s, for a recurring fault)")
        else:
            if self.heal_at_s is not None:
                raise ValueError("heal_at_s is for a one-off fault: a recurring fault (every_s) heals each "
                                 "injection duration_s after it acted")
            if self.duration_s is None:
                raise ValueError("duration_s is required with every_s: how long each injection lasts")
            if self.count is not None and self.until_s is not None:
                raise ValueError("count and until_s both end a recurring fault: give one (count: that many "
                                 "injections act, the load going on as long as they need)")
            if self.until_s is not None and self.until_s <= self.first_s:
                raise ValueError(f"until_s ({self.until_s:g}) must come after the first injection ({self.first_s:g} s)")
        if self.heal_at_s is not None and self.heal_at_s <= self.first_s:
            raise ValueError(f"heal_at_s ({self.heal_at_s}) must come after at_s ({self.at_s})")
        return self

    @property
    def first_s(self) -> float:
        """When the fault is first injected."""
        return self.at_s if self.at_s is not None else self.every_s or 0.0

    def occurrences(self, end_s: float) -> list[FaultSpec]:
        """The fault's injections as one-off faults: itself, or a recurring fault's every
        injection from first_s until until_s (or `end_s`, the workload's end), or its `count`
        first ones, each healed duration_s after it."""
        if self.every_s is None or self.duration_s is None:
            return [self]
        until, at = min(self.until_s or end_s, end_s), self.first_s
        out: list[FaultSpec] = []
        while len(out) < self.count if self.count is not None else at < until:
            out.append(self.once(at))
            at = round(at + self.every_s, 9)
        return out

    def once(self, at_s: float) -> FaultSpec:
        """A recurring fault's injection at `at_s`, as a one-off fault healed duration_s after it."""
        return self.model_copy(update={"at_s": at_s, "heal_at_s": at_s + (self.duration_s or 0.0), "every_s": None,
                                       "duration_s": None, "until_s": None, "count": None})

    @property
    def target_words(self) -> str:
        """The target in words ("leader of 0", "broker 1; ports 9092"); empty for a fault of every server."""
        return ""

    @property
    def label(self) -> str:
        """The fault in words, for people: "broker-kill (leader of 0) at 6 s, healed at 12 s",
        "broker-kill (random broker) every 12 s from 12 s, 5 s each"."""
        target = self.target_words
        what = f"{self.kind}{f' ({target})' if target else ''}"
        if self.every_s is not None:
            until = f" until {self.until_s:g} s" if self.until_s is not None else ""
            count = f", {self.count} to act" if self.count is not None else ""
            return f"{what} every {self.every_s:g} s from {self.first_s:g} s{until}, {self.duration_s:g} s each{count}"
        healed = f", healed at {self.heal_at_s:g} s" if self.heal_at_s is not None else ""
        return f"{what} at {self.first_s:g} s{healed}"

    def schedule_entry(self) -> dict[str, Any]:
        """The fault as data, as the run records it (summary.json's fault_schedule)."""
        return {"kind": self.kind, "target": self.target_words, "at_s": self.first_s, "heal_at_s": self.heal_at_s,
                "every_s": self.every_s, "duration_s": self.duration_s, "until_s": self.until_s, "count": self.count}

    def resolve(self, situation: Situation) -> Resolved:
        raise NotImplementedError

    @property
    def can_miss(self) -> bool:
        """Whether `moved` can tell that the fault missed: its target is a role that outlives the act.
        The scheduler reads the cluster after the act only for such faults."""
        return False

    def moved(self, situation: Situation, resolved: Resolved) -> str | None:
        """Why the fault, as it acted on `resolved`, missed what its target aims at: the role the
        broker was chosen for held by another one on the cluster read just after the act (None: it
        did not, or the kind cannot tell)."""
        return None

    def extravars(self) -> dict[str, Any]:
        """The fault's options for its playbook (journaled with it, so `heal` reverts the same)."""
        return {}

    def inventory_errors(self, broker_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        """(field, message) for each target the inventory has no server for."""
        return []

    def controller_errors(self, controller_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        """(field, message) for each target the inventory's KRaft controllers (their node ids; none
        on a ZooKeeper cluster) cannot carry out."""
        return []

    def workload_errors(self, partitions: int) -> list[tuple[str, str]]:
        """(field, message) for each target the workload's topic has no partition for."""
        return []


@dataclasses.dataclass(frozen=True)
class Injection:
    """One injection of a run's schedule: a one-off fault, or one of a recurring fault's."""

    fault: FaultSpec  # one-off: at_s and heal_at_s say when
    name: str  # the scenario's entry: "faults[0]", a recurring fault's "faults[0] #3"
    every_s: float | None = None  # a recurring fault's period: the next injection is due this much later
    entry: str = ""  # the scenario's entry it is of: "faults[0]"
    counted: FaultSpec | None = None  # the recurring fault with a `count` it is one of: a skipped one is made up for

    @property
    def recurring(self) -> bool:
        """One of a recurring fault's: skipped (and recorded) when its target cannot be resolved."""
        return self.every_s is not None


def _not_in(field: str, value: int | None, allowed: tuple[int, ...], what: str) -> list[tuple[str, str]]:
    """The (field, message) of a target id the inventory has no such server for."""
    if value is None or value in allowed:
        return []
    return [(field, f"{value} is not a {what} of the inventory; allowed: " + ", ".join(map(str, allowed)))]


class OfEveryServer(FaultSpec):
    """A fault of a whole group of servers, chosen by the kind: it takes no target."""

    no_target_reason: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _no_target(cls, data: Any) -> Any:
        if isinstance(data, dict) and "target" in data:
            raise ValueError(f"{data.get('kind')} takes no target: {cls.no_target_reason}")
        return data


class OnABroker(FaultSpec):
    """A fault of one broker (or its host), chosen by `target` when it is due."""

    target: FaultTarget = FaultTarget(random=True)

    @property
    def target_words(self) -> str:
        return self.target.words

    def resolve(self, situation: Situation) -> Resolved:
        return self.target.resolve(situation)

    @property
    def can_miss(self) -> bool:
        return self.roles_outlive_act and self.target.names_role

    def moved(self, situation: Situation, resolved: Resolved) -> str | None:
        if not self.can_miss or resolved.broker_id is None:
            return None
        return self.target.moved(situation, resolved.broker_id)

    def workload_errors(self, partitions: int) -> list[tuple[str, str]]:
        return [(f"target.{field}", f"({partition}) is not a partition of a {partitions}-partition topic")
                for field, partition in (("leader_of", self.target.leader_of), ("follower_of", self.target.follower_of))
                if partition is not None and partition >= partitions]

    def controller_errors(self, controller_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        if self.target.controller and controller_ids:
            return [("target.controller", "in KRaft the active controller is a controller, not a broker: use "
                     "controller-kill, controller-stop or controller-pause with target {active: true}")]
        return []

    def inventory_errors(self, broker_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        return _not_in("target.broker", self.target.broker, broker_ids, "broker")


class BrokerKill(OnABroker):
    """SIGKILL: no controlled shutdown, the broker's session must expire."""

    kind: Literal["broker-kill"]
    playbook = "faults/broker-kill.yml"
    roles_outlive_act = True


class BrokerStop(OnABroker):
    """Controlled shutdown (SIGTERM): leadership moves away first."""

    kind: Literal["broker-stop"]
    playbook = "faults/broker-stop.yml"


class BrokerPause(OnABroker):
    """SIGSTOP: the process freezes, keeps its port and its registration until the session expires."""

    kind: Literal["broker-pause"]
    playbook = "faults/broker-pause.yml"
    roles_outlive_act = True


class BrokerRestart(OnABroker):
    """A controlled shutdown and a start."""

    kind: Literal["broker-restart"]
    playbook = "faults/broker-restart.yml"


class ZooKeeperStop(OfEveryServer):
    """Every ZooKeeper server stopped: the brokers keep their leaders, nothing can change them."""

    kind: Literal["zookeeper-stop"]
    playbook = "faults/zookeeper-stop.yml"
    reads_cluster = False
    modes = frozenset({"zookeeper"})
    heal_order = 0  # healed before broker faults: brokers cannot register without ZooKeeper
    no_target_reason = "it stops every ZooKeeper server"

    def resolve(self, situation: Situation) -> Resolved:
        return Resolved(tuple(z.name for z in situation.inventory.zookeepers), None, "every ZooKeeper server")


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


class OnAController(FaultSpec):
    """A fault of one KRaft controller process (on a combined node, the broker's process too)."""

    target: ControllerTarget = ControllerTarget(active=True)
    modes = frozenset({"kraft"})
    reads_quorum = True
    heal_order = 0  # controllers come back before brokers: a broker cannot register without a quorum

    @property
    def target_words(self) -> str:
        return self.target.words

    def resolve(self, situation: Situation) -> Resolved:
        return self.target.resolve(situation)

    def controller_errors(self, controller_ids: tuple[int, ...]) -> list[tuple[str, str]]:
        return _not_in("target.node", self.target.node, controller_ids, "controller")


class ControllerKill(OnAController):
    """SIGKILL a controller: the quorum elects another leader if it was the active one."""

    kind: Literal["controller-kill"]
    playbook = "faults/controller-kill.yml"


class ControllerStop(OnAController):
    """A controller shut down cleanly (SIGTERM): an active controller resigns first."""

    kind: Literal["controller-stop"]
    playbook = "faults/controller-stop.yml"


class ControllerPause(OnAController):
    """SIGSTOP a controller: frozen, its connections open, until the quorum times it out."""

    kind: Literal["controller-pause"]
    playbook = "faults/controller-pause.yml"


class QuorumLoss(OfEveryServer):
    """A majority of the controllers killed (the active one first, then followers by node id):
    no leader can be elected, the metadata is frozen. What producers can still do is measured."""

    kind: Literal["quorum-loss"]
    playbook = "faults/quorum-loss.yml"
    modes = frozenset({"kraft"})
    reads_quorum = True
    heal_order = 0
    no_target_reason = "it kills a majority of the controllers"

    def resolve(self, situation: Situation) -> Resolved:
        controllers = situation.inventory.controllers
        quorum = situation.status.quorum if situation.status else None
        leader = quorum.leader_id if quorum else None
        order = sorted(controllers, key=lambda c: (c.node_id != leader, c.node_id))
        victims = order[:len(controllers) // 2 + 1]
        combined = [c.node_id for c in victims if c.combined]
        reason = (f"{len(victims)} of {len(controllers)} controllers: " + ", ".join(str(c.node_id) for c in victims)
                  + (f" (leader {leader})" if leader is not None else "")
                  + (f"; combined nodes: brokers {', '.join(map(str, combined))} go down with them" if combined else ""))
        return Resolved(tuple(c.name for c in victims), None, reason)


class HostIsolate(OnABroker):
    """The target's host cut off every other cluster host and the clients (nftables)."""

    kind: Literal["host-isolate"]
    playbook = "faults/host-isolate.yml"
    needs_own_addresses = True


class HostPartition(OnABroker):
    """The target's host cut off the other cluster hosts, not the clients; `ports` limits the
    cut to those TCP ports (e.g. [9092]: Kafka's traffic, while ZooKeeper's keeps flowing)."""

    kind: Literal["host-partition"]
    playbook = "faults/host-partition.yml"
    needs_own_addresses = True
    ports: list[Annotated[int, Field(ge=1, le=65535)]] = []

    @property
    def target_words(self) -> str:
        return self.target.words + (f"; ports {', '.join(map(str, self.ports))}" if self.ports else "")

    def extravars(self) -> dict[str, Any]:
        return {"fault_ports": list(self.ports)} if self.ports else {}


class PacketLoss(OnABroker):
    """A lossy network at the target's host: `percent` of the packets between it and every other
    cluster host and the clients dropped at random, both ways (nftables; 0.01% steps)."""

    kind: Literal["packet-loss"]
    playbook = "faults/packet-loss.yml"
    needs_own_addresses = True
    percent: Annotated[float, Field(gt=0, lt=100, multiple_of=0.01)]

    @property
    def target_words(self) -> str:
        return f"{self.target.words}; {self.percent:g}% of packets"

    def extravars(self) -> dict[str, Any]:
        return {"fault_loss_percent": self.percent}


class NetworkDelay(OnABroker):
    """A slow network at the target's host: every packet it sends waits `delay_ms` (± `jitter_ms`),
    with tc netem on the interface that reaches the other cluster hosts. Needs a kernel with
    sch_netem: real hosts and Vagrant VMs; not the lab, whose hosts share a kernel without it."""

    kind: Literal["network-delay"]
    playbook = "faults/network-delay.yml"
    needs_own_addresses = True
    needs_netem = True
    delay_ms: Annotated[int, Field(ge=1, le=60_000)]
    jitter_ms: Annotated[int, Field(ge=0, le=60_000)] = 0

    @property
    def target_words(self) -> str:
        return f"{self.target.words}; +{self.delay_ms} ms" + (f" ± {self.jitter_ms} ms" if self.jitter_ms else "")

    def extravars(self) -> dict[str, Any]:
        return {"fault_delay_ms": self.delay_ms, "fault_jitter_ms": self.jitter_ms}


class DiskFull(OnABroker):
    """The target's data filesystem filled up (a file as large as its free space), so the broker's
    next write fails with ENOSPC; healed by deleting the file and starting the broker again if it
    stopped. Only on brokers whose inventory names a filesystem that holds nothing but their data
    (kafka_bench_fault_disk_mount: the lab's hosts each have one); never this machine's own disk."""

    kind: Literal["disk-full"]
    playbook = "faults/disk-full.yml"
    needs_data_disk = True


# The scenario's `faults` entries: a union keyed on `kind`, in the order users see the kinds.
Fault = Annotated[BrokerKill | BrokerStop | BrokerPause | BrokerRestart | ZooKeeperStop | ControllerKill
                  | ControllerStop | ControllerPause | QuorumLoss | HostIsolate | HostPartition | PacketLoss
                  | NetworkDelay | DiskFull,
                  Field(discriminator="kind")]
SPECS: tuple[type[FaultSpec], ...] = get_args(get_args(Fault)[0])
KINDS: dict[str, type[FaultSpec]] = {get_args(spec.model_fields["kind"].annotation)[0]: spec for spec in SPECS}


def spec_of(kind: str) -> type[FaultSpec]:
    """The spec class of a kind (a journal line names its kind): FaultError for one there is none of."""
    try:
        return KINDS[kind]
    except KeyError:
        raise FaultError(f"unknown fault {kind!r}; known: {', '.join(KINDS)}") from None
