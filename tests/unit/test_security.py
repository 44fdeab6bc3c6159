"""TLS material, ACL comparison, SCRAM, client settings: the pieces of a secured cluster that need no cluster."""

from __future__ import annotations

import base64
import datetime
import os
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.verification import PolicyBuilder, Store

from benchmarks.core import connection
from benchmarks.kafka import kafka_auth
from benchmarks.spec import scenario as scenario_lib
from benchmarks.spec.client_profile import ClientProfile
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.kafka_bench.cluster.plugins.filter import acls
from ansible_collections.kafka_bench.cluster.plugins.modules import tls_identity as tls


def _params(tmp_path, **over):
    return {"ca_dir": str(tmp_path / "ca"), "ca_subject": "test CA", "name": "broker0",
            "sans": ["127.0.0.1", "broker0.example"], "dest_dir": str(tmp_path / "hosts" / "broker0"),
            "password": "store-secret", "validity_days": 30, "renew_before_days": 5, **over}


def test_identity_is_issued_once_and_java_reads_its_stores(tmp_path):
    changed, got = tls.ensure_identity(_params(tmp_path), check_mode=False)
    assert changed
    again, same = tls.ensure_identity(_params(tmp_path), check_mode=False)
    assert not again and same == got
    cert = x509.load_pem_x509_certificate(Path(got["certificate"]).read_bytes())
    assert tls.cert_sans(cert) == {"127.0.0.1", "broker0.example"}
    store = pkcs12.load_pkcs12(Path(got["keystore"]).read_bytes(), b"store-secret")
    assert store.cert.certificate == cert and store.key is not None
    trust = pkcs12.load_pkcs12(Path(got["truststore"]).read_bytes(), b"store-secret")
    ca = x509.load_pem_x509_certificate(Path(got["ca_certificate"]).read_bytes())
    assert [c.certificate for c in trust.additional_certs] == [ca]
    assert oct(os.stat(got["key"]).st_mode & 0o777) == "0o600"


def test_the_identity_verifies_under_strict_path_validation(tmp_path):
    """Clients verifying strictly (Python 3.13's default context, cryptography's RFC 5280
    verifier) need both key identifiers; a chain without them fails there only."""
    _, got = tls.ensure_identity(_params(tmp_path), check_mode=False)
    cert = x509.load_pem_x509_certificate(Path(got["certificate"]).read_bytes())
    ca = x509.load_pem_x509_certificate(Path(got["ca_certificate"]).read_bytes())
    verifier = (PolicyBuilder().store(Store([ca])).time(datetime.datetime.now(datetime.timezone.utc))
                .build_server_verifier(x509.DNSName("broker0.example")))
    assert verifier.verify(cert, []) == [cert, ca]
    ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == ski.digest


def test_new_names_or_a_new_password_issue_again(tmp_path):
    _, first = tls.ensure_identity(_params(tmp_path), check_mode=False)
    before = Path(first["certificate"]).read_text()
    changed, second = tls.ensure_identity(_params(tmp_path, sans=["127.0.0.1"]), check_mode=False)
    assert changed and Path(second["certificate"]).read_text() != before
    cert = x509.load_pem_x509_certificate(Path(second["certificate"]).read_bytes())
    assert tls.cert_sans(cert) == {"127.0.0.1"}
    changed, _ = tls.ensure_identity(_params(tmp_path, sans=["127.0.0.1"], password="other-secret"), check_mode=False)
    assert changed
    pkcs12.load_pkcs12(Path(second["keystore"]).read_bytes(), b"other-secret")


def test_check_mode_writes_nothing(tmp_path):
    changed, _ = tls.ensure_identity(_params(tmp_path), check_mode=True)
    assert changed and not (tmp_path / "ca").exists()


def test_a_ca_key_of_another_ca_is_refused(tmp_path):
    tls.ensure_identity(_params(tmp_path), check_mode=False)
    other = tls.new_key()
    (tmp_path / "ca" / "ca.key").write_bytes(tls.key_pem(other))
    with pytest.raises(tls.TlsError, match="ca.key does not belong to ca.pem"):
        tls.ensure_identity(_params(tmp_path), check_mode=False)


def test_an_expired_ca_is_refused(tmp_path):
    key = tls.new_key()
    cert = tls.issue("old CA", key, None, None, 1, ca=True)
    builder = x509.CertificateBuilder().subject_name(cert.subject).issuer_name(cert.subject).public_key(
        key.public_key()).serial_number(1).not_valid_before(tls.now() - datetime.timedelta(days=10)).not_valid_after(
        tls.now() - datetime.timedelta(days=1))
    expired = builder.sign(key, tls.hashes.SHA256())
    (tmp_path / "ca").mkdir()
    (tmp_path / "ca" / "ca.key").write_bytes(tls.key_pem(key))
    (tmp_path / "ca" / "ca.pem").write_bytes(expired.public_bytes(serialization.Encoding.PEM))
    with pytest.raises(tls.TlsError, match="ca.pem expired on"):
        tls.ensure_identity(_params(tmp_path), check_mode=False)


def test_given_stores_are_checked_for_password_issuer_and_names(tmp_path):
    _, got = tls.ensure_identity(_params(tmp_path), check_mode=False)
    ok = {"verify_keystore": got["keystore"], "verify_truststore": got["truststore"], "password": "store-secret",
          "sans": ["127.0.0.1"]}
    assert tls.verify_stores(ok)["keystore"] == got["keystore"]
    with pytest.raises(tls.TlsError, match="does not open with the store password"):
        tls.verify_stores({**ok, "password": "wrong-one"})
    with pytest.raises(tls.TlsError, match=r"not valid for 10.0.0.9"):
        tls.verify_stores({**ok, "sans": ["10.0.0.9"]})
    _, stranger = tls.ensure_identity(_params(tmp_path, ca_dir=str(tmp_path / "other-ca"),
                                              dest_dir=str(tmp_path / "other")), check_mode=False)
    with pytest.raises(tls.TlsError, match="not signed by a CA of truststore"):
        tls.verify_stores({**ok, "verify_truststore": stranger["truststore"]})


def test_acls_asked_for_are_compared_with_what_kafka_acls_lists():
    listing = """Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=*, patternType=LITERAL)`:
	(principal=User:bench, host=*, operation=WRITE, permissionType=ALLOW)
	(principal=User:bench, host=*, operation=DESCRIBE_CONFIGS, permissionType=ALLOW)

Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`:
	(principal=User:bench, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)
	(principal=User:eve, host=*, operation=ALTER, permissionType=DENY)
"""
    present = acls.acls_present(listing)
    assert present == ["TOPIC|*|LITERAL|User:bench|WRITE", "TOPIC|*|LITERAL|User:bench|DESCRIBE_CONFIGS",
                       "CLUSTER|kafka-cluster|LITERAL|User:bench|IDEMPOTENT_WRITE"]
    topic = {"principal": "User:bench", "resource_type": "topic", "name": "*", "operations": ["Write", "DescribeConfigs"]}
    assert set(acls.acl_keys(topic)) <= set(present)
    cluster = {"principal": "User:bench", "resource_type": "cluster", "operations": ["IdempotentWrite", "Alter"]}
    assert set(acls.acl_keys(cluster)) - set(present) == {"CLUSTER|kafka-cluster|LITERAL|User:bench|ALTER"}


def test_scram_client_matches_rfc_7677():
    """The SCRAM-SHA-256 exchange of RFC 7677, section 3."""
    scram = kafka_auth.Scram("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert scram.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = scram.final(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    scram.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(kafka_auth.ProtocolError, match="signature is wrong"):
        scram.verify(b"v=" + base64.b64encode(b"x" * 32))


def test_client_settings_files_are_read_checked_and_never_shown(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    path = tmp_path / "sasl_ssl.properties"
    path.write_text(f"# comment\nbootstrap.servers=10.0.0.1:9092\nsecurity.protocol=SASL_SSL\nssl.ca.location={ca}\n"
                    "sasl.mechanism=SCRAM-SHA-512\nsasl.username=bench\nsasl.password=hunter22\n")
    conn = connection.from_file(path)
    assert conn.security == "sasl_ssl" and conn.bootstrap == "10.0.0.1:9092"
    assert conn.config({"acks": "all"})["sasl.password"] == "hunter22"
    assert conn.secrets() == ["hunter22"]
    assert "hunter22" not in repr(conn) and "hunter22" not in str(conn.summary())
    path.write_text(f"security.protocol=SSL\nssl.ca.location={ca}\nssl.certificate.location={ca}\n")
    assert connection.from_file(path, bootstrap="h:1").security == "mtls"


@pytest.mark.parametrize(("settings", "error"), [
    ("bootstrap.servers=h:1\nacks=all\n", "acks is not connection settings"),
    ("bootstrap.servers=h:1\nsecurity.protocol=ssl\nssl.ca.location=/nonexistent/ca.pem\n",
     "ssl.ca.location names /nonexistent/ca.pem"),
    ("bootstrap.servers=h:1\nsecurity.protocol=kerberos\n", "allowed: plaintext, ssl, sasl_ssl"),
    ("security.protocol=sasl_ssl\n", "bootstrap.servers is not set"),
    ("bootstrap.servers\n", "expected key=value"),
])
def test_bad_client_settings_files_are_refused_naming_file_and_key(tmp_path, settings, error):
    path = tmp_path / "client.properties"
    path.write_text(settings)
    with pytest.raises(connection.ConnectionSettingsError, match=error) as raised:
        connection.from_file(path)
    assert str(path) in str(raised.value)


def test_a_profile_the_cluster_does_not_offer_is_refused_with_those_it_does(tmp_path):
    assert connection.for_profile(tmp_path, "plaintext", "h:1") == connection.Connection.plaintext("h:1")
    (tmp_path / "sasl_ssl.properties").write_text("bootstrap.servers=h:1\nsecurity.protocol=sasl_ssl\n")
    with pytest.raises(connection.ConnectionSettingsError, match=r"no tls listener.*offers: sasl_ssl"):
        connection.for_profile(tmp_path, "tls", "h:1")


def test_connection_settings_stay_out_of_the_client_profile():
    with pytest.raises(ValueError, match="sasl.password, security.protocol: connection settings come from"):
        ClientProfile(consumer={"security.protocol": "sasl_ssl", "sasl.password": "x"})
    assert ClientProfile(security="sasl_ssl").security == "sasl_ssl"


def test_the_security_cost_suite_sweeps_the_profiles_and_skips_those_a_cluster_lacks():
    path = ROOT / "benchmarks" / "suites" / "security-cost" / "00-max-rate.yml"
    runs = scenario_lib.load(path)
    assert [r.scenario.client.security for r in runs] == ["plaintext", "tls", "mtls", "sasl_ssl"]
    shape = scenario_lib.ClusterShape(broker_ids=(0, 1, 2), hosts=1, metadata_mode="kraft", controller_ids=(0, 1, 2),
                                      client_profiles=("sasl_ssl",))
    runs = scenario_lib.load(path, shape)
    assert [r.scenario.client.security for r in runs if r.scenario] == ["sasl_ssl"]
    assert [r.skipped for r in runs if not r.scenario][0].startswith("the cluster has no plaintext listener "
                                                                      "(allowed here: sasl_ssl")
