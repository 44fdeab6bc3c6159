"""Cluster status from metadata, with the admin client and ZooKeeper probe substituted."""

from __future__ import annotations

import dataclasses
import os
import socket
import ssl
import subprocess
import sys
import threading
from types import SimpleNamespace as NS

import pytest
from cryptography.hazmat.primitives import serialization

from benchmarks.hosts import host_probe, inventory
from benchmarks.hosts.inventory import ZooKeeperServer
from benchmarks.kafka import cluster
from benchmarks.kafka.kafka_protocol import BrokerInfo, PartitionInfo, Quorum, Replica
from tests.conftest import KRAFT_INVENTORY, LOCAL_INVENTORY, ROOT

sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.kafka_bench.cluster.plugins.modules import tls_identity as tls


class FakeAdmin:
    def __init__(self, brokers, partitions, controller=0):
        self.metadata = NS(
            cluster_id="test-cluster", controller_id=controller,
            brokers={i: NS(id=i, host="127.0.0.1", port=9092 + i) for i in brokers},
            topics={
                "purchases": NS(topic="purchases", partitions={
                    pid: NS(id=pid, leader=leader, replicas=replicas, isrs=isr)
                    for pid, (leader, replicas, isr) in partitions.items()}),
                "__consumer_offsets": NS(topic="__consumer_offsets", partitions={
                    0: NS(id=0, leader=0, replicas=[0], isrs=[0])}),
            })

    def list_topics(self, timeout):
        return self.metadata


def describe(admin, zk_mode="standalone", closed_ports=(), processes=None):
    return cluster.describe(inventory.load(LOCAL_INVENTORY), admin_factory=lambda _: admin,
                            zk_probe=lambda server: zk_mode, port_probe=lambda host, port: port not in closed_ports,
                            process_probe=lambda host, ctl: (processes or {}).get(ctl.split("/")[-3], "running"))


def test_a_killed_broker_still_registered_is_not_healthy():
    """After kill -9 the broker stays registered until its ZooKeeper session expires: its
    process and its port tell the truth meanwhile."""
    status = describe(FakeAdmin([0, 1, 2], {0: (0, [0, 1, 2], [0, 1, 2])}), closed_ports={9093},
                      processes={"broker1": "stopped"})
    assert not status.healthy
    assert status.problems() == ["broker 1 (broker1, 127.0.0.1:9093): its process is stopped",
                                 "broker 1 (broker1, 127.0.0.1:9093): nothing accepts connections on its port"]
    paused = describe(FakeAdmin([0, 1, 2], {}), processes={"broker2": "paused", "zk0": "paused"})
    assert paused.problems() == ["broker 2 (broker2, 127.0.0.1:9094): its process is paused",
                                 "ZooKeeper zk0 (127.0.0.1:2181): its process is paused"]


def test_process_state_is_read_only_for_services_on_this_machine(tmp_path):
    ctl = tmp_path / "kafka-service"
    ctl.write_text("#!/bin/sh\nexit 4\n")
    ctl.chmod(0o755)
    assert host_probe.local_process_state("127.0.0.1", str(ctl)) == "paused"
    assert host_probe.local_process_state("10.213.0.11", str(ctl)) is None
    assert host_probe.local_process_state("127.0.0.1", str(tmp_path / "missing")) is None


def test_a_node_is_up_when_its_process_is_seen_running_and_it_has_no_problem():
    """Partitions aside (a restarted broker catching up is a node that is up), a node must be
    seen: a remote host's process cannot be, and then start.yml is not left out."""
    catching_up = FakeAdmin([0, 1, 2], {0: (0, [0, 1, 2], [0, 2])})
    inv = inventory.load(LOCAL_INVENTORY)

    def up(admin, processes=None, seen=True):
        return not cluster.nodes_not_up(inv, describe_fn=lambda inv_, conn, **kw: describe(admin, processes=processes)
                                     if seen else cluster.describe(inv_, admin_factory=lambda _: admin,
                                                                   zk_probe=lambda server: "standalone",
                                                                   port_probe=lambda h, p: True,
                                                                   process_probe=lambda h, c: None))
    assert up(catching_up)
    assert not up(catching_up, processes={"broker1": "stopped"})
    assert not up(catching_up, processes={"zk0": "paused"})
    assert not up(catching_up, seen=False)

    def unreachable(inv_, conn, **kw):
        raise cluster.ClusterUnreachable("no broker answered")
    assert cluster.nodes_not_up(inv, describe_fn=unreachable)


def test_nodes_not_up_says_which_node_is_down_or_unseen_and_why():
    """What the heal records when it runs start.yml: the nodes it could not see, or saw down."""
    inv = inventory.load(LOCAL_INVENTORY)
    admin = FakeAdmin([0, 1, 2], {0: (0, [0, 1, 2], [0, 1, 2])})

    def not_up(process_probe):
        return cluster.nodes_not_up(inv, describe_fn=lambda inv_, conn, **kw: cluster.describe(
            inv_, admin_factory=lambda _: admin, zk_probe=lambda server: "standalone", port_probe=lambda h, p: True,
            process_probe=process_probe))
    assert not_up(lambda host, ctl: "running") == []
    unseen = not_up(lambda host, ctl: None if ctl.endswith("zookeeper-service") else "running")
    assert unseen == ["ZooKeeper zk0 (127.0.0.1:2181): its process could not be seen"]
    stopped = not_up(lambda host, ctl: "stopped" if "/broker1/" in ctl else "running")
    assert stopped == ["broker 1 (broker1, 127.0.0.1:9093): its process is stopped"]

    def unreachable(inv_, conn, **kw):
        raise cluster.ClusterUnreachable("no broker answered")
    assert cluster.nodes_not_up(inv, describe_fn=unreachable) == ["the cluster could not be described: no broker answered"]


def test_healthy_cluster():
    status = describe(FakeAdmin([0, 1, 2], {0: (0, [0, 1, 2], [0, 1, 2]), 1: (1, [1, 2, 0], [1, 2, 0])}))
    assert status.healthy and status.problems() == []
    assert status.controller_id == 0
    assert [p.topic for p in status.partitions] == ["purchases", "purchases"], "internal topics hidden by default"


def test_killed_broker_shows_as_down_with_shrunk_isr_and_offline_partition():
    status = describe(FakeAdmin([0, 2], {0: (0, [0, 1, 2], [0, 2]), 1: (-1, [1], [])}, controller=2))
    assert not status.healthy
    assert [b.alive for b in status.brokers] == [True, False, True]
    assert status.problems() == [
        "broker 1 (broker1, 127.0.0.1:9093) is not registered",
        "purchases-1 has no leader",
        "purchases-0 is under-replicated: ISR [0, 2] of replicas [0, 1, 2]",
    ]
    doc = status.to_dict()
    assert doc["partitions"][1] == {"topic": "purchases", "partition": 1, "leader": None, "replicas": [1],
                                    "isr": [], "elr": None, "last_known_elr": None, "offline": True,
                                    "under_replicated": True}, "no ELR in ZooKeeper mode"


def test_silent_zookeeper_makes_the_cluster_unhealthy():
    status = describe(FakeAdmin([0, 1, 2], {}), zk_mode=None)
    assert not status.healthy and status.problems() == ["ZooKeeper zk0 (127.0.0.1:2181) does not answer"]


def _answer_srvr(server: socket.socket, wrap=lambda conn: conn) -> threading.Thread:
    def answer():
        raw, _ = server.accept()
        try:
            with wrap(raw) as conn:
                if conn.recv(4) == b"srvr":
                    conn.sendall(b"Zookeeper version: 3.8.4\nMode: follower\nNode count: 5\n")
        except OSError:  # a client that did not trust the certificate
            raw.close()

    thread = threading.Thread(target=answer)
    thread.start()
    return thread


def test_zookeeper_mode_reads_srvr_from_a_real_socket():
    server = socket.create_server(("127.0.0.1", 0))
    zk = ZooKeeperServer("zk0", "127.0.0.1", server.getsockname()[1], "/etc/zookeeper")
    thread = _answer_srvr(server)
    try:
        assert host_probe.zookeeper_mode(zk) == "follower"
    finally:
        thread.join(5)
        server.close()
    assert host_probe.zookeeper_mode(zk, timeout=0.5) is None


def test_zookeeper_mode_speaks_tls_to_a_tls_client_port_and_checks_its_certificate(tmp_path):
    """A client port that speaks TLS (zookeeper_tls_enabled) is asked over TLS, trusting the
    cluster CA only: a server whose certificate another CA signed has no known mode."""
    def pem(cert):
        return cert.public_bytes(serialization.Encoding.PEM)

    ca_key, other_key, key = tls.new_key(), tls.new_key(), tls.new_key()
    ca = tls.issue("cluster CA", ca_key, None, None, 30, ca=True)
    (tmp_path / "ca.pem").write_bytes(pem(ca))
    (tmp_path / "other.pem").write_bytes(pem(tls.issue("other CA", other_key, None, None, 30, ca=True)))
    (tmp_path / "zk0.pem").write_bytes(pem(tls.issue("zk0", key, ca, ca_key, 30, sans=["127.0.0.1"])))
    (tmp_path / "zk0.key").write_bytes(tls.key_pem(key))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "zk0.pem", tmp_path / "zk0.key")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    thread = _answer_srvr(server, lambda raw: context.wrap_socket(raw, server_side=True))
    try:
        zk = ZooKeeperServer("zk0", "127.0.0.1", port, "/etc/zookeeper", str(tmp_path / "ca.pem"))
        assert host_probe.zookeeper_mode(zk) == "follower"
        thread.join(5)
        thread = _answer_srvr(server, lambda raw: context.wrap_socket(raw, server_side=True))
        untrusted = ZooKeeperServer("zk0", "127.0.0.1", port, "/etc/zookeeper", str(tmp_path / "other.pem"))
        assert host_probe.zookeeper_mode(untrusted) is None
    finally:
        thread.join(5)
        server.close()


@pytest.mark.parametrize(("features", "mode", "release"), [
    ({"metadata.version": 30, "kraft.version": 1}, "kraft", "4.3"),
    ({}, "zookeeper", ""),
    ({"metadata.version": 99}, "kraft", ""),  # a level newer than this project knows: the release is unknown
])
def test_a_cluster_given_by_bootstrap_is_described_by_its_brokers(features, mode, release):
    from benchmarks.core.connection import Connection

    given = Connection("kafka.example:9092", source="--bootstrap")
    inv = cluster.discover(given, admin_factory=lambda conn: FakeAdmin([2, 0, 1], {}), features=lambda conn: features)
    assert [(b.broker_id, b.bootstrap) for b in inv.brokers] == [(0, "127.0.0.1:9092"), (1, "127.0.0.1:9093"),
                                                                  (2, "127.0.0.1:9094")]
    assert (inv.metadata_mode, inv.kafka_version, inv.zookeepers, inv.controllers) == (mode, release, (), ())
    assert inv.connection() is given and inv.client_profiles() == ("plaintext",)
    with pytest.raises(ValueError, match="client.security is sasl_ssl, but --bootstrap connects as plaintext"):
        inv.connection("sasl_ssl")
    not_up = cluster.nodes_not_up(inv, describe_fn=lambda inv_, conn, **kw: cluster.describe(
        inv_, conn=conn, admin_factory=lambda _: FakeAdmin([0, 1, 2], {}), port_probe=lambda h, p: True,
        zk_probe=lambda server: None))
    assert not_up[:3] == [f"broker {i} (broker{i}, 127.0.0.1:909{2 + i}): its process could not be seen"
                          for i in range(3)], "no process of it can be seen: never taken for up"


def test_broker_cpu_is_what_the_same_processes_used_between_two_readings(tmp_path):
    before = {"broker0": (100, 5.0), "broker1": (101, 7.5)}
    assert host_probe.cpu_used(before, {"broker0": (100, 6.25), "broker1": (101, 9.5)}) == 3.25
    assert host_probe.cpu_used(before, {"broker0": (100, 6.0), "broker1": (202, 1.0)}) is None, "broker1 was restarted"
    assert host_probe.cpu_used(None, before) is None and host_probe.cpu_used(before, None) is None


def test_broker_cpu_is_read_here_for_brokers_on_this_machine_and_over_the_remote_reader_for_others(tmp_path):
    """Through each broker's control script (`pid`) and /proc; a broker elsewhere through the
    reader (SSH in a run), which runs the same shell lines on its host: here, on this machine."""
    ctl = tmp_path / "kafka-service"
    ctl.write_text(f"#!/bin/sh\n[ \"$1\" = pid ] && echo {os.getpid()}\n")
    ctl.chmod(0o755)
    here = inventory.ClusterInventory(tmp_path, (inventory.Broker("broker0", 0, "127.0.0.1", 9092, str(tmp_path)),), ())
    [(name, (pid, cpu))] = host_probe.broker_cpu(here).items()
    assert (name, pid) == ("broker0", os.getpid()) and cpu > 0
    elsewhere = dataclasses.replace(here, brokers=(inventory.Broker("broker0", 0, "10.213.0.11", 9092, str(tmp_path)),))
    assert host_probe.broker_cpu(elsewhere) is None, "no reader: nothing known"
    asked = []

    def shell(host: str, command: str) -> str | None:
        asked.append(host)
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else None

    [(name, (pid, far))] = host_probe.broker_cpu(elsewhere, shell).items()
    assert (name, pid, asked) == ("broker0", os.getpid(), ["broker0"]) and far >= cpu
    assert host_probe.broker_cpu(elsewhere, lambda host, command: None) is None, "unreadable: nothing known"
    # Under systemd service control the pid is the unit's main process.
    unit = dataclasses.replace(elsewhere.brokers[0], service="confluent-server", control="systemd")
    assert "systemctl show -p MainPID --value confluent-server" in host_probe._cpu_command(unit)


def test_process_states_are_read_here_or_from_the_remote_hosts_control_script(tmp_path):
    """A service on this machine through its control script here; one on a host of its own
    through the reader (SSH in a run) running the same script there: here, on this machine. What
    cannot be asked is unseen (None), never taken for running."""
    for name, code in (("broker0", 0), ("broker1", 4), ("zk0", 3)):
        (tmp_path / name).mkdir()
        ctl = tmp_path / name / ("zookeeper-service" if name == "zk0" else "kafka-service")
        ctl.write_text(f"#!/bin/sh\n[ \"$1\" = status ] && exit {code}\nexit 9\n")
        ctl.chmod(0o755)
    brokers = tuple(inventory.Broker(f"broker{i}", i, "10.213.0.1", 9092 + i, str(tmp_path / f"broker{i}"))
                    for i in range(2))
    zookeeper = inventory.ZooKeeperServer("zk0", "10.213.0.2", 2181, str(tmp_path / "zk0"))
    elsewhere = inventory.ClusterInventory(tmp_path, brokers, (zookeeper,))
    asked: list[str] = []

    def shell(host: str, command: str) -> str | None:
        asked.append(host)
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else None

    probe = host_probe.process_state_probe(elsewhere, shell)
    assert [probe(n.host, n.ctl) for n in (*brokers, zookeeper)] == ["running", "paused", "stopped"]
    assert asked == ["broker0", "broker1", "zk0"], "each asked on its own inventory host"
    assert host_probe.process_state_probe(elsewhere)(brokers[0].host, brokers[0].ctl) is None, "no reader: unseen"
    assert host_probe.process_state_probe(elsewhere, lambda h, c: None)(zookeeper.host, zookeeper.ctl) is None, \
        "the host does not answer: unseen"
    missing = dataclasses.replace(brokers[0], conf_dir=str(tmp_path / "nowhere"))
    assert host_probe.process_state_probe(dataclasses.replace(elsewhere, brokers=(missing,)), shell)(
        missing.host, missing.ctl) is None, "no control script there (exit 127): unseen"
    systemd = dataclasses.replace(brokers[0], control="systemd")
    asked.clear()
    assert host_probe.process_state_probe(dataclasses.replace(elsewhere, brokers=(systemd,)), shell)(
        systemd.host, systemd.ctl) is None and not asked, "a unit under systemd is not the roles' script's"
    here = dataclasses.replace(brokers[1], host="127.0.0.1")
    asked.clear()
    assert host_probe.process_state_probe(dataclasses.replace(elsewhere, brokers=(here,)), shell)(
        here.host, here.ctl) == "paused" and not asked, "this machine's services are read here"


class KRaftNode:
    """A stand-in for `kafka_protocol.KafkaConnection`: nodes of `paused` accept the connection
    and never answer (a SIGSTOPped process: its kernel still accepts), each request put to one
    costing the connection's timeout; the others answer from broker 2's point of view."""

    def __init__(self, paused: set[str], asked: list[tuple[str, str]]) -> None:
        self.paused, self.asked = paused, asked
        self.waited = 0.0

    def __call__(self, address: str, timeout: float, settings=None):
        node = self

        class Connection:
            features = {"metadata.version": 30, "eligible.leader.replicas.version": 1}

            def _request(self, name):
                node.asked.append((address, name))
                if address in node.paused:
                    node.waited += timeout
                    raise TimeoutError(f"{address}: timed out")

            def describe_quorum(self):
                self._request("DescribeQuorum")
                return Quorum(2, 7, 100, tuple(Replica(i, 100, 0, 0) for i in range(3)), ())

            def describe_cluster(self):
                self._request("DescribeCluster")
                return "test-cluster", [BrokerInfo(i, "127.0.0.1", 9092 + i, False) for i in range(3)]

            def describe_topic_partitions(self, topic):
                self._request("DescribeTopicPartitions")
                return [PartitionInfo(0, 2, 5, (2, 0, 1), (2, 0, 1), (), (), ())]

            def close(self):
                pass

        return Connection()


@pytest.mark.parametrize(("read_quorum", "ask_last", "waits"), [
    (True, frozenset(), 4),  # DescribeQuorum and the brokers' side each wait on nodes 0 and 1
    (False, frozenset(), 2),  # the brokers' side only
    (False, frozenset({0, 1}), 0),  # the paused nodes asked last: the answering one is asked first
])
def test_a_fault_aimed_at_a_broker_does_not_wait_on_the_quorum_of_paused_kraft_nodes(monkeypatch, read_quorum,
                                                                                     ask_last, waits):
    """Two of three combined nodes paused: each request to one of them waits its timeout, and the
    quorum, without a majority, cannot answer through the third either. A broker fault's target
    (leader or follower of a partition) needs only the brokers' side (fenced brokers, ISR, ELR):
    without `read_quorum` the describe asks no DescribeQuorum, and with the nodes under a fault
    asked last it waits on none of them."""
    from benchmarks.kafka import kafka_protocol

    asked: list[tuple[str, str]] = []
    nodes = KRaftNode({"127.0.0.1:9092", "127.0.0.1:9093", "127.0.0.1:9192", "127.0.0.1:9193"}, asked)
    monkeypatch.setattr(kafka_protocol, "KafkaConnection", nodes)
    status = cluster.describe(inventory.load(KRAFT_INVENTORY), admin_factory=lambda _: FakeAdmin(
        [0, 1, 2], {0: (2, [2, 0, 1], [2, 0, 1])}), services=False, read_quorum=read_quorum, ask_last=ask_last)
    assert status.topic("purchases")[0].elr == ()  # the brokers' side was read
    quorum_asks = [a for a in asked if a[1] == "DescribeQuorum"]
    if read_quorum:
        assert (status.controller_id, status.quorum.leader_id) == (2, 2)
        assert quorum_asks == [("127.0.0.1:9092", "DescribeQuorum"), ("127.0.0.1:9093", "DescribeQuorum"),
                               ("127.0.0.1:9094", "DescribeQuorum")]
    else:
        assert (status.controller_id, status.quorum, quorum_asks) == (None, None, [])
    assert nodes.waited == waits * cluster.KRAFT_TIMEOUT_S
