"""A secured KRaft cluster from nothing (inventories/local-secure: every listener SASL_SSL, SCRAM-SHA-512
for clients and brokers, TLS from a CA the role creates, authorization on): a run through sasl_ssl
accounts for every message, bad client settings are refused before anything starts, a second deploy
changes nothing, and no secret is in any artifact.

The module deploys its cluster and tears it down at its end (the other modules use the same ports).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from cryptography.hazmat.primitives import serialization

from benchmarks import inventory, paths
from benchmarks.exit_codes import ExitCode
from tests.conftest import ROOT, assert_ok, listening_ports, run_cli

sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.kafka_bench.cluster.plugins.modules import tls_identity as tls

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SECURE = paths.INVENTORIES / "local-secure"
STATE = ROOT / ".state" / "local-secure"
PORTS = {9092, 9093, 9094, 9192, 9193, 9194}
SCENARIO = ROOT / "benchmarks" / "suites" / "kraft" / "03-leader-kill.yml"


@pytest.fixture(scope="module")
def secure(runner):
    """The secured cluster deployed from nothing: no CA, no secrets, no client settings left over."""
    assert_ok(runner.run("teardown.yml", SECURE))
    for leftover in ("ca", "secrets", "clients"):
        for path in sorted((STATE / leftover).rglob("*"), reverse=True) if (STATE / leftover).exists() else []:
            path.rmdir() if path.is_dir() else path.unlink()
        if (STATE / leftover).exists():
            (STATE / leftover).rmdir()
    assert not PORTS & listening_ports(), "a cluster still holds the ports: tear it down first"
    result = assert_ok(runner.run("site.yml", SECURE))
    yield inventory.load(SECURE), result
    runner.run("teardown.yml", SECURE)


@pytest.fixture(scope="module")
def secure_run(secure, tmp_path_factory) -> Path:
    """A leader-kill run (acks=all, RF 3, min ISR 2) whose every client goes through SASL_SSL."""
    results = tmp_path_factory.mktemp("secure-results")
    done = run_cli("run", str(SCENARIO), "-i", str(SECURE), "--quick", "--seed", "3", "--results", str(results))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return results


def _mode(path: Path) -> str:
    return oct(stat.S_IMODE(path.stat().st_mode))


def test_every_listener_is_secured_and_a_second_deploy_changes_nothing(secure, runner):
    inv, _ = secure
    assert inv.security == "sasl_ssl"
    props = dict(line.split("=", 1) for line in (STATE / "broker1" / "config" / "server.properties").read_text()
                 .splitlines() if "=" in line and not line.startswith("#"))
    assert props["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL,CONTROLLER:SASL_SSL"
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    assert props["sasl.mechanism.controller.protocol"] == "PLAIN"
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["ssl.keystore.type"] == "PKCS12"
    # Secrets: readable by their owner (and the service's group) only.
    assert _mode(STATE / "broker1" / "config" / "server.properties") == "0o640"
    assert _mode(STATE / "broker1" / "config" / "tls") == "0o750"
    assert _mode(STATE / "broker1" / "config" / "tls" / "keystore.p12") == "0o640"
    assert _mode(STATE / "clients" / "sasl_ssl.properties") == "0o600"
    assert _mode(STATE / "ca" / "ca.key") == "0o600"
    # Nothing answers in plaintext.
    with pytest.raises(KafkaException):
        AdminClient({"bootstrap.servers": inv.bootstrap_servers, "socket.timeout.ms": 3000}).list_topics(timeout=5)
    second = assert_ok(runner.run("site.yml", SECURE))
    assert second.count("changed") == 0


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


def test_bad_client_settings_are_refused_before_anything_starts(secure, tmp_path):
    good = (STATE / "clients" / "sasl_ssl.properties").read_text()
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
        done = run_cli("run", str(SCENARIO), "-i", str(SECURE), "--quick", "--client-config", str(config),
                       "--results", str(results), timeout=300)
        assert done.returncode == ExitCode.INVALID_INPUT, (name, done.stdout[-2000:], done.stderr[-2000:])
        out = done.stdout + done.stderr
        assert reason in out and str(config) in out, (name, out[-2000:])
        assert "wrong" not in out.replace(str(config), "").replace("wrong-password", ""), "the password was shown"
        assert not results.exists(), f"{name}: a run directory was created"


def _artifacts(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file() and not p.is_symlink()]


def test_no_secret_in_any_artifact(secure, secure_run, runner):
    secrets = [p.read_text().strip() for p in (STATE / "secrets").iterdir()]
    assert len(secrets) == 3 and all(len(s) >= 16 for s in secrets)
    keys = [STATE / "ca" / "ca.key", *(STATE / "ca" / "hosts").glob("*/*.key")]
    key_lines = [line for k in keys for line in k.read_text().splitlines()[1:-1]]
    needles = [s.encode() for s in secrets] + [b"PRIVATE KEY"] + [line.encode() for line in key_lines[:8]]
    found = []
    for path in _artifacts(secure_run, Path(runner.artifact_root), *(STATE / f"broker{i}" / "logs" for i in range(3))):
        data = path.read_bytes()
        found += [f"{path}: {n[:12]!r}..." for n in needles if n in data]
    assert not found, found
    assert os.path.getsize(next(secure_run.glob("*/report.html"))) > 0
