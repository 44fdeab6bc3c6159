"""Operational procedures run as timed events of a run: a playbook the runner starts during the
measured phase, under the run's load, with each play it goes through recorded on the run's
timeline (`procedure-start`, `procedure-play`, `procedure-end` events).

A procedure is one spec class here (its playbook, its parameters and the variables they become,
what it needs of the workload and of the inventory) and one playbook under playbooks/; the
scenario's `procedures` entries are a union keyed on `playbook`. Adding one touches nothing else.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import Field, model_validator

from benchmarks.spec.shape import ClusterShape
from benchmarks.spec.strict import Strict
from benchmarks.spec.workload import Workload

RELEASE = r"^[0-9]+\.[0-9]+\.[0-9]+$"


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3])


class ProcedureSpec(Strict):
    """One procedure: `{playbook: NAME, at_s: SECONDS, ...its parameters}` in a scenario."""

    playbook_file: ClassVar[str]  # under playbooks/
    modes: ClassVar[frozenset[str]]  # the metadata modes of the clusters it applies to
    summary: ClassVar[str]
    # It leaves the cluster's ZooKeeper stopped for good when it succeeds: the heal after the run
    # then neither waits for ZooKeeper nor starts it (start.yml would leave it stopped anyway).
    retires_zookeeper: ClassVar[bool] = False

    playbook: str  # the procedure's name (each class narrows it to its own, the union's tag)
    at_s: Annotated[float, Field(ge=0)]  # seconds into the measured phase (scaled by --quick)

    @property
    def name(self) -> str:
        return self.playbook

    def extravars(self, topic: str) -> dict[str, Any]:
        """The playbook's variables for this run (`topic`: the run's topic)."""
        return {}

    def workload_errors(self, workload: Workload) -> list[tuple[str, str]]:
        """(field, message) for what this workload cannot do of the procedure."""
        return []

    def cluster_errors(self, cluster: ClusterShape) -> list[tuple[str, str]]:
        """(field, message) for what this inventory cannot do of the procedure."""
        if cluster.metadata_mode not in self.modes:
            allowed = ", ".join(name for name, spec in NAMES.items() if cluster.metadata_mode in spec.modes)
            return [("playbook", f"{self.name} needs a {' or '.join(sorted(self.modes))} cluster; this inventory runs "
                                 f"{cluster.metadata_mode}, so allowed here: {allowed}")]
        return []


class RollingRestart(ProcedureSpec):
    playbook_file = "rolling-restart.yml"
    modes = frozenset({"kraft", "zookeeper"})
    summary = "every node restarted one at a time, gated on health, the active controller last"

    playbook: Literal["rolling-restart"]


class MigrateToKraft(ProcedureSpec):
    playbook_file = "migrate-to-kraft.yml"
    modes = frozenset({"zookeeper"})
    summary = "ZooKeeper -> KRaft migration of a Kafka 3.9 cluster, finalized"
    retires_zookeeper = True

    playbook: Literal["migrate-to-kraft"]

    def cluster_errors(self, cluster: ClusterShape) -> list[tuple[str, str]]:
        errors = super().cluster_errors(cluster)
        if not errors and cluster.migration_controllers not in (1, 3, 5):
            errors.append(("playbook", f"{self.name} needs 1, 3 or 5 KRaft controllers waiting for the migration (group "
                                       "kafka_controller with kafka_zookeeper_migration: true, as in "
                                       f"inventories/local-migration); this inventory has {cluster.migration_controllers}"))
        return errors


class Upgrade(ProcedureSpec):
    """`{playbook: upgrade, at_s: 5, to_version: 4.3.1}`: a rolling upgrade to another release."""

    playbook_file = "upgrade.yml"
    modes = frozenset({"kraft", "zookeeper"})
    summary = "rolling upgrade to another Kafka release, controllers first, then the feature levels finalized"

    playbook: Literal["upgrade"]
    to_version: Annotated[str, Field(pattern=RELEASE)]
    finalize: bool = True  # finalize the release's feature levels (metadata.version and the others)

    def extravars(self, topic: str) -> dict[str, Any]:
        return {"kafka_upgrade_version": self.to_version, "kafka_upgrade_finalize": self.finalize}

    def cluster_errors(self, cluster: ClusterShape) -> list[tuple[str, str]]:
        errors = super().cluster_errors(cluster)
        if cluster.metadata_mode == "zookeeper" and _release(self.to_version) >= (4, 0, 0):
            errors.append(("to_version", f"Kafka {self.to_version} has no ZooKeeper mode, and this inventory runs "
                                         "ZooKeeper: migrate to KRaft on 3.9 first (procedure migrate-to-kraft, or "
                                         "playbooks/migrate-to-kraft.yml), then upgrade"))
        elif cluster.kafka_version and _release(self.to_version) < _release(cluster.kafka_version):
            errors.append(("to_version", f"{self.to_version} is older than the Kafka {cluster.kafka_version} this "
                                         "inventory runs: upgrade.yml does not downgrade"))
        elif self.to_version == cluster.kafka_version:
            errors.append(("to_version", f"this inventory runs Kafka {self.to_version} already: nothing to upgrade "
                                         "(inventories/local-upgrade deploys 3.9.2 in KRaft mode, "
                                         "inventories/local-upgrade-4x 4.2.1)"))
        return errors


class ReassignPartitions(ProcedureSpec):
    """`{playbook: reassign-partitions, at_s: 5, brokers: [0, 1], throttle_bytes: 1000000}`: the run's
    topic moved onto the brokers given, partition p led by brokers[p mod n], throttled."""

    playbook_file = "reassign-partitions.yml"
    modes = frozenset({"kraft", "zookeeper"})
    summary = "the topic's replicas moved onto a set of brokers with kafka-reassign-partitions, throttled"

    playbook: Literal["reassign-partitions"]
    brokers: Annotated[list[int], Field(min_length=1)]
    throttle_bytes: Annotated[int, Field(ge=0)] = 10_000_000  # replication throttle, bytes/s per broker; 0: none

    @model_validator(mode="after")
    def _distinct(self) -> ReassignPartitions:
        if len(set(self.brokers)) != len(self.brokers):
            raise ValueError(f"brokers {self.brokers} names a broker twice")
        return self

    def extravars(self, topic: str) -> dict[str, Any]:
        return {"reassign_topic": topic, "reassign_brokers": list(self.brokers),
                "reassign_throttle_bytes": self.throttle_bytes}

    def workload_errors(self, workload: Workload) -> list[tuple[str, str]]:
        if workload.replication_factor > len(self.brokers):
            return [("brokers", f"{len(self.brokers)} broker(s) cannot hold workload.replication_factor "
                                f"{workload.replication_factor} replicas of each partition")]
        return []

    def cluster_errors(self, cluster: ClusterShape) -> list[tuple[str, str]]:
        errors = super().cluster_errors(cluster)
        unknown = [b for b in self.brokers if b not in cluster.broker_ids]
        if unknown:
            errors.append(("brokers", f"no broker {', '.join(map(str, unknown))} in this inventory (brokers: "
                                      f"{', '.join(map(str, cluster.broker_ids))})"))
        return errors


class ReplaceBroker(ProcedureSpec):
    """`{playbook: replace-broker, at_s: 5, broker: 2}`: the broker's host replaced by one with empty
    disks and the same id, which catches up on every partition, then leads its share again."""

    playbook_file = "replace-broker.yml"
    modes = frozenset({"kraft", "zookeeper"})
    summary = "a broker's host replaced by one with empty disks and the same id, every partition re-replicated"

    playbook: Literal["replace-broker"]
    broker: Annotated[int, Field(ge=0)]

    def extravars(self, topic: str) -> dict[str, Any]:
        return {"replace_broker_id": self.broker}

    def workload_errors(self, workload: Workload) -> list[tuple[str, str]]:
        if workload.replication_factor < 2:
            return [("broker", "with workload.replication_factor 1 the broker holds the only replica of its partitions: "
                               "replacing its disks loses them")]
        return []

    def cluster_errors(self, cluster: ClusterShape) -> list[tuple[str, str]]:
        errors = super().cluster_errors(cluster)
        if self.broker not in cluster.broker_ids:
            errors.append(("broker", f"no broker {self.broker} in this inventory (brokers: "
                                     f"{', '.join(map(str, cluster.broker_ids))})"))
        elif self.broker in cluster.controller_ids:
            errors.append(("broker", f"broker {self.broker} is also a KRaft controller (a combined node): replacing a "
                                     "voter of the quorum needs it reconfigured, which replace-broker.yml does not do"))
        return errors


# The scenario's `procedures` entries: a union keyed on `playbook`.
Procedure = Annotated[RollingRestart | MigrateToKraft | Upgrade | ReassignPartitions | ReplaceBroker,
                      Field(discriminator="playbook")]
SPECS: tuple[type[ProcedureSpec], ...] = get_args(get_args(Procedure)[0])
NAMES: dict[str, type[ProcedureSpec]] = {get_args(spec.model_fields["playbook"].annotation)[0]: spec for spec in SPECS}
