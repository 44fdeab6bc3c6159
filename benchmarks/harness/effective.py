"""The effective configuration of a run (`effective-config.json`): the topic's and the brokers'
settings as the cluster reports them, the clients' as they are resolved, the connection, and the
cluster's mode, version and finalized feature levels; and how it differs from what the scenario
asked, which makes the run invalid (`differences`). Read once the run's topic exists."""

from __future__ import annotations

import dataclasses
from typing import Any

from benchmarks.core.connection import Connection
from benchmarks.core.wait import WaitTimeout, wait_until
from benchmarks.harness import features, java_load
from benchmarks.hosts.inventory import ClusterInventory
from benchmarks.kafka import cluster, kafka_protocol
from benchmarks.spec.scenario import Scenario


@dataclasses.dataclass(frozen=True)
class Clients:
    """The clients of the run: the Python client library, and the producer and consumer settings
    with each client's defaults for what the analysis depends on filled in."""

    library: str
    version: str
    librdkafka: str
    producer: dict[str, Any]
    producer_library: str  # "librdkafka 2.x.y", or Kafka's Java producer and its version
    consumer: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class TopicLayout:
    partitions: int
    replication_factor: list[int]  # every replication factor the topic's partitions have


@dataclasses.dataclass(frozen=True)
class ClusterIdentity:
    """The cluster's mode and version (as its inventory deploys it) and the feature levels it has
    finalized (as its brokers report them: metadata.version, kraft.version,
    eligible.leader.replicas.version, ...; {"error": why} when they could not be read)."""

    metadata_mode: str
    kafka_version: str
    finalized_features: dict[str, str]

    @property
    def eligible_leader_replicas(self) -> bool | None:
        """Whether the brokers have Eligible Leader Replicas on; None when their levels are unknown."""
        if "error" in self.finalized_features:
            return None
        return self.finalized_features.get(features.ELR, "0") != "0"


@dataclasses.dataclass(frozen=True)
class EffectiveConfig:
    client: Clients
    topic: dict[str, str | None]  # the topic's configuration, every entry the cluster reports
    brokers: dict[str, dict[str, str | None]]  # by broker id: its configuration, sensitive entries left out
    topic_layout: TopicLayout
    connection: dict[str, Any]  # how the clients reach the cluster (Connection.summary: no secret)
    cluster: ClusterIdentity

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def resolved_producer(scenario: Scenario) -> dict[str, Any]:
    """The scenario's producer settings with each client's defaults for what the analysis depends
    on: the Java producer is idempotent unless told otherwise, librdkafka's only when transactional."""
    java = scenario.client.producer_library == "java"
    return {"acks": "all", "enable.idempotence": java or scenario.client.transactions is not None,
            **dict(scenario.client.producer)}


def producer_client(scenario: Scenario) -> str:
    """The producers' client as the report names it: "librdkafka 2.x.y" or Kafka's Java producer."""
    if scenario.client.producer_library == "java":
        return java_load.describe()
    import confluent_kafka

    return f"librdkafka {confluent_kafka.libversion()[0]}"


def differences(effective: EffectiveConfig, scenario: Scenario) -> list[str]:
    """How the cluster's and the clients' settings differ from what the scenario asked."""
    w, topic, layout = scenario.workload, effective.topic, effective.topic_layout
    reasons = []
    if topic.get("min.insync.replicas") != str(w.min_insync_replicas):
        reasons.append(f"topic min.insync.replicas is {topic.get('min.insync.replicas')}, "
                       f"scenario says {w.min_insync_replicas}")
    if topic.get("unclean.leader.election.enable") != str(w.unclean_leader_election).lower():
        reasons.append(f"topic unclean.leader.election.enable is {topic.get('unclean.leader.election.enable')}")
    if layout.replication_factor != [w.replication_factor] or layout.partitions != w.partitions:
        reasons.append(f"topic has {layout.partitions} partitions with RF {layout.replication_factor}, scenario says "
                       f"{w.partitions} with RF {w.replication_factor}")
    if str(effective.client.producer.get("enable.idempotence")).lower() == "true" and scenario.client.acks != "all":
        reasons.append(f"enable.idempotence=true needs acks=all, scenario says acks={scenario.client.acks}")
    return reasons


def _cluster_identity(inventory: ClusterInventory, conn: Connection) -> ClusterIdentity:
    try:
        found = {name: kafka_protocol.feature_level_name(name, level)
                 for name, level in sorted(cluster.finalized_features(conn).items())}
    except (kafka_protocol.ProtocolError, OSError) as exc:
        found = {"error": str(exc)}
    return ClusterIdentity(inventory.metadata_mode, inventory.kafka_version, found)


def read(conn: Connection, topic: str, scenario: Scenario, inventory: ClusterInventory) -> EffectiveConfig:
    """The run's effective configuration, as the cluster reports it now."""
    import confluent_kafka
    from confluent_kafka.admin import ConfigResource

    admin = cluster.admin_client(conn)
    # A just-created topic reaches every broker's metadata cache a little later (in KRaft, when
    # the broker has replayed the metadata log that far): ask until the answering broker knows
    # it, or `differences` would report a difference that is not.
    def known() -> Any:
        md = admin.list_topics(topic, timeout=30).topics[topic]
        return md if md.partitions and not md.error else None

    try:
        md = wait_until(known, 30, interval_s=0.2, what=f"the brokers to know {topic}")
    except WaitTimeout:  # compare with whatever the cluster says: the differences name it
        md = admin.list_topics(topic, timeout=30).topics[topic]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)

    def topic_entries() -> Any:
        try:
            return admin.describe_configs([resource])[resource].result(timeout=30)
        except confluent_kafka.KafkaException as exc:
            if exc.args[0].code() == confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None  # the broker that answered has not replayed the topic's creation yet
            raise

    entries = wait_until(topic_entries, 30, interval_s=0.2, what=f"every broker to know {topic}")
    brokers = {}
    for broker_id in sorted(admin.list_topics(timeout=30).brokers):
        res = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
        brokers[str(broker_id)] = {n: e.value for n, e in admin.describe_configs([res])[res].result(timeout=30).items()
                                   if not e.is_sensitive}
    clients = Clients("confluent-kafka", confluent_kafka.version()[0], confluent_kafka.libversion()[0],
                      resolved_producer(scenario), producer_client(scenario), dict(scenario.client.consumer))
    return EffectiveConfig(
        client=clients, topic={name: entry.value for name, entry in entries.items()}, brokers=brokers,
        topic_layout=TopicLayout(len(md.partitions), sorted({len(p.replicas) for p in md.partitions.values()})),
        connection=conn.summary(), cluster=_cluster_identity(inventory, conn))
