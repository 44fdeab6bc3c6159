"""Secured clusters from nothing, in both metadata modes: inventories/local-secure (KRaft) and
local-secure-zk (ZooKeeper mode, ZooKeeper itself on TLS with SASL logins and the brokers' znodes
locked to theirs). Every listener SASL_SSL, SCRAM-SHA-512 for clients and brokers, TLS from a CA the
roles create, authorization on: a run through sasl_ssl accounts for every message, bad client
settings are refused before anything starts, a second deploy changes nothing, and no secret is in
any artifact.

Each cluster is deployed in turn and torn down after its tests (they share the same ports).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from cryptography.hazmat.primitives import serialization

from benchmarks.core import paths
from benchmarks.core.exit_codes import ExitCode
from benchmarks.hosts import inventory
from benchmarks.kafka import cluster as cluster_mod
from tests.conftest import ROOT, assert_ok, listening_ports, run_cli

sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.kafka_bench.cluster.plugins.modules import tls_identity as tls

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PORTS = {2181, 9092, 9093, 9094, 9192, 9193, 9194}


@dataclasses.dataclass(frozen=True)
class Secured:
    """One secured inventory: where its state lives and the leader-kill scenario of its mode."""

    name: str
    scenario: Path

    @property
    def path(self) -> Path:
        return paths.INVENTORIES / self.name

    @property
    def state(self) -> Path:
        return ROOT / ".state" / self.name


KRAFT = Secured("local-secure", ROOT / "benchmarks" / "suites" / "kraft" / "03-leader-kill.yml")
ZOOKEEPER = Secured("local-secure-zk", ROOT / "benchmarks" / "suites" / "durability" / "01-leader-kill-acks-all.yml")


# `make test` secures the KRaft cluster (what a new cluster runs); the ZooKeeper one, with its
# ensemble's TLS and SASL, is the same check again on a second deployment: `make test-full`.
@pytest.fixture(scope="module", params=[KRAFT, pytest.param(ZOOKEEPER, marks=pytest.mark.long)],
                ids=["kraft", "zookeeper"])
def secure(request, runner):
    """The secured cluster deployed from nothing: no CA, no secrets, no client settings left over."""
    cluster: Secured = request.param
    assert_ok(runner.run("teardown.yml", cluster.path))
    for leftover in ("ca", "secrets", "clients"):
        root = cluster.state / leftover
        for path in sorted(root.rglob("*"), reverse=True) if root.exists() else []:
            path.rmdir() if path.is_dir() else path.unlink()
        if root.exists():
            root.rmdir()
    assert not PORTS & listening_ports(), "a cluster still holds the ports: tear it down first"
    result = assert_ok(runner.run("site.yml", cluster.path))
    yield cluster, inventory.load(cluster.path), result
    runner.run("teardown.yml", cluster.path)


@pytest.fixture(scope="module")
def secure_run(secure, tmp_path_factory) -> Path:
    """A leader-kill run (acks=all, RF 3, min ISR 2) whose every client goes through SASL_SSL."""
    cluster, _, _ = secure
    results = tmp_path_factory.mktemp("secure-results")
    done = run_cli("run", str(cluster.scenario), "-i", str(cluster.path), "--quick", "--seed", "3", "--results", str(results))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return results


@pytest.fixture(scope="module")
def secure_java_run(secure, tmp_path_factory) -> Path:
    """A run on Kafka's Java producer whose every client goes through SASL_SSL: the producer reads
    the <profile>-java.properties the kafka role wrote beside the librdkafka settings."""
    cluster, _, _ = secure
    out = tmp_path_factory.mktemp("secure-java")
    scenario = out / "java-sasl.yml"
    scenario.write_text("scenario:\n  name: java-sasl\n  workload: {partitions: 3, producers: 1, rate: 500, warmup_s: 2,"
                        " duration_s: 12, consumer_groups: [{name: readers, consumers: 1}]}\n"
                        "  client: {producer_library: java, producer: {acks: all, linger.ms: 5}}\n")
    done = run_cli("run", str(scenario), "-i", str(cluster.path), "--seed", "3", "--results", str(out / "results"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out / "results"


def _mode(path: Path) -> str:
    return oct(stat.S_IMODE(path.stat().st_mode))


def _properties(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))


def test_every_listener_is_secured_and_a_second_deploy_changes_nothing(secure, runner):
    cluster, inv, _ = secure
    state = cluster.state
    assert inv.security == "sasl_ssl"
    props = _properties(state / "broker1" / "config" / "server.properties")
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["ssl.keystore.type"] == "PKCS12"
    if inv.metadata_mode == "kraft":
        assert props["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL"
        assert props["sasl.mechanism.controller.protocol"] == "PLAIN"
        assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    else:
        assert props["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL"
        assert props["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
        assert props["zookeeper.ssl.client.enable"] == "true" and props["zookeeper.set.acl"] == "true"
        _assert_zookeeper_speaks_tls_only_refuses_sessions_without_sasl_and_locks_the_brokers_znodes(cluster, inv)
    # Secrets: readable by their owner (and the service's group) only.
    assert _mode(state / "broker1" / "config" / "server.properties") == "0o640"
    assert _mode(state / "broker1" / "config" / "tls") == "0o750"
    assert _mode(state / "broker1" / "config" / "tls" / "keystore.p12") == "0o640"
    assert _mode(state / "clients" / "sasl_ssl.properties") == "0o600"
    assert _mode(state / "ca" / "ca.key") == "0o600"
    # Nothing answers in plaintext.
    with pytest.raises(KafkaException):
        AdminClient({"bootstrap.servers": inv.bootstrap_servers, "socket.timeout.ms": 3000}).list_topics(timeout=5)
    second = assert_ok(runner.run("site.yml", cluster.path))
    assert second.count("changed") == 0


def _assert_zookeeper_speaks_tls_only_refuses_sessions_without_sasl_and_locks_the_brokers_znodes(
        cluster: Secured, inv: inventory.ClusterInventory) -> None:
    """ZooKeeper mode's listener besides the brokers': the ensemble's."""
    [zk] = inv.zookeepers
    zoo_cfg = cluster.state / "zk0" / "config" / "zoo.cfg"
    settings = _properties(zoo_cfg)
    assert "clientPort" not in settings and settings["secureClientPort"] == "2181"
    assert settings["enforce.auth.enabled"] == "true" and _mode(zoo_cfg) == "0o640"
    assert _mode(cluster.state / "zk0" / "config" / "tls" / "jaas.conf") == "0o640"
    # Four-letter words answer over TLS only, with a certificate from the cluster CA.
    assert cluster_mod.zookeeper_mode(zk) == "standalone"
    assert cluster_mod.zookeeper_mode(dataclasses.replace(zk, tls_ca=None)) is None
    tool = cluster.state / "broker0" / "config" / "kafka-tool"
    acl = subprocess.run([str(tool), "zookeeper-shell", "getAcl", "/brokers/ids"], capture_output=True, text=True, timeout=120)
    assert "'sasl,'kafka" in acl.stdout and ": cdrwa" in acl.stdout, acl.stdout + acl.stderr
    assert "'world,'anyone\n: r" in acl.stdout, "everyone may read, nobody else may write"
    # The same tool without its SASL login: ZooKeeper closes the session.
    anonymous = Path(cluster.state / "tool-without-login")
    anonymous.write_text(re.sub(r"(?m)^ZK_JAAS=.*$", "ZK_JAAS=''", tool.read_text()))
    refused = subprocess.run(["sh", str(anonymous), "zookeeper-shell", "ls", "/brokers/ids"], capture_output=True, text=True,
                             timeout=120)
    anonymous.unlink()
    assert "client failed to authenticate" in refused.stdout + refused.stderr, refused.stdout + refused.stderr


def test_a_run_through_sasl_ssl_accounts_for_every_message(secure_run):
    [summary_path] = secure_run.glob("*/*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["security"] == "sasl_ssl" and summary["valid"], summary.get("invalid_reasons")
    assert summary["sent"] > 0 and summary["acked"] == summary["sent"] and summary["acked_lost"] == 0
    assert summary["final_read"] == summary["acked"]
    assert summary["faults"] and summary["faults"][0]["kind"] == "broker-kill"
    effective = json.loads((summary_path.parent / "effective-config.json").read_text())
    assert effective["connection"]["sasl.username"] == "bench"
    assert (summary_path.parents[1] / "report.html").is_file()


def test_kafkas_java_producer_runs_through_sasl_ssl_and_keeps_its_password_out_of_the_run(secure_java_run):
    """Every message the Java producer sent through SASL_SSL acknowledged and read back; the run
    directory keeps its settings with the JAAS login (the password) masked, and the private copy
    it read them from is gone."""
    [summary_path] = secure_java_run.glob("*/*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["security"] == "sasl_ssl" and summary["valid"], summary.get("invalid_reasons")
    assert summary["sent"] > 4000 and summary["acked"] == summary["sent"] and summary["acked_lost"] == 0
    assert summary["final_read"] == summary["acked"]
    produce = summary_path.parent / "ledger" / "produce"
    meta = json.loads((produce / "producer-000.json").read_text())
    assert meta["client"].startswith("Kafka Java producer 4.3.1")
    assert meta["messages"] == summary["sent"] and meta["cpu_s"] > 1.0, meta  # a JVM's start alone costs over a second
    settings = _properties(produce / "producer-000.java.properties")
    assert settings["producer.security.protocol"] == "SASL_SSL" and settings["producer.sasl.mechanism"] == "SCRAM-SHA-512"
    assert settings["producer.sasl.jaas.config"] == "***"
    assert not list(Path(tempfile.gettempdir()).glob("kafka-bench-producer-*")), "the private settings are removed"


def test_the_benchmarks_user_may_touch_its_own_names_only(secure):
    """The ACLs grant the bench user topics named kb-... and groups kafka-bench-..., by prefix, and
    nothing else: a topic of another name cannot be created, a group of another name not joined."""
    _, inv, _ = secure
    conn = inv.connection()
    admin = AdminClient(conn.config({}))
    futures = admin.create_topics([NewTopic("purchases-not-the-benchmarks", 1, 1), NewTopic("kb-acl-probe", 1, 1)])
    with pytest.raises(KafkaException) as refused:
        futures["purchases-not-the-benchmarks"].result(timeout=30)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    futures["kb-acl-probe"].result(timeout=30)
    consumer = Consumer(conn.config({"group.id": "not-the-benchmarks", "session.timeout.ms": 6000}))
    errors: list[int] = []
    try:
        consumer.subscribe(["kb-acl-probe"])
        deadline = time.monotonic() + 60
        while KafkaError.GROUP_AUTHORIZATION_FAILED not in errors and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is not None:
                errors.append(message.error().code())
    except KafkaException as exc:  # raised instead of returned by some client versions
        errors.append(exc.args[0].code())
    finally:
        consumer.close()
        admin.delete_topics(["kb-acl-probe"])["kb-acl-probe"].result(timeout=30)
    assert KafkaError.GROUP_AUTHORIZATION_FAILED in errors, errors


def test_bad_client_settings_are_refused_before_anything_starts(secure, tmp_path):
    cluster, inv, _ = secure
    if inv.metadata_mode != "kraft":
        pytest.skip("the client refuses bad settings itself, whatever the metadata mode: checked on KRaft")
    good = (cluster.state / "clients" / "sasl_ssl.properties").read_text()
    cases = {"wrong-password": (good.replace("sasl.password=", "sasl.password=wrong"), "Authentication failed"),
             "untrusted-ca": ("\n".join(line if not line.startswith("ssl.ca.location=")
                                        else f"ssl.ca.location={tmp_path / 'other-ca.pem'}" for line in good.splitlines()),
                              "certificate verify failed")}
    # A CA the cluster's certificates are not signed by.
    key = tls.new_key()
    (tmp_path / "other-ca.pem").write_bytes(tls.issue("other CA", key, None, None, 30, ca=True)
                                            .public_bytes(serialization.Encoding.PEM))
    for name, (settings, reason) in cases.items():
        config, results = tmp_path / f"{name}.properties", tmp_path / f"results-{name}"
        config.write_text(settings)
        done = run_cli("run", str(cluster.scenario), "-i", str(cluster.path), "--quick", "--client-config", str(config),
                       "--results", str(results), timeout=300)
        assert done.returncode == ExitCode.INVALID_INPUT, (name, done.stdout[-2000:], done.stderr[-2000:])
        out = done.stdout + done.stderr
        assert reason in out and str(config) in out, (name, out[-2000:])
        assert "wrong" not in out.replace(str(config), "").replace("wrong-password", ""), "the password was shown"
        assert not results.exists(), f"{name}: a run directory was created"


def _artifacts(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


def test_no_secret_in_any_artifact(secure, secure_run, secure_java_run, runner):
    cluster, _, _ = secure
    state = cluster.state
    secrets = [p.read_text().strip() for p in (state / "secrets").iterdir()]
    assert len(secrets) >= 3 and all(len(s) >= 16 for s in secrets)
    keys = [state / "ca" / "ca.key", *(state / "ca" / "hosts").glob("*/*.key")]
    key_lines = [line for k in keys for line in k.read_text().splitlines()[1:-1]]
    needles = [s.encode() for s in secrets] + [b"PRIVATE KEY"] + [line.encode() for line in key_lines[:8]]
    found = []
    logs = [state / host / "logs" for host in ("broker0", "broker1", "broker2", "zk0")]
    for path in _artifacts(secure_run, secure_java_run, Path(runner.artifact_root), *logs):
        data = path.read_bytes()
        found += [f"{path}: {n[:12]!r}..." for n in needles if n in data]
    assert not found, found
    assert os.path.getsize(next(secure_run.glob("*/report.html"))) > 0
