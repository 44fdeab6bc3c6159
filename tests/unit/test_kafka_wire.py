"""kafka-bench's own Kafka wire codec (benchmarks/kafka/kafka_protocol.py) byte for byte against
kafka-python's message classes, which are generated from Kafka's own JSON message schemas: every
request the codec sends is decoded by them and must encode back to the same bytes with the fields
the codec meant; every answer is encoded by them, at each version the codec speaks, and must read
back as what was encoded (null and empty ELR kept apart). A socket on this machine stands in for
the broker; tests/integration/test_kraft.py holds the same reads to Kafka's own tools on a real
KRaft cluster."""

from __future__ import annotations

import socket
import struct
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.admin.cluster import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
)
from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from benchmarks.kafka import kafka_protocol as kp
from benchmarks.kafka.kafka_codec import ProtocolError

REQUESTS: dict[int, Any] = {kp.METADATA: MetadataRequest, kp.API_VERSIONS: ApiVersionsRequest,
                            kp.DESCRIBE_QUORUM: DescribeQuorumRequest,
                            kp.DESCRIBE_CLUSTER: DescribeClusterRequest,
                            kp.DESCRIBE_TOPIC_PARTITIONS: DescribeTopicPartitionsRequest}


class Broker:
    """One connection's worth of a broker: each request frame is decoded with kafka-python's class
    for its API and version, kept, and answered with what `answer(api_key, version, request)` gives."""

    def __init__(self, answer: Callable[[int, int, Any], Any]) -> None:
        self.answer, self.seen = answer, list[tuple[int, int, Any, bytes]]()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            while size := conn.recv(4, socket.MSG_WAITALL):
                frame = conn.recv(struct.unpack(">i", size)[0], socket.MSG_WAITALL)
                api_key, version, correlation, client_len = struct.unpack_from(">hhih", frame)
                body = frame[10 + client_len + 1:]  # request header v2: its tagged fields, none, are one byte
                request = REQUESTS[api_key][version].decode(body)
                self.seen.append((api_key, version, request, body))
                response = self.answer(api_key, version, request)
                response.with_header(correlation_id=correlation)
                conn.sendall(response.encode(header=True, framed=True))

    def close(self) -> None:
        self.server.close()


def _versions(quorum: int = 2, cluster: int = 2, partitions: int = 0, metadata: int = 12) -> ApiVersionsResponse:
    keys = {kp.METADATA: metadata, kp.API_VERSIONS: 3, kp.DESCRIBE_QUORUM: quorum, kp.DESCRIBE_CLUSTER: cluster,
            kp.DESCRIBE_TOPIC_PARTITIONS: partitions}
    finalized = [ApiVersionsResponse.FinalizedFeatureKey(name=name, max_version_level=level, min_version_level=level)
                 for name, level in (("metadata.version", 30), ("eligible.leader.replicas.version", 1))]
    return ApiVersionsResponse[3](
        error_code=0, throttle_time_ms=0, finalized_features_epoch=12, finalized_features=finalized,
        api_keys=[ApiVersionsResponse.ApiVersion(api_key=k, min_version=0, max_version=v) for k, v in keys.items()])


def _talk(answer: Callable[[int, int, Any], Any], ask: Callable[[kp.KafkaConnection], Any], **versions: int):
    """What `ask` gets from a broker that says `versions` in ApiVersions and answers the rest with `answer`."""
    broker = Broker(lambda key, version, request: _versions(**versions) if key == kp.API_VERSIONS
                    else answer(key, version, request))
    try:
        with kp.KafkaConnection(broker.address) as conn:
            got = ask(conn)
    finally:
        broker.close()
    for api_key, version, _request, body in broker.seen:  # byte for byte: the schema's encoding of what was sent
        assert bytes(REQUESTS[api_key][version].decode(body).encode()) == body
    return got, broker.seen


def test_api_versions_is_asked_as_the_schema_says_and_its_finalized_features_are_read_from_their_tagged_field():
    (versions, features), seen = _talk(None, lambda conn: (conn.api_versions(), conn.features))  # type: ignore[arg-type]
    assert versions == {kp.METADATA: 12, kp.API_VERSIONS: 3, kp.DESCRIBE_QUORUM: 2, kp.DESCRIBE_CLUSTER: 2,
                        kp.DESCRIBE_TOPIC_PARTITIONS: 0}
    assert features == {"metadata.version": 30, "eligible.leader.replicas.version": 1}
    [(_, version, request, _)] = seen
    assert (version, request.client_software_name, request.client_software_version) == (3, "kafka-bench", "1")


def _replica(node: int, end: int, version: int) -> Any:
    fields: dict[str, Any] = {"replica_id": node, "log_end_offset": end}
    if version >= 1:
        fields |= {"last_fetch_timestamp": 1_000 + node, "last_caught_up_timestamp": 2_000 + node}
    if version >= 2:
        fields["replica_directory_id"] = uuid.UUID(int=node)
    return DescribeQuorumResponse[version].TopicData.PartitionData.ReplicaState(**fields)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_quorum_at_each_version(version):
    def answer(api_key: int, v: int, request: Any) -> Any:
        partition = DescribeQuorumResponse[v].TopicData.PartitionData(
            partition_index=0, error_code=0, leader_id=9991, leader_epoch=7, high_watermark=1_234,
            current_voters=[_replica(n, 1_234 - (n - 9990), v) for n in (9990, 9991, 9992)],
            observers=[_replica(0, 1_200, v)])
        return DescribeQuorumResponse[v](error_code=0, topics=[DescribeQuorumResponse[v].TopicData(
            topic_name=kp.METADATA_TOPIC, partitions=[partition])])

    quorum, seen = _talk(answer, lambda conn: conn.describe_quorum(), quorum=version)
    [request] = [r for key, _, r, _ in seen if key == kp.DESCRIBE_QUORUM]
    assert [(t.topic_name, [p.partition_index for p in t.partitions]) for t in request.topics] == [(kp.METADATA_TOPIC, [0])]
    fetched = (lambda n: 1_000 + n) if version >= 1 else (lambda n: -1)
    caught_up = (lambda n: 2_000 + n) if version >= 1 else (lambda n: -1)
    assert quorum == kp.Quorum(9991, 7, 1_234, tuple(kp.Replica(n, 1_234 - (n - 9990), fetched(n), caught_up(n))
                                                     for n in (9990, 9991, 9992)),
                               (kp.Replica(0, 1_200, fetched(0), caught_up(0)),))
    assert quorum.lag(quorum.voters[2]) == 2


def test_describe_quorum_refused_names_the_error():
    def answer(api_key: int, v: int, request: Any) -> Any:
        return DescribeQuorumResponse[v](error_code=41, error_message="not the controller", topics=[])

    with pytest.raises(ProtocolError, match="DescribeQuorum error 41 not the controller"):
        _talk(answer, lambda conn: conn.describe_quorum())


def test_describe_topic_partitions_keeps_a_null_elr_apart_from_an_empty_one_and_sorts_the_partitions():
    response = DescribeTopicPartitionsResponse[0]
    topic_class = response.DescribeTopicPartitionsResponseTopic
    part = topic_class.DescribeTopicPartitionsResponsePartition

    def answer(api_key: int, v: int, request: Any) -> Any:
        partitions = [
            part(error_code=0, partition_index=1, leader_id=-1, leader_epoch=9, replica_nodes=[1, 2, 0], isr_nodes=[],
                 eligible_leader_replicas=[], last_known_elr=[1], offline_replicas=[2]),
            part(error_code=0, partition_index=0, leader_id=2, leader_epoch=3, replica_nodes=[0, 1, 2],
                 isr_nodes=[2, 0], eligible_leader_replicas=None, last_known_elr=None, offline_replicas=[]),
        ]
        return response(throttle_time_ms=0, topics=[topic_class(
            error_code=0, name="t", topic_id=uuid.UUID(int=5), is_internal=False, partitions=partitions,
            topic_authorized_operations=-2147483648)])

    parts, seen = _talk(answer, lambda conn: conn.describe_topic_partitions("t"))
    [request] = [r for key, _, r, _ in seen if key == kp.DESCRIBE_TOPIC_PARTITIONS]
    assert [t.name for t in request.topics] == ["t"] and request.cursor is None
    assert parts == [kp.PartitionInfo(0, 2, 3, (0, 1, 2), (2, 0), None, None, ()),
                     kp.PartitionInfo(1, None, 9, (1, 2, 0), (), (), (1,), (2,))]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster_at_each_version_asks_for_fenced_brokers_where_it_can(version):
    def answer(api_key: int, v: int, request: Any) -> Any:
        brokers = [DescribeClusterResponse[v].DescribeClusterBroker(
            broker_id=n, host="127.0.0.1", port=9092 + n, rack=None, **({"is_fenced": n == 1} if v >= 2 else {}))
            for n in (2, 0, 1)]
        return DescribeClusterResponse[v](throttle_time_ms=0, error_code=0, error_message=None, cluster_id="c-id",
                                          controller_id=9990, brokers=brokers)

    (cluster_id, brokers), seen = _talk(answer, lambda conn: conn.describe_cluster(), cluster=version)
    [request] = [r for key, _, r, _ in seen if key == kp.DESCRIBE_CLUSTER]
    assert request.include_cluster_authorized_operations is False
    if version >= 2:
        assert request.include_fenced_brokers is True
    assert cluster_id == "c-id"
    assert brokers == [kp.BrokerInfo(n, "127.0.0.1", 9092 + n, version >= 2 and n == 1) for n in (0, 1, 2)]


@pytest.mark.parametrize("version", [9, 10, 11, 12])
def test_metadata_of_every_topic_at_each_flexible_version_reads_brokers_controller_and_isr(version):
    response = MetadataResponse[version]
    part = response.MetadataResponseTopic.MetadataResponsePartition

    def answer(api_key: int, v: int, request: Any) -> Any:
        topics = [response.MetadataResponseTopic(
            error_code=0, name=name, is_internal=internal,
            **({"topic_id": uuid.UUID(int=7)} if v >= 10 else {}),
            partitions=[part(error_code=9 if isr != [0, 1, 2] else 0, partition_index=index, leader_id=leader,
                             leader_epoch=3, replica_nodes=[0, 1, 2], isr_nodes=isr, offline_replicas=[])
                        for index, leader, isr in parts])
            for name, internal, parts in (("purchases", False, [(1, -1, [0, 2]), (0, 0, [0, 1, 2])]),
                                          ("__consumer_offsets", True, [(0, 2, [0, 1, 2])]))]
        brokers = [response.MetadataResponseBroker(node_id=n, host="127.0.0.1", port=9092 + n, rack=None)
                   for n in (2, 0)]
        return response(throttle_time_ms=0, brokers=brokers, cluster_id="c-id", controller_id=2, topics=topics)

    got, seen = _talk(answer, lambda conn: conn.metadata(), metadata=version)
    [request] = [r for key, _, r, _ in seen if key == kp.METADATA]
    assert (request.topics, request.allow_auto_topic_creation, request.include_topic_authorized_operations) == (
        None, False, False)
    assert (got.cluster_id, got.controller_id) == ("c-id", 2)
    assert got.brokers == (kp.BrokerInfo(0, "127.0.0.1", 9092, False), kp.BrokerInfo(2, "127.0.0.1", 9094, False))
    assert [(t.name, t.internal, [p.partition for p in t.partitions]) for t in got.topics] == [
        ("__consumer_offsets", True, [0]), ("purchases", False, [0, 1])]
    assert got.under_replicated() == [("purchases", kp.PartitionInfo(1, None, 3, (0, 1, 2), (0, 2), None, None, ()))]


def test_metadata_before_version_9_is_refused_by_name():
    with pytest.raises(ProtocolError, match="Metadata up to version 8"):
        _talk(None, lambda conn: conn.metadata(), metadata=8)  # type: ignore[arg-type]
