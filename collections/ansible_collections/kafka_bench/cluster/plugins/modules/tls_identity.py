#!/usr/bin/python
# -*- coding: utf-8 -*-
"""A cluster CA and the certificates it signs, as PEM files and PKCS12 key/trust stores."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tls_identity
short_description: Keep a cluster CA and one identity it signs (PEM and PKCS12 stores)
description:
  - Creates the cluster CA in O(ca_dir) (C(ca.key), C(ca.pem)) when it holds none, or uses the
    CA found there (a user-provided CA, whose key must match its certificate, and which must be valid).
  - Keeps, in O(dest_dir), the identity O(name), that is C(<name>.key) and C(<name>.pem) (a certificate
    signed by the CA with O(sans) as subject alternative names), and with O(password) the PKCS12
    stores C(<name>.keystore.p12) (key and certificate chain) and C(truststore.p12) (the CA as a
    trusted entry Java reads).
  - Idempotent. A certificate is issued again only when it is missing, not signed by this CA,
    names other SANs or expires within O(renew_before_days); a store is written again only when
    it is missing, does not open with O(password) or holds another certificate.
  - With O(verify_keystore), generates nothing, but checks a user-provided keystore and truststore
    (they open with O(password), the certificate is valid now, is signed by a CA of the truststore
    and covers O(sans)) and fails with the cause.
  - Supports check mode.
options:
  ca_dir:
    description: Directory of the CA (C(ca.key), C(ca.pem)); created with mode 0700.
    type: path
  ca_subject:
    description: Common name of a CA this module creates.
    type: str
    default: kafka-bench cluster CA
  name:
    description: Name of the identity; also its certificate's common name.
    type: str
    required: true
  sans:
    description: Host names and IP addresses the certificate is valid for.
    type: list
    elements: str
    default: []
  dest_dir:
    description: Directory of the identity's files (mode 0700).
    type: path
  password:
    description: Password of the PKCS12 stores; none writes PEM files only.
    type: str
    no_log: true
  validity_days:
    description: Validity of issued certificates (the CA gets ten times as long).
    type: int
    default: 825
  renew_before_days:
    description: A certificate expiring within this many days is issued again.
    type: int
    default: 30
  verify_keystore:
    description: A user-provided PKCS12 keystore to check instead of generating anything.
    type: path
  verify_truststore:
    description: The PKCS12 truststore that goes with O(verify_keystore).
    type: path
author: kafka-bench developers
"""

EXAMPLES = r"""
- name: Issue broker0's certificate and stores
  kafka_bench.cluster.tls_identity:
    ca_dir: /srv/kafka-ca
    name: broker0
    sans: [broker0.example.com, 10.0.0.10]
    dest_dir: /srv/kafka-ca/hosts/broker0
    password: "{{ kafka_tls_store_password }}"
  delegate_to: localhost
"""

RETURN = r"""
keystore:
  description: Path of the PKCS12 keystore (with O(password)).
  returned: success
  type: str
truststore:
  description: Path of the PKCS12 truststore (with O(password)).
  returned: success
  type: str
certificate:
  description: Path of the identity's PEM certificate.
  returned: success
  type: str
key:
  description: Path of the identity's PEM private key.
  returned: success
  type: str
ca_certificate:
  description: Path of the CA certificate (PEM).
  returned: success
  type: str
not_after:
  description: Expiry of the identity's certificate (ISO 8601, UTC).
  returned: success
  type: str
"""

import datetime
import ipaddress
import os

from ansible.module_utils.basic import AnsibleModule

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    HAS_CRYPTOGRAPHY = True
except ImportError:  # pragma: no cover - reported by the module
    HAS_CRYPTOGRAPHY = False


class TlsError(Exception):
    """A CA, certificate or store is unusable; the message says which and why."""


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def san_entries(sans):
    out = []
    for value in sans:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(value)))
        except ValueError:
            out.append(x509.DNSName(value))
    return out


def cert_sans(cert):
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(v) for v in ext.get_values_for_type(x509.DNSName)} | {
        str(v) for v in ext.get_values_for_type(x509.IPAddress)}


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def same_public_key(a, b):
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return a.public_bytes(*fmt) == b.public_bytes(*fmt)


def issue(subject_cn, key, issuer_cert, issuer_key, days, sans=None, ca=False):
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)])
    start = now() - datetime.timedelta(minutes=5)
    builder = (x509.CertificateBuilder()
               .subject_name(subject)
               .issuer_name(issuer_cert.subject if issuer_cert is not None else subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(start)
               .not_valid_after(start + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               # Both key identifiers: OpenSSL's strict verification (Python 3.13's default
               # context) refuses a chain without them.
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                   (issuer_key if issuer_key is not None else key).public_key()), critical=False))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
            critical=True)
    else:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=True, data_encipherment=False,
            key_agreement=False, key_cert_sign=False, crl_sign=False, encipher_only=False, decipher_only=False),
            critical=True).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(san_entries(sans)), critical=False)
    return builder.sign(issuer_key if issuer_key is not None else key, hashes.SHA256())


def write(path, data, check_mode):
    if not check_mode:
        fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(path + ".tmp", path)


def ensure_dir(path, check_mode):
    if not os.path.isdir(path) and not check_mode:
        os.makedirs(path, mode=0o700)


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def ensure_ca(ca_dir, subject, days, check_mode):
    """The CA's key and certificate, created when the directory holds neither; changed flag."""
    key_path, cert_path = os.path.join(ca_dir, "ca.key"), os.path.join(ca_dir, "ca.pem")
    has_key, has_cert = os.path.exists(key_path), os.path.exists(cert_path)
    if has_key != has_cert:
        raise TlsError(f"CA in {ca_dir}: {'ca.key' if has_key else 'ca.pem'} is there but "
                       f"{'ca.pem' if has_key else 'ca.key'} is not; give both, or neither to have one created")
    if has_cert:
        try:
            cert = x509.load_pem_x509_certificate(read(cert_path))
            key = serialization.load_pem_private_key(read(key_path), password=None)
        except ValueError as exc:
            raise TlsError(f"CA in {ca_dir}: cannot read ca.pem / ca.key ({exc})") from exc
        if not same_public_key(cert.public_key(), key.public_key()):
            raise TlsError(f"CA in {ca_dir}: ca.key does not belong to ca.pem (mismatched key)")
        if cert.not_valid_after_utc <= now():
            raise TlsError(f"CA in {ca_dir}: ca.pem expired on {cert.not_valid_after_utc.isoformat()}")
        return cert, key, False
    ensure_dir(ca_dir, check_mode)
    key = new_key()
    cert = issue(subject, key, None, None, days * 10, ca=True)
    write(key_path, key_pem(key), check_mode)
    write(cert_path, cert.public_bytes(serialization.Encoding.PEM), check_mode)
    return cert, key, True


def signed_by(cert, ca_cert):
    try:
        cert.verify_directly_issued_by(ca_cert)
        return True
    except Exception:  # noqa: BLE001 - InvalidSignature, ValueError, TypeError: not signed by it
        return False


def current_identity(p, ca_cert, sans, renew_before_days):
    """The identity's key and certificate when they are there and still good, else None."""
    if not (os.path.exists(p["key"]) and os.path.exists(p["certificate"])):
        return None
    try:
        key = serialization.load_pem_private_key(read(p["key"]), password=None)
        cert = x509.load_pem_x509_certificate(read(p["certificate"]))
    except ValueError:
        return None
    good = (same_public_key(cert.public_key(), key.public_key()) and signed_by(cert, ca_cert)
            and cert_sans(cert) == set(sans)
            and cert.not_valid_after_utc > now() + datetime.timedelta(days=renew_before_days))
    return (key, cert) if good else None


def store_holds(path, password, cert):
    try:
        loaded = pkcs12.load_pkcs12(read(path), password.encode())
    except (OSError, ValueError):
        return False
    if cert is None:
        return True
    return loaded.cert is not None and loaded.cert.certificate == cert


def truststore_holds(path, password, ca_cert):
    try:
        loaded = pkcs12.load_pkcs12(read(path), password.encode())
    except (OSError, ValueError):
        return False
    return [c.certificate for c in loaded.additional_certs] == [ca_cert]


def ensure_identity(params, check_mode):
    changed = False
    ca_cert, ca_key, changed = ensure_ca(params["ca_dir"], params["ca_subject"], params["validity_days"], check_mode)
    name, dest, password = params["name"], params["dest_dir"], params["password"]
    paths = {"key": os.path.join(dest, f"{name}.key"), "certificate": os.path.join(dest, f"{name}.pem"),
             "ca_certificate": os.path.join(params["ca_dir"], "ca.pem")}
    ensure_dir(dest, check_mode)
    current = None if changed else current_identity(paths, ca_cert, params["sans"], params["renew_before_days"])
    if current is None:
        key = new_key()
        cert = issue(name, key, ca_cert, ca_key, params["validity_days"], sans=params["sans"])
        write(paths["key"], key_pem(key), check_mode)
        write(paths["certificate"], cert.public_bytes(serialization.Encoding.PEM), check_mode)
        changed = True
    else:
        key, cert = current
    result = dict(paths, not_after=cert.not_valid_after_utc.isoformat())
    if password:
        encryption = serialization.BestAvailableEncryption(password.encode())
        keystore, truststore = os.path.join(dest, f"{name}.keystore.p12"), os.path.join(dest, "truststore.p12")
        if changed or not store_holds(keystore, password, cert):
            write(keystore, pkcs12.serialize_key_and_certificates(name.encode(), key, cert, [ca_cert], encryption),
                  check_mode)
            changed = True
        if changed or not truststore_holds(truststore, password, ca_cert):
            write(truststore, pkcs12.serialize_java_truststore(
                [pkcs12.PKCS12Certificate(ca_cert, b"cluster-ca")], encryption), check_mode)
            changed = True
        result.update(keystore=keystore, truststore=truststore)
    return changed, result


def verify_stores(params):
    """Check a user-provided keystore and truststore; raise TlsError naming the cause."""
    keystore, truststore, password = params["verify_keystore"], params["verify_truststore"], params["password"] or ""
    stores = {}
    for label, path in (("keystore", keystore), ("truststore", truststore)):
        if not path or not os.path.exists(path):
            raise TlsError(f"{label} {path or '(none given)'} does not exist")
        try:
            stores[label] = pkcs12.load_pkcs12(read(path), password.encode())
        except ValueError as exc:
            raise TlsError(f"{label} {path} does not open with the store password (wrong password, or not PKCS12)") from exc
    ks = stores["keystore"]
    if ks.key is None or ks.cert is None:
        raise TlsError(f"keystore {keystore} holds no private key with its certificate")
    cert = ks.cert.certificate
    if not same_public_key(cert.public_key(), ks.key.public_key()):
        raise TlsError(f"keystore {keystore}: the private key does not belong to the certificate (mismatched key)")
    if cert.not_valid_after_utc <= now():
        raise TlsError(f"keystore {keystore}: the certificate expired on {cert.not_valid_after_utc.isoformat()}")
    if cert.not_valid_before_utc > now():
        raise TlsError(f"keystore {keystore}: the certificate is not valid before {cert.not_valid_before_utc.isoformat()}")
    trusted = [c.certificate for c in stores["truststore"].additional_certs]
    intermediates = [c.certificate for c in ks.additional_certs if any(signed_by(c.certificate, t) for t in trusted)]
    if not any(signed_by(cert, issuer) for issuer in trusted + intermediates):
        raise TlsError(f"keystore {keystore}: the certificate ({cert.subject.rfc4514_string()}) is not signed by a CA "
                       f"of truststore {truststore} (untrusted issuer {cert.issuer.rfc4514_string()})")
    missing = set(params["sans"]) - cert_sans(cert)
    if missing:
        raise TlsError(f"keystore {keystore}: the certificate is not valid for {', '.join(sorted(missing))} "
                       f"(it names {', '.join(sorted(cert_sans(cert))) or 'no alternative names'})")
    return {"keystore": keystore, "truststore": truststore, "not_after": cert.not_valid_after_utc.isoformat()}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            ca_dir=dict(type="path"),
            ca_subject=dict(type="str", default="kafka-bench cluster CA"),
            name=dict(type="str", required=True),
            sans=dict(type="list", elements="str", default=[]),
            dest_dir=dict(type="path"),
            password=dict(type="str", no_log=True),
            validity_days=dict(type="int", default=825),
            renew_before_days=dict(type="int", default=30),
            verify_keystore=dict(type="path"),
            verify_truststore=dict(type="path"),
        ),
        required_by={"verify_keystore": ("verify_truststore", "password")},
        supports_check_mode=True,
    )
    if not module.params["verify_keystore"] and not (module.params["ca_dir"] and module.params["dest_dir"]):
        module.fail_json(msg="tls_identity: ca_dir and dest_dir are required unless verify_keystore is given")
    if not HAS_CRYPTOGRAPHY:
        module.fail_json(msg="tls_identity needs the Python package cryptography (45 or later) on the host it runs on")
    try:
        if module.params["verify_keystore"]:
            module.exit_json(changed=False, **verify_stores(module.params))
        changed, result = ensure_identity(module.params, module.check_mode)
    except (TlsError, OSError) as exc:
        module.fail_json(msg=f"TLS material of {module.params['name']}: {exc}")
    module.exit_json(changed=changed, **result)


if __name__ == "__main__":
    main()
