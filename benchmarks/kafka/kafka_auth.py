"""TLS and SASL (SCRAM-SHA-256/512, PLAIN) for the harness's own wire-protocol connections.

`kafka_protocol.KafkaConnection` speaks the few requests librdkafka does not expose; on a
secured cluster it must first do what a client does: wrap the socket in TLS (verifying the
broker's certificate against the CA of the client settings), then authenticate with
SaslHandshake and SaslAuthenticate (RFC 5802 for SCRAM). The settings are librdkafka's, read
from the same `Connection` the harness's other clients use.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import socket
import ssl
from collections.abc import Mapping
from typing import Protocol

from .kafka_codec import ProtocolError, Reader, Writer


class KafkaConnection(Protocol):
    """What a login needs of a connection (kafka_protocol.KafkaConnection): its address, and one
    request and its answer on it."""

    address: str

    def request(self, api_key: int, version: int, body: Writer, flexible: bool = True) -> Reader: ...

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}


def tls_wrap(sock: socket.socket, host: str, props: Mapping[str, str]) -> ssl.SSLSocket:
    """The socket in TLS, the broker's certificate checked as librdkafka would with `props`."""
    context = ssl.create_default_context(cafile=props.get("ssl.ca.location"))
    if props.get("ssl.endpoint.identification.algorithm", "https").lower() == "none":
        context.check_hostname = False
    if str(props.get("enable.ssl.certificate.verification", "true")).lower() == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if "ssl.certificate.location" in props:
        context.load_cert_chain(props["ssl.certificate.location"], props.get("ssl.key.location"),
                                props.get("ssl.key.password"))
    try:
        return context.wrap_socket(sock, server_hostname=host)
    except (ssl.SSLError, OSError) as exc:
        sock.close()
        raise ProtocolError(f"{host}: TLS handshake failed: {exc}") from exc


def _escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _fields(message: bytes) -> dict[str, str]:
    return {part[:1]: part[2:] for part in message.decode().split(",") if len(part) >= 2 and part[1] == "="}


class Scram:
    """The client side of one SCRAM exchange (RFC 5802, no channel binding)."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str | None = None) -> None:
        self.hash, self.password = _HASHES[mechanism], password
        self.nonce = nonce or secrets.token_urlsafe(24)
        self.first_bare = f"n={_escape(user)},r={self.nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        f = _fields(server_first)
        if "e" in f:
            raise ProtocolError(f"SCRAM: the server refused: {f['e']}")
        if not f.get("r", "").startswith(self.nonce):
            raise ProtocolError("SCRAM: the server's nonce does not extend ours")
        salted = hashlib.pbkdf2_hmac(self.hash().name, self.password.encode(), base64.b64decode(f["s"]), int(f["i"]))
        client_key = hmac.digest(salted, b"Client Key", self.hash)
        without_proof = f"c=biws,r={f['r']}"
        auth = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.digest(self.hash(client_key).digest(), auth, self.hash)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self.server_signature = hmac.digest(hmac.digest(salted, b"Server Key", self.hash), auth, self.hash)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        f = _fields(server_final)
        if "e" in f:
            raise ProtocolError(f"SCRAM: authentication failed: {f['e']}")
        if not hmac.compare_digest(base64.b64decode(f.get("v", "")), self.server_signature):
            raise ProtocolError("SCRAM: the server's signature is wrong (not the broker we think it is)")


def _handshake(conn: KafkaConnection, mechanism: str) -> None:
    w = Writer().int16(len(mechanism))
    w.buf += mechanism.encode()
    r = conn.request(SASL_HANDSHAKE, 1, w, flexible=False)
    error = r.int16()
    if error:
        raise ProtocolError(f"{conn.address}: SASL mechanism {mechanism} refused (error {error})")


def _authenticate(conn: KafkaConnection, payload: bytes) -> bytes:
    w = Writer().uvarint(len(payload) + 1)
    w.buf += payload
    r: Reader = conn.request(SASL_AUTHENTICATE, 2, w.tags())
    error, message = r.int16(), r.string()
    if error:
        raise ProtocolError(f"{conn.address}: SASL authentication failed: {message or f'error {error}'}")
    n = r.uvarint() - 1
    return r.data[r.pos:r.pos + max(n, 0)]


def sasl_login(conn: KafkaConnection, props: Mapping[str, str]) -> None:
    """Authenticate `conn` with the SASL settings of `props` (sasl.mechanism, sasl.username, sasl.password)."""
    mechanism = props.get("sasl.mechanism", "GSSAPI").upper()
    user, password = props.get("sasl.username", ""), props.get("sasl.password", "")
    if mechanism not in (*_HASHES, "PLAIN"):
        raise ProtocolError(f"{conn.address}: SASL mechanism {mechanism} is not one the harness speaks "
                            f"(SCRAM-SHA-256, SCRAM-SHA-512, PLAIN)")
    _handshake(conn, mechanism)
    if mechanism == "PLAIN":
        _authenticate(conn, b"\0" + user.encode() + b"\0" + password.encode())
        return
    scram = Scram(mechanism, user, password)
    server_first = _authenticate(conn, scram.first())
    scram.verify(_authenticate(conn, scram.final(server_first)))
