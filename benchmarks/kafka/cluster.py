"""What the cluster looks like now: brokers, controller, and leader / replicas / ISR of every
partition (what `kafka-topics --describe` shows), plus the ZooKeeper servers' modes, or in
KRaft the controller quorum (active controller, epoch, each voter's lag), fenced brokers and
each partition's Eligible Leader Replicas."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from struct import error as struct_error
from typing import Any

from benchmarks.core import connection
from benchmarks.core.connection import Connection
from benchmarks.hosts.host_probe import local_process_state, port_open, zookeeper_mode
from benchmarks.hosts.inventory import Broker, ClusterInventory, ZooKeeperServer
from benchmarks.kafka import kafka_protocol


class ClusterUnreachable(RuntimeError):
    """No broker answered a metadata request."""


@dataclasses.dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None = None  # KRaft with ELR: replicas eligible to lead though out of the ISR
    last_known_elr: tuple[int, ...] | None = None  # the ELR members last seen before they became ineligible

    @property
    def offline(self) -> bool:
        return self.leader is None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclasses.dataclass(frozen=True)
class BrokerState:
    broker_id: int
    host: str
    port: int
    name: str
    alive: bool  # registered with the cluster (metadata) and, in KRaft, not fenced
    listening: bool | None = None  # its port accepts connections; None: not checked
    process: str | None = None  # running, paused or stopped, from its control script; None: not checked here
    fenced: bool = False  # KRaft: registered but fenced by the controller (no heartbeat, or catching up)

    @property
    def who(self) -> str:
        """How a problem names it."""
        return f"broker {self.broker_id} ({self.name}, {self.host}:{self.port})"

    def problems(self) -> list[str]:
        who = self.who
        out = [f"{who} is fenced" if self.fenced else f"{who} is not registered"] if not self.alive else []
        if self.process in ("stopped", "paused"):
            out.append(f"{who}: its process is {self.process}")
        if self.listening is False:
            out.append(f"{who}: nothing accepts connections on its port")
        return out


@dataclasses.dataclass(frozen=True)
class ZooKeeperState:
    name: str
    endpoint: str
    mode: str | None  # standalone, leader, follower; None when it does not answer
    process: str | None = None  # as BrokerState.process

    @property
    def who(self) -> str:
        """How a problem names it."""
        return f"ZooKeeper {self.name} ({self.endpoint})"

    def problems(self) -> list[str]:
        out = [f"{self.who} does not answer"] if not self.mode else []
        if self.process in ("stopped", "paused"):
            out.append(f"{self.who}: its process is {self.process}")
        return out


@dataclasses.dataclass(frozen=True)
class ControllerState:
    """A KRaft controller as the quorum sees it."""

    node_id: int
    name: str
    endpoint: str
    voter: bool  # one of the quorum's voters (else an observer, or unknown to the quorum)
    lag: int | None  # metadata records behind the quorum's high watermark; None: not known
    combined: bool = False
    process: str | None = None  # as BrokerState.process

    @property
    def who(self) -> str:
        """How a problem names it."""
        return f"controller {self.node_id} ({self.name}, {self.endpoint})"

    def problems(self, leader: int | None) -> list[str]:
        who = self.who
        out = []
        if leader is not None and not self.voter:
            out.append(f"{who} is not a voter of the quorum")
        if self.process in ("stopped", "paused") and not self.combined:
            out.append(f"{who}: its process is {self.process}")
        return out


@dataclasses.dataclass(frozen=True)
class QuorumState:
    leader_id: int | None
    leader_epoch: int
    high_watermark: int
    controllers: tuple[ControllerState, ...]
    error: str | None = None  # why the quorum could not be read


@dataclasses.dataclass(frozen=True)
class ClusterStatus:
    cluster_id: str | None
    controller_id: int | None  # the active controller (ZooKeeper: a broker; KRaft: the quorum's leader)
    brokers: tuple[BrokerState, ...]
    partitions: tuple[PartitionState, ...]
    zookeepers: tuple[ZooKeeperState, ...]
    quorum: QuorumState | None = None  # KRaft only

    @property
    def healthy(self) -> bool:
        return not self.problems()

    def topic(self, name: str) -> list[PartitionState]:
        return sorted((p for p in self.partitions if p.topic == name), key=lambda p: p.partition)

    def node_problems(self) -> list[str]:
        """What is wrong with the nodes themselves: processes, registrations, ports, ZooKeeper, the quorum."""
        out = [problem for b in self.brokers for problem in b.problems()]
        out += [problem for z in self.zookeepers for problem in z.problems()]
        if self.quorum is not None:
            if self.quorum.leader_id is None:
                out.append(f"the controller quorum has no leader{f': {self.quorum.error}' if self.quorum.error else ''}")
            out += [problem for c in self.quorum.controllers for problem in c.problems(self.quorum.leader_id)]
        return out

    def unseen_processes(self) -> list[str]:
        """The nodes of the inventory whose process could not be seen (by default only services on
        this machine are): only when there is none does a clean node_problems() mean every node runs."""
        nodes: list[BrokerState | ZooKeeperState | ControllerState] = [
            b for b in self.brokers if b.name != NOT_IN_INVENTORY]
        nodes += self.zookeepers
        nodes += self.quorum.controllers if self.quorum is not None else ()
        return [f"{node.who}: its process could not be seen" for node in nodes if node.process is None]

    def problems(self) -> list[str]:
        out = self.node_problems()
        out += [f"{p.topic}-{p.partition} has no leader" for p in self.partitions if p.offline]
        out += [f"{p.topic}-{p.partition} is under-replicated: ISR {list(p.isr)} of replicas {list(p.replicas)}"
                for p in self.partitions if p.under_replicated and not p.offline]
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "controller": self.controller_id,
            "healthy": self.healthy,
            "problems": self.problems(),
            "brokers": [dataclasses.asdict(b) for b in self.brokers],
            "zookeepers": [dataclasses.asdict(z) for z in self.zookeepers],
            "quorum": dataclasses.asdict(self.quorum) if self.quorum else None,
            "partitions": [
                {**dataclasses.asdict(p), "replicas": list(p.replicas), "isr": list(p.isr),
                 "elr": None if p.elr is None else list(p.elr),
                 "last_known_elr": None if p.last_known_elr is None else list(p.last_known_elr),
                 "offline": p.offline, "under_replicated": p.under_replicated}
                for p in sorted(self.partitions, key=lambda p: (p.topic, p.partition))
            ],
        }


NOT_IN_INVENTORY = "(not in inventory)"  # the name of a registered broker the inventory does not list
# How long a KRaft request (DescribeQuorum, DescribeCluster, ...) of a one-off read may wait for
# each node's answer before the next is asked: long enough for a fresh connection's TLS and SASL
# handshakes on loopback under load; short, since a paused node holds every request put to it.
KRAFT_TIMEOUT_S = 2.0


def discover(conn: Connection, timeout: float = 10.0,
             admin_factory: Callable[[Connection], Any] | None = None,
             features: Callable[[Connection], dict[str, int]] | None = None) -> ClusterInventory:
    """A cluster nothing here deployed, known only by its bootstrap address (run --bootstrap), as
    its brokers describe it: each broker by id at its advertised address, the metadata mode from
    the feature levels it finalized (metadata.version: KRaft; none: ZooKeeper), the release from
    metadata.version where there is one. No host of it can be acted on (no control script, no
    inventory): `given` carries the connection every client uses."""
    from confluent_kafka import KafkaException

    try:
        metadata = (admin_factory or admin_client)(conn).list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterUnreachable(f"no broker of {conn.bootstrap} answered ({conn.security}): {exc}") from exc
    try:
        finalized = (features or finalized_features)(conn)
    except (kafka_protocol.ProtocolError, OSError) as exc:
        raise ClusterUnreachable(f"no broker of {conn.bootstrap} told its feature levels: {exc}") from exc
    level = finalized.get("metadata.version")
    release = kafka_protocol.METADATA_VERSIONS.get(level, "").split("-")[0] if level else ""  # "" when unknown
    brokers = tuple(Broker(f"broker{b.id}", b.id, b.host, b.port, conf_dir="")
                    for b in sorted(metadata.brokers.values(), key=lambda b: b.id))
    return ClusterInventory(Path(f"--bootstrap {conn.bootstrap}"), brokers, (),
                            metadata_mode="kraft" if level else "zookeeper", kafka_version=release,
                            security=conn.security, given=conn)


def finalized_features(conn: Connection) -> dict[str, int]:
    """The feature levels the first answering broker reports as finalized (ProtocolError, OSError
    when none answers)."""
    with kafka_protocol.first_answering(conn.bootstrap.split(","), settings=dict(conn.properties)) as wire:
        wire.api_versions()
        return dict(wire.features)


def nodes_not_up(inventory: ClusterInventory, conn: Connection | None = None,
                 describe_fn: Callable[..., ClusterStatus] | None = None,
                 process_probe: Callable[[str, str], str | None] = local_process_state) -> list[str]:
    """Why not every node of the cluster is known to run and answer, empty when every node is: the
    cluster does not answer, a node has a problem, or a node's process cannot be seen by
    `process_probe` (by default only services on this machine are seen:
    host_probe.process_state_probe sees remote hosts' too)."""
    try:
        status = (describe_fn or describe)(inventory, conn=conn, process_probe=process_probe)
    except Exception as exc:  # whatever kept the cluster from being described, it is not known to be up
        return [f"the cluster could not be described: {exc}"]
    return status.unseen_processes() + status.node_problems()


def admin_client(conn: Connection, **extra: Any):
    from confluent_kafka.admin import AdminClient

    return AdminClient(conn.config({"socket.timeout.ms": 5000, "log_level": 0, "logger": connection.silent_logger(), **extra}))


def describe(inventory: ClusterInventory, timeout: float = 10.0, include_internal: bool = False,
             admin_factory: Callable[[Connection], Any] = admin_client,
             zk_probe: Callable[[ZooKeeperServer], str | None] = zookeeper_mode, services: bool = True,
             port_probe: Callable[[str, int], bool] = port_open,
             process_probe: Callable[[str, str], str | None] = local_process_state,
             conn: Connection | None = None, read_quorum: bool = True,
             ask_last: frozenset[int] = frozenset()) -> ClusterStatus:
    """Ask the cluster for its metadata; raise ClusterUnreachable when no broker answers.
    With `services`, each broker's port and each service's process (where this machine can
    see it) are checked too: a SIGKILLed broker stays registered until its session expires,
    and a paused one keeps its port. On KRaft, the quorum is read only with `read_quorum` (the
    status's `controller_id` and `quorum` are None without it): a paused node holds each request
    put to it until KRAFT_TIMEOUT_S, and a quorum without a majority holds those forwarded to it;
    the nodes of `ask_last` (known to be under a fault) are asked after the others."""
    from confluent_kafka import KafkaException

    conn = conn or inventory.connection()
    admin = admin_factory(conn)
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterUnreachable(f"no broker of {conn.bootstrap} answered ({conn.security}): {exc}") from exc
    registered = {b.id: b for b in metadata.brokers.values()}
    brokers = [BrokerState(b.broker_id, b.host, b.port, b.name, b.broker_id in registered,
                           port_probe(b.host, b.port) if services else None,
                           process_probe(b.host, b.ctl) if services else None) for b in inventory.brokers]
    known = {b.broker_id for b in inventory.brokers}
    brokers += [BrokerState(i, m.host, m.port, NOT_IN_INVENTORY, True)
                for i, m in sorted(registered.items()) if i not in known]
    partitions = []
    for topic in metadata.topics.values():
        if topic.topic.startswith("__") and not include_internal:
            continue
        for p in topic.partitions.values():
            partitions.append(PartitionState(topic.topic, p.id, p.leader if p.leader >= 0 else None,
                                             tuple(p.replicas), tuple(p.isrs)))
    zookeepers = tuple(ZooKeeperState(z.name, f"{z.host}:{z.port}", zk_probe(z),
                                      process_probe(z.host, z.ctl) if services else None) for z in inventory.zookeepers)
    controller = metadata.controller_id if metadata.controller_id >= 0 else None
    quorum = None
    if inventory.kraft:
        kraft = kraft_state(inventory, [p.topic for p in partitions], timeout=min(timeout, KRAFT_TIMEOUT_S),
                            quorum=read_quorum, ask_last=ask_last)
        quorum = kraft.quorum(inventory, process_probe if services else None) if read_quorum else None
        controller = kraft.leader
        brokers = [dataclasses.replace(b, alive=b.alive and b.broker_id not in kraft.fenced,
                                       fenced=b.broker_id in kraft.fenced) for b in brokers]
        partitions = [dataclasses.replace(p, elr=e.elr, last_known_elr=e.last_known_elr)
                      if (e := kraft.partitions.get((p.topic, p.partition))) else p for p in partitions]
    return ClusterStatus(metadata.cluster_id, controller, tuple(brokers),
                         tuple(sorted(partitions, key=lambda p: (p.topic, p.partition))), zookeepers, quorum)


@dataclasses.dataclass(frozen=True)
class KRaftState:
    """What the KRaft requests say, read once: the quorum, fenced brokers, partitions' ELR."""

    raw_quorum: kafka_protocol.Quorum | None
    fenced: frozenset[int]
    partitions: dict[tuple[str, int], kafka_protocol.PartitionInfo]
    features: dict[str, int]
    error: str | None = None

    @property
    def leader(self) -> int | None:
        return self.raw_quorum.leader_id if self.raw_quorum else None

    def quorum(self, inventory: ClusterInventory,
               process_probe: Callable[[str, str], str | None] | None = None) -> QuorumState:
        q = self.raw_quorum
        voters = {r.node_id: r for r in q.voters} if q else {}
        replicas = {**({r.node_id: r for r in q.observers} if q else {}), **voters}
        controllers = tuple(ControllerState(
            c.node_id, c.name, c.endpoint, c.node_id in voters,
            q.lag(replicas[c.node_id]) if q and c.node_id in replicas else None, c.combined,
            process_probe(c.host, c.ctl) if process_probe else None) for c in inventory.controllers)
        return QuorumState(q.leader_id if q else None, q.leader_epoch if q else -1, q.high_watermark if q else -1,
                           controllers, self.error)


class KRaftProbe:
    """Reads the KRaft state over kept connections (the timeline asks every 500 ms): the quorum
    through the brokers (which forward DescribeQuorum to the active controller), else through
    each controller (only the leader answers); fenced brokers and ELR from the brokers. A
    connection that fails is dropped and the next address tried; errors are kept as data (a
    quorum without a majority answers nothing)."""

    def __init__(self, brokers: list[str], controllers: list[str], timeout: float = 1.0,
                 settings: dict[str, str] | None = None) -> None:
        self.brokers, self.controllers, self.timeout = brokers, controllers, timeout
        # The brokers' client security settings; a secured quorum's controllers then stay
        # unreachable (their listener is the brokers', not the clients'): the brokers forward.
        self.settings = settings or {}
        self._conns: dict[str, kafka_protocol.KafkaConnection] = {}

    @classmethod
    def of(cls, inventory: ClusterInventory, timeout: float = 1.0, ask_last: frozenset[int] = frozenset()) -> KRaftProbe:
        """The probe of the inventory's nodes, asked in its order, those of `ask_last` (node ids:
        say, under a fault) after the others."""
        conn = inventory.connection()
        brokers = sorted(inventory.brokers, key=lambda b: b.broker_id in ask_last)
        controllers = [] if conn.secured else sorted(inventory.controllers, key=lambda c: c.node_id in ask_last)
        return cls([b.bootstrap for b in brokers], [c.endpoint for c in controllers], timeout, dict(conn.properties))

    def _ask(self, addresses: list[str], request: Callable[[kafka_protocol.KafkaConnection], Any],
             errors: list[str]) -> Any:
        for address in addresses:
            try:
                conn = self._conns.get(address) or kafka_protocol.KafkaConnection(address, self.timeout, settings=self.settings)
                self._conns[address] = conn
                return request(conn)
            except (kafka_protocol.ProtocolError, OSError, struct_error) as exc:
                errors.append(str(exc))
                dropped = self._conns.pop(address, None)
                if dropped:
                    dropped.close()
        return None

    def read(self, topics: list[str], quorum: bool = True) -> KRaftState:
        """The state; without `quorum`, only what the brokers answer themselves (fenced brokers,
        ELR, features), not the quorum they would forward to the active controller."""
        errors: list[str] = []
        asked = self._ask(self.brokers + self.controllers, lambda c: c.describe_quorum(), errors) if quorum else None
        quorum_errors = list(errors)

        def brokers_side(conn: kafka_protocol.KafkaConnection) -> tuple[Any, ...]:
            _cluster_id, brokers = conn.describe_cluster()
            parts = {(t, p.partition): p for t in sorted(set(topics)) for p in conn.describe_topic_partitions(t)}
            return frozenset(b.broker_id for b in brokers if b.fenced), parts, conn.features

        fenced, parts, features = self._ask(self.brokers, brokers_side, errors) or (frozenset(), {}, {})
        error = None if asked or not quorum else "; ".join(quorum_errors[-2:])
        return KRaftState(asked, fenced, parts, features, error)

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()


def kraft_state(inventory: ClusterInventory, topics: list[str], timeout: float = KRAFT_TIMEOUT_S,
                quorum: bool = True, ask_last: frozenset[int] = frozenset()) -> KRaftState:
    """The KRaft state, read once (`KRaftProbe.read`)."""
    probe = KRaftProbe.of(inventory, timeout, ask_last)
    try:
        return probe.read(topics, quorum)
    finally:
        probe.close()
