"""The few Kafka requests librdkafka does not expose, spoken directly on the wire.

KRaft's state lives in requests no client library of ours sends: DescribeQuorum (the active
controller, its epoch, each voter's log end offset), DescribeTopicPartitions (ISR with the
Eligible Leader Replicas of KIP-966), DescribeCluster with fenced brokers (KIP-1073) and the
finalized feature levels ApiVersions carries in its tagged fields. Metadata (brokers, ISR) is
here too, for the hosts' health check (kafka_health), which runs where no client library is
installed. Each is one request and one response in Kafka's flexible encoding (compact strings
and arrays, tagged fields); the layouts are those of the generated message classes of Kafka 4.3
(`*Data.SCHEMAS`). The codec is tested byte for byte, at every version it speaks, against
kafka-python's message classes, which are generated from Kafka's JSON schemas
(tests/unit/test_kafka_wire.py), and against Kafka's own tools on a real cluster
(tests/integration/test_kraft.py). It stays ours rather than built on
those classes: they would add a runtime dependency and about 130 ms to every process's imports
(measured beside this module's ~60 ms), for the 150-odd lines that write and read these bodies;
the connection, TLS, SASL and per-node timeouts would stay ours either way.
"""

from __future__ import annotations

import dataclasses
import socket
import struct
from collections.abc import Mapping

from . import kafka_auth
from .kafka_codec import ProtocolError, Reader, Writer

METADATA, API_VERSIONS, DESCRIBE_QUORUM, DESCRIBE_CLUSTER, DESCRIBE_TOPIC_PARTITIONS = 3, 18, 55, 60, 75
METADATA_TOPIC = "__cluster_metadata"
NOT_LEADER_OR_FOLLOWER = 6


class NotLeader(ProtocolError):
    """The node asked is not the leader of the partition asked of (DescribeQuorum: only the
    quorum's leader, the active controller, answers it)."""


#: metadata.version feature levels and their release names (MetadataVersion of Kafka 4.3).
METADATA_VERSIONS = {7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0",
                     13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3",
                     19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2",
                     25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0",
                     31: "4.4-IV0"}


def feature_level_name(feature: str, level: int) -> str:
    """A finalized level as operators write it: metadata.version by its release name, others by number."""
    if feature == "metadata.version":
        return METADATA_VERSIONS.get(level, str(level))
    return str(level)


def _int32s(r: Reader) -> list[int] | None:
    return r.array(lambda r: r.int32())


def _broker(r: Reader, with_fenced: bool) -> BrokerInfo:
    """A broker as DescribeCluster and Metadata list it: id, host, port, rack (not kept), fenced
    where the version carries it, tagged fields."""
    node, host, port, _rack = r.int32(), r.string() or "", r.int32(), r.string()
    fenced = r.boolean() if with_fenced else False
    r.tags()
    return BrokerInfo(node, host, port, fenced)


@dataclasses.dataclass(frozen=True)
class Replica:
    """A voter or observer of the metadata log, as the active controller sees it."""

    node_id: int
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclasses.dataclass(frozen=True)
class Quorum:
    leader_id: int | None  # None: no leader (an election is on, or no majority)
    leader_epoch: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...]

    def lag(self, replica: Replica) -> int:
        """How many metadata records the replica is behind the high watermark."""
        return max(0, self.high_watermark - replica.log_end_offset)


@dataclasses.dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int | None
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None  # None: the cluster does not keep ELR (feature off, or before 4.0)
    last_known_elr: tuple[int, ...] | None
    offline: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    host: str
    port: int
    fenced: bool


@dataclasses.dataclass(frozen=True)
class TopicMetadata:
    name: str
    error: int  # the topic's error code (0: none)
    internal: bool
    partitions: tuple[PartitionInfo, ...]  # ELR None: Metadata does not carry it


@dataclasses.dataclass(frozen=True)
class ClusterMetadata:
    """A node's Metadata answer: the brokers it knows alive (in KRaft: registered and unfenced; in
    ZooKeeper mode: those the controller told it of), the active controller, every topic."""

    cluster_id: str
    controller_id: int | None
    brokers: tuple[BrokerInfo, ...]
    topics: tuple[TopicMetadata, ...]

    def under_replicated(self) -> list[tuple[str, PartitionInfo]]:
        """Partitions with fewer in-sync replicas than replicas, as kafka-topics
        --under-replicated-partitions lists them."""
        return [(t.name, p) for t in self.topics for p in t.partitions if len(p.isr) < len(p.replicas)]


class KafkaConnection:
    """One TCP connection to a broker or controller, one request at a time."""

    def __init__(self, address: str, timeout: float = 2.0, client_id: str = "kafka-bench",
                 settings: Mapping[str, str] | None = None) -> None:
        """`settings`: the client's librdkafka security settings (security.protocol, ssl.*, sasl.*),
        as a `connection.Connection` holds them; TLS and SASL are done before any request."""
        host, _, port = address.rpartition(":")
        self.address, self.client_id, self.correlation = address, client_id, 0
        try:
            self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        except OSError as exc:
            raise ProtocolError(f"{address} does not answer: {exc}") from exc
        self.versions: dict[int, int] = {}
        self.features: dict[str, int] = {}
        protocol = (settings or {}).get("security.protocol", "plaintext").lower()
        if protocol != "plaintext":
            if protocol in ("ssl", "sasl_ssl"):
                self.sock = kafka_auth.tls_wrap(self.sock, host, settings or {})
            if protocol.startswith("sasl_"):
                try:
                    kafka_auth.sasl_login(self, settings or {})
                except (ProtocolError, OSError, struct.error):
                    self.sock.close()
                    raise

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> KafkaConnection:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _recv(self, n: int) -> bytes:
        chunks, left = [], n
        while left:
            chunk = self.sock.recv(left)
            if not chunk:
                raise ProtocolError(f"{self.address} closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def request(self, api_key: int, version: int, body: Writer, flexible: bool = True) -> Reader:
        """One request and its answer. `flexible`: the API version uses the flexible encoding (request
        header v2 and response header v1, with tagged fields); else headers v1 and v0."""
        self.correlation += 1
        header = Writer().int16(api_key).int16(version).int32(self.correlation)
        client_id = self.client_id.encode()
        header.int16(len(client_id))
        header.buf += client_id
        if flexible:
            header.tags()
        frame = bytes(header.buf) + bytes(body.buf)
        try:
            self.sock.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", self._recv(4))[0]
            reader = Reader(self._recv(size))
        except OSError as exc:
            raise ProtocolError(f"{self.address}: {exc}") from exc
        if reader.int32() != self.correlation:
            raise ProtocolError(f"{self.address}: answer to another request")
        if flexible and api_key != API_VERSIONS:  # ApiVersions answers with header v0, without tagged fields
            reader.tags()
        return reader

    def api_versions(self) -> dict[int, int]:
        """The highest version of each API the node speaks; also reads the finalized features."""
        r = self.request(API_VERSIONS, 3, Writer().string("kafka-bench").string("1").tags())
        error = r.int16()
        if error:
            raise ProtocolError(f"{self.address}: ApiVersions error {error}")
        keys = r.array(lambda r: (r.int16(), r.int16(), r.int16(), r.tags()))
        self.versions = {key: top for key, _low, top, _ in keys or []}
        r.int32()

        def finalized(r: Reader) -> dict[str, int]:
            pairs = r.array(lambda r: (r.string(), r.int16(), r.int16(), r.tags()))
            return {str(name): top for name, top, _low, _ in pairs or []}

        self.features = r.tags({2: finalized}).get(2, {})
        return self.versions

    def version(self, api_key: int, highest: int) -> int:
        if not self.versions:
            self.api_versions()
        if api_key not in self.versions:
            raise ProtocolError(f"{self.address} does not support API {api_key}")
        return min(highest, self.versions[api_key])

    def describe_quorum(self) -> Quorum:
        version = self.version(DESCRIBE_QUORUM, 2)
        body = Writer().array([METADATA_TOPIC], lambda w, t: w.string(t).array(
            [0], lambda w, p: w.int32(p).tags()).tags()).tags()
        r = self.request(DESCRIBE_QUORUM, version, body)
        error = r.int16()
        message = r.string() if version >= 2 else None
        if error:
            raise ProtocolError(f"{self.address}: DescribeQuorum error {error} {message or ''}".rstrip())

        def replica(r: Reader) -> Replica:
            node = r.int32()
            if version >= 2:
                r.uuid()
            out = Replica(node, r.int64(), r.int64() if version >= 1 else -1, r.int64() if version >= 1 else -1)
            r.tags()
            return out

        def partition(r: Reader) -> Quorum:
            r.int32()
            error = r.int16()
            if version >= 2:
                r.string()
            if error == NOT_LEADER_OR_FOLLOWER:
                raise NotLeader(f"{self.address}: not the leader of the metadata quorum")
            if error:
                raise ProtocolError(f"{self.address}: DescribeQuorum partition error {error}")
            leader, epoch, hw = r.int32(), r.int32(), r.int64()
            voters, observers = r.array(replica) or [], r.array(replica) or []
            r.tags()
            return Quorum(leader if leader >= 0 else None, epoch, hw, tuple(voters), tuple(observers))

        topics = r.array(lambda r: (r.string(), r.array(partition), r.tags()))
        quorums = [q for _name, parts, _ in topics or [] for q in parts or []]
        if not quorums:
            raise ProtocolError(f"{self.address}: DescribeQuorum answered without the metadata partition")
        return quorums[0]

    def metadata(self) -> ClusterMetadata:
        """Metadata of every topic, at version 9 to 12 (the flexible ones, Kafka 2.4 and later)."""
        version = self.version(METADATA, 12)
        if version < 9:
            raise ProtocolError(f"{self.address} speaks Metadata up to version {version}, not 9 or later")
        body = Writer().uvarint(0).int8(0)  # every topic (a null array), no topic auto-created
        if version <= 10:
            body.int8(0)  # no cluster authorized operations
        r = self.request(METADATA, version, body.int8(0).tags())
        r.int32()

        def partition(r: Reader) -> PartitionInfo:
            _error, index, leader, epoch = r.int16(), r.int32(), r.int32(), r.int32()
            replicas, isr, offline = _int32s(r), _int32s(r), _int32s(r)
            r.tags()
            return PartitionInfo(index, leader if leader >= 0 else None, epoch, tuple(replicas or ()),
                                 tuple(isr or ()), None, None, tuple(offline or ()))

        def topic(r: Reader) -> TopicMetadata:
            error, name = r.int16(), r.string() or ""
            if version >= 10:
                r.uuid()
            internal, parts = r.boolean(), r.array(partition) or []
            r.int32()
            r.tags()
            return TopicMetadata(name, error, internal, tuple(sorted(parts, key=lambda p: p.partition)))

        brokers = sorted(r.array(lambda r: _broker(r, with_fenced=False)) or [], key=lambda b: b.broker_id)
        cluster_id, controller = r.string() or "", r.int32()
        topics = sorted(r.array(topic) or [], key=lambda t: t.name)
        return ClusterMetadata(cluster_id, controller if controller >= 0 else None, tuple(brokers), tuple(topics))

    def describe_topic_partitions(self, topic: str) -> list[PartitionInfo]:
        self.version(DESCRIBE_TOPIC_PARTITIONS, 0)
        body = Writer().array([topic], lambda w, t: w.string(t).tags()).int32(2000).int8(-1).tags()
        r = self.request(DESCRIBE_TOPIC_PARTITIONS, 0, body)
        r.int32()

        def partition(r: Reader) -> PartitionInfo:
            error, index, leader, epoch = r.int16(), r.int32(), r.int32(), r.int32()
            replicas, isr, elr, last_elr, offline = _int32s(r), _int32s(r), _int32s(r), _int32s(r), _int32s(r)
            r.tags()
            if error:
                raise ProtocolError(f"{self.address}: partition {topic}-{index}: error {error}")
            return PartitionInfo(index, leader if leader >= 0 else None, epoch, tuple(replicas or ()),
                                 tuple(isr or ()), None if elr is None else tuple(elr),
                                 None if last_elr is None else tuple(last_elr), tuple(offline or ()))

        def topic_entry(r: Reader) -> list[PartitionInfo]:
            error, name = r.int16(), r.string()
            r.uuid()
            r.boolean()
            parts = r.array(partition) or []
            r.int32()
            r.tags()
            if error:
                raise ProtocolError(f"{self.address}: topic {name}: error {error}")
            return parts

        entries = r.array(topic_entry) or []
        return sorted((p for parts in entries for p in parts), key=lambda p: p.partition)

    def describe_cluster(self) -> tuple[str, list[BrokerInfo]]:
        """The cluster id and its brokers, fenced ones included where the node can say (4.0+)."""
        version = self.version(DESCRIBE_CLUSTER, 2)
        body = Writer().int8(0)
        if version >= 1:
            body.int8(1)  # endpoint type: brokers
        if version >= 2:
            body.int8(1)  # include fenced brokers
        r = self.request(DESCRIBE_CLUSTER, version, body.tags())
        r.int32()
        error, message = r.int16(), r.string()
        if error:
            raise ProtocolError(f"{self.address}: DescribeCluster error {error} {message or ''}".rstrip())
        if version >= 1:
            r.int8()
        cluster_id = r.string() or ""
        r.int32()

        return cluster_id, sorted(r.array(lambda r: _broker(r, with_fenced=version >= 2)) or [],
                                  key=lambda b: b.broker_id)


def first_answering(addresses: list[str], timeout: float = 2.0,
                    settings: Mapping[str, str] | None = None) -> KafkaConnection:
    """A connection to the first of `addresses` that accepts one."""
    errors = []
    for address in addresses:
        try:
            return KafkaConnection(address, timeout, settings=settings)
        except ProtocolError as exc:
            errors.append(str(exc))
    raise ProtocolError("; ".join(errors) or "no address to connect to")
