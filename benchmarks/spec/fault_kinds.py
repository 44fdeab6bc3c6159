"""Fault kinds: one spec class each (Trogdor's shape), keyed on `kind`.

A spec holds the fault's fields as a scenario states them, names the playbook under
playbooks/faults/ that injects and reverts it, says how it picks its target on the cluster at
the moment it is due (`resolve`), which options its playbook takes (`extravars`) and which
targets an inventory cannot carry out (`inventory_errors`). A new kind is one class here, in
the `Fault` union, and one playbook: the scenario, the runner, the journal and `heal` read
everything else from the spec.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import Field

from benchmarks.spec.fault_spec import FaultSpec, OfEveryServer, OnABroker, OnAController
from benchmarks.spec.fault_targets import FaultError, Resolved, Situation


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
