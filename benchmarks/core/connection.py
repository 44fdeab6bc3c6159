"""How clients reach a cluster: its bootstrap servers and security settings, as one typed record.

Every client the harness creates (producers, consumers, the admin client, the timeline's
watermark reader) takes its settings from a `Connection`. The settings come from the client
settings the kafka role writes per client listener (`.state/<inventory>/clients/<profile>.properties`,
librdkafka format), from a file the user gives (`--client-config`, for a cluster deployed by
something else), or are plain bootstrap servers. A `Connection` holds secrets (a SASL password):
it never prints them, and nothing of it but its profile and bootstrap servers goes into a run
directory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: The client security profiles a scenario can ask for (`client.security`).
PROFILES = ("plaintext", "tls", "mtls", "sasl_ssl")
#: Settings a client-settings file may hold: how to connect and authenticate, nothing else
#: (producer and consumer behaviour belongs to the scenario's client profile).
_ALLOWED_KEYS = ("bootstrap.servers", "security.protocol", "client.dns.lookup")
_ALLOWED_PREFIXES = ("ssl.", "sasl.", "enable.ssl.")
# A setting whose key holds one of these holds a secret (the Java client's sasl.jaas.config: the password).
_SECRET_WORDS = ("password", "secret", ".pem", "token", "jaas")


def secret_key(key: str) -> bool:
    """Whether a client setting of this key holds a secret."""
    return any(word in key for word in _SECRET_WORDS)
_FILE_KEYS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.keystore.location",
              "ssl.crl.location")
_PROTOCOLS = {"plaintext": "plaintext", "ssl": "tls", "sasl_ssl": "sasl_ssl", "sasl_plaintext": "sasl_plaintext"}


class ConnectionSettingsError(ValueError):
    """Client settings that cannot be used; the message names the file, the key and what is allowed."""


@dataclasses.dataclass(frozen=True)
class Connection:
    bootstrap: str
    security: str = "plaintext"
    # librdkafka settings besides bootstrap.servers (security.protocol, ssl.*, sasl.*); secrets inside.
    properties: tuple[tuple[str, str], ...] = ()
    source: str | None = None  # the file the settings came from, if any

    @classmethod
    def plaintext(cls, bootstrap: str) -> Connection:
        return cls(bootstrap)

    def config(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """librdkafka configuration: `extra` (the client's own settings) under the connection's."""
        return {**(extra or {}), **dict(self.properties), "bootstrap.servers": self.bootstrap}

    @property
    def secured(self) -> bool:
        return self.security != "plaintext"

    def secrets(self) -> list[str]:
        """The secret values (passwords): what must never appear in an artifact."""
        return [v for k, v in self.properties if secret_key(k) and v]

    def summary(self) -> dict[str, Any]:
        """What a run directory may record about the connection: no secret, no key material."""
        props = dict(self.properties)
        return {"security": self.security, "bootstrap": self.bootstrap, "source": self.source,
                "security.protocol": props.get("security.protocol", "plaintext"),
                "sasl.mechanism": props.get("sasl.mechanism"), "sasl.username": props.get("sasl.username")}

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={'***' if secret_key(k) else v}" for k, v in self.properties)
        return f"Connection({self.security} {self.bootstrap}{'; ' + shown if shown else ''})"

    __str__ = __repr__


def parse_properties(path: Path) -> dict[str, str]:
    """key=value (or key: value) lines; # and ! start comments."""
    out: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if sep < 0:
            raise ConnectionSettingsError(f"{path}:{number}: expected key=value, got {line[:40]!r}")
        out[line[:sep].strip()] = line[sep + 1:].strip()
    return out


def check_bootstrap(value: str, where: str) -> str:
    """`value` as a bootstrap list (HOST:PORT[,HOST:PORT...], ports 1 to 65535); an error naming
    `where` (an option, a file's key) and the entry otherwise."""
    entries = [e.strip() for e in value.split(",")]
    for entry in entries:
        host, _, port = entry.rpartition(":")
        if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ConnectionSettingsError(f"{where}: {entry!r} is not HOST:PORT (a port from 1 to 65535); "
                                          "allowed: HOST:PORT[,HOST:PORT...]")
    return ",".join(entries)


def from_file(path: Path | str, bootstrap: str | None = None) -> Connection:
    """A connection from a librdkafka client-settings file; `bootstrap` overrides the file's."""
    path = Path(path)
    if not path.is_file():
        raise ConnectionSettingsError(f"{path}: no such client settings file")
    props = parse_properties(path)
    unknown = sorted(k for k in props if k not in _ALLOWED_KEYS and not k.startswith(_ALLOWED_PREFIXES))
    if unknown:
        raise ConnectionSettingsError(
            f"{path}: {', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not connection settings; a client "
            f"settings file holds {', '.join(_ALLOWED_KEYS)} and ssl.*, sasl.* (producer and consumer settings go "
            f"into the scenario's client.producer / client.consumer)")
    bootstrap = bootstrap or props.get("bootstrap.servers")
    props.pop("bootstrap.servers", None)
    if not bootstrap:
        raise ConnectionSettingsError(f"{path}: bootstrap.servers is not set (set it there, or give --bootstrap)")
    protocol = props.get("security.protocol", "plaintext").lower()
    if protocol not in _PROTOCOLS:
        raise ConnectionSettingsError(f"{path}: security.protocol is {protocol!r}; allowed: {', '.join(_PROTOCOLS)}")
    for key in _FILE_KEYS:
        if key in props and not Path(props[key]).is_file():
            raise ConnectionSettingsError(f"{path}: {key} names {props[key]}, which does not exist")
    security = _PROTOCOLS[protocol]
    if security == "tls" and ("ssl.certificate.location" in props or "ssl.keystore.location" in props):
        security = "mtls"
    return Connection(bootstrap, security, tuple(sorted(props.items())), str(path))


def clients_dir(inventory_path: Path, state_dir: Path) -> Path:
    """Where playbooks/site.yml writes an inventory's client settings (kafka_client_settings_dir)."""
    return state_dir / Path(inventory_path).resolve().name / "clients"


def for_profile(directory: Path, security: str, fallback_bootstrap: str) -> Connection:
    """The connection of one client profile of a deployed cluster. Plaintext needs no file when
    the cluster has none (a cluster deployed before client settings were written)."""
    if security not in PROFILES:
        raise ConnectionSettingsError(f"client.security is {security!r}; allowed: {', '.join(PROFILES)}")
    path = directory / f"{security}.properties"
    if path.is_file():
        return from_file(path)
    if security == "plaintext" and not any(directory.glob("*.properties")):
        return Connection.plaintext(fallback_bootstrap)
    offered = sorted(p.stem for p in directory.glob("*.properties") if not p.stem.endswith("-java"))
    raise ConnectionSettingsError(
        f"the cluster offers no {security} listener: {path} does not exist (profiles it offers: "
        f"{', '.join(offered) or 'none written yet; kafka-bench cluster up writes them'})")


def java_twin(path: Path) -> Path:
    """The Java client's settings the kafka role writes beside a librdkafka settings file."""
    return path.with_name(f"{path.stem}-java.properties")


def offered(directory: Path) -> dict[str, Path]:
    """The client profiles a deployed cluster's settings directory holds, and their files."""
    return {p.stem: p for p in sorted(directory.glob("*.properties")) if not p.stem.endswith("-java")}


def preflight(conn: Connection, timeout_s: float = 15.0) -> None:
    """Connect and authenticate once before anything else happens; a ConnectionSettingsError says
    why not (wrong password, untrusted certificate, nothing answering), naming the settings' file."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient


    errors: list[str] = []

    def said(err: Any) -> None:
        errors.append(err.str())

    admin = AdminClient(conn.config({"socket.timeout.ms": int(timeout_s * 1000), "log_level": 0,
                                     "error_cb": said, "logger": silent_logger("kafka_bench.preflight")}))
    try:
        admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        admin.poll(0.5)  # serve the client's error callbacks: they say why
        auth = [e for e in errors if "authentication" in e.lower() or "ssl" in e.lower() or "certificate" in e.lower()]
        why = (auth or errors or [str(exc)])[-1]
        raise ConnectionSettingsError(f"cannot connect to {conn.bootstrap} as {conn.security}"
                                      f"{' with ' + conn.source if conn.source else ''}: {why}") from None


def silent_logger(name: str = "kafka_bench.librdkafka"):
    """A logger for librdkafka that prints nothing (errors that matter are in the ledgers)."""
    import logging

    logger = logging.getLogger(name)
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger
