"""What the cluster looks like now: brokers, controller, and leader / replicas / ISR of every
partition (what `kafka-topics --describe` shows), plus the ZooKeeper servers' modes."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket
import subprocess
from collections.abc import Callable
from typing import Any

from benchmarks.inventory import ClusterInventory


class ClusterUnreachable(RuntimeError):
    """No broker answered a metadata request."""


@dataclasses.dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

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
    alive: bool  # registered with the cluster (metadata)
    listening: bool | None = None  # its port accepts connections; None: not checked
    process: str | None = None  # running, paused or stopped, from its control script; None: not checked here

    def problems(self) -> list[str]:
        who = f"broker {self.broker_id} ({self.name}, {self.host}:{self.port})"
        out = [f"{who} is not registered"] if not self.alive else []
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

    def problems(self) -> list[str]:
        out = [f"ZooKeeper {self.name} ({self.endpoint}) does not answer"] if not self.mode else []
        if self.process in ("stopped", "paused"):
            out.append(f"ZooKeeper {self.name} ({self.endpoint}): its process is {self.process}")
        return out


@dataclasses.dataclass(frozen=True)
class ClusterStatus:
    cluster_id: str | None
    controller_id: int | None
    brokers: tuple[BrokerState, ...]
    partitions: tuple[PartitionState, ...]
    zookeepers: tuple[ZooKeeperState, ...]

    @property
    def healthy(self) -> bool:
        return not self.problems()

    def topic(self, name: str) -> list[PartitionState]:
        return sorted((p for p in self.partitions if p.topic == name), key=lambda p: p.partition)

    def problems(self) -> list[str]:
        out = [problem for b in self.brokers for problem in b.problems()]
        out += [problem for z in self.zookeepers for problem in z.problems()]
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
            "partitions": [
                {**dataclasses.asdict(p), "replicas": list(p.replicas), "isr": list(p.isr),
                 "offline": p.offline, "under_replicated": p.under_replicated}
                for p in sorted(self.partitions, key=lambda p: (p.topic, p.partition))
            ],
        }


def zookeeper_mode(host: str, port: int, timeout: float = 2.0) -> str | None:
    """The server's mode from the `srvr` four-letter word, None when it does not answer."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"srvr")
            sock.shutdown(socket.SHUT_WR)
            data = b"".join(iter(lambda: sock.recv(4096), b""))
    except OSError:
        return None
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("Mode: "):
            return line.split(": ", 1)[1].strip()
    return None


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections there."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


PROCESS_STATES = {0: "running", 4: "paused", 3: "stopped"}  # the control script's `status` exit codes


def local_process_state(host: str, ctl: str) -> str | None:
    """The service's process state from its control script, for services on this machine
    (a loopback address whose script exists here); None where it cannot be seen from here."""
    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if not local or not os.access(ctl, os.X_OK):
        return None
    try:
        done = subprocess.run([ctl, "status"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return PROCESS_STATES.get(done.returncode)


def admin_client(bootstrap: str, **extra: Any):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000,
                        "log_level": 0, "logger": silent_logger(), **extra})


def silent_logger(name: str = "kafka_bench.librdkafka"):
    """A logger for librdkafka that prints nothing (errors that matter are in the ledgers)."""
    import logging

    logger = logging.getLogger(name)
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def describe(inventory: ClusterInventory, timeout: float = 10.0, include_internal: bool = False,
             admin_factory: Callable[[str], Any] = admin_client,
             zk_probe: Callable[[str, int], str | None] = zookeeper_mode, services: bool = True,
             port_probe: Callable[[str, int], bool] = port_open,
             process_probe: Callable[[str, str], str | None] = local_process_state) -> ClusterStatus:
    """Ask the cluster for its metadata; raise ClusterUnreachable when no broker answers.
    With `services`, each broker's port and each service's process (where this machine can
    see it) are checked too: a SIGKILLed broker stays registered until its session expires,
    and a paused one keeps its port."""
    from confluent_kafka import KafkaException

    admin = admin_factory(inventory.bootstrap_servers)
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterUnreachable(f"no broker of {inventory.bootstrap_servers} answered: {exc}") from exc
    registered = {b.id: b for b in metadata.brokers.values()}
    brokers = [BrokerState(b.broker_id, b.host, b.port, b.name, b.broker_id in registered,
                           port_probe(b.host, b.port) if services else None,
                           process_probe(b.host, b.ctl) if services else None) for b in inventory.brokers]
    known = {b.broker_id for b in inventory.brokers}
    brokers += [BrokerState(i, m.host, m.port, "(not in inventory)", True)
                for i, m in sorted(registered.items()) if i not in known]
    partitions = []
    for topic in metadata.topics.values():
        if topic.topic.startswith("__") and not include_internal:
            continue
        for p in topic.partitions.values():
            partitions.append(PartitionState(topic.topic, p.id, p.leader if p.leader >= 0 else None,
                                             tuple(p.replicas), tuple(p.isrs)))
    zookeepers = tuple(ZooKeeperState(z.name, f"{z.host}:{z.port}", zk_probe(z.host, z.port),
                                      process_probe(z.host, z.ctl) if services else None) for z in inventory.zookeepers)
    controller = metadata.controller_id if metadata.controller_id >= 0 else None
    return ClusterStatus(metadata.cluster_id, controller, tuple(brokers),
                         tuple(sorted(partitions, key=lambda p: (p.topic, p.partition))), zookeepers)
