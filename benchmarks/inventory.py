"""Read an Ansible inventory the way the playbooks see it: brokers, controllers, ids, endpoints.

Values come from the inventory (host_vars, group_vars, Jinja) through Ansible's own API;
where the inventory leaves a value to the roles' defaults, the same default rule applies
(port 9092, broker id = position in the group + kafka_broker_id_base, a dedicated KRaft
controller's node id = position in kafka_controller + kafka_controller_id_base, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from benchmarks import connection
from benchmarks.connection import Connection
from benchmarks.paths import STATE_DIR


class InventoryError(ValueError):
    """The inventory cannot describe a cluster; the message names the file and the variable."""


@dataclasses.dataclass(frozen=True)
class Broker:
    name: str
    broker_id: int
    host: str
    port: int
    conf_dir: str
    # The mount point of a filesystem that holds only this broker's data (kafka_bench_fault_disk_mount):
    # the disk-full fault fills it. None: the broker's data shares a disk the fault must not fill.
    data_disk: str | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def ctl(self) -> str:
        """The broker's service control script (start|stop|kill|pause|status|...)."""
        return f"{self.conf_dir}/kafka-service"

    @property
    def tool(self) -> str:
        return f"{self.conf_dir}/kafka-tool"


@dataclasses.dataclass(frozen=True)
class ZooKeeperServer:
    name: str
    host: str
    port: int
    conf_dir: str
    # The cluster CA (PEM, on this machine) when the client port speaks TLS (zookeeper_tls_enabled).
    tls_ca: str | None = None

    @property
    def ctl(self) -> str:
        return f"{self.conf_dir}/zookeeper-service"


@dataclasses.dataclass(frozen=True)
class Controller:
    """A KRaft controller: a process of its own, or the controller role of a combined node."""

    name: str
    node_id: int
    host: str
    port: int  # the controller listener
    conf_dir: str
    combined: bool  # the same process is a broker too

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def ctl(self) -> str:
        return f"{self.conf_dir}/kafka-service"


DEFAULT_KAFKA_VERSION = "3.9.2"  # roles/kafka/defaults/main.yml


def default_metadata_mode(version: str) -> str:
    """The role's default: ZooKeeper before Kafka 4.0, KRaft from 4.0 on."""
    try:
        major = int(version.split(".")[0])
    except ValueError:
        major = 0
    return "kraft" if major >= 4 else "zookeeper"


@dataclasses.dataclass(frozen=True)
class ClusterInventory:
    path: Path
    brokers: tuple[Broker, ...]
    zookeepers: tuple[ZooKeeperServer, ...]
    controllers: tuple[Controller, ...] = ()
    metadata_mode: str = "zookeeper"  # kraft | zookeeper
    kafka_version: str = DEFAULT_KAFKA_VERSION
    # ZooKeeper mode: the KRaft controllers waiting for playbooks/migrate-to-kraft.yml (group
    # kafka_controller with kafka_zookeeper_migration: true), by inventory name.
    migration_controllers: tuple[str, ...] = ()
    # The client profile clients use unless a scenario asks for another (client.security): from
    # the broker listener's kafka_security_protocol (and kafka_ssl_client_auth for SSL).
    security: str = "plaintext"
    # Client settings given by the user (--client-config) for a cluster whose settings this
    # project did not write: every client uses them, whatever profile is asked for.
    client_config: Path | None = None
    # A cluster known only by its bootstrap address (run --bootstrap, cluster.discover): how
    # every client reaches it; no host of it can be acted on.
    given: Connection | None = None

    @property
    def kraft(self) -> bool:
        return self.metadata_mode == "kraft"

    @property
    def quorum_bootstrap(self) -> str:
        return ",".join(c.endpoint for c in self.controllers)

    def controller(self, ident: int | str) -> Controller:
        found = {(str(c.node_id), c.name): c for c in self.controllers}
        return self._find(found, ident, "KRaft controller", "controllers")

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def connection(self, security: str | None = None) -> Connection:
        """How clients reach the cluster with a client profile (default: the cluster's own), from
        the client settings playbooks/site.yml wrote for this inventory."""
        conn = self.given
        if conn is None and self.client_config is not None:
            conn = connection.from_file(self.client_config)
        if conn is not None:
            if security not in (None, conn.security):
                raise connection.ConnectionSettingsError(
                    f"client.security is {security}, but {conn.source or conn.bootstrap} connects as {conn.security}")
            return conn
        return connection.for_profile(connection.clients_dir(self.path, STATE_DIR), security or self.security,
                                      self.bootstrap_servers)

    def client_profiles(self) -> tuple[str, ...]:
        """The client profiles the cluster can be reached with: that of the settings given
        (--client-config), else those whose settings the deployment wrote (plaintext, on a
        plaintext cluster deployed before they were written)."""
        if self.given is not None or self.client_config is not None:
            return (self.connection().security,)
        written = tuple(connection.offered(connection.clients_dir(self.path, STATE_DIR)))
        return written or (("plaintext",) if self.security == "plaintext" else ())

    def client_settings(self) -> dict[str, dict[str, Any]]:
        """The client settings files playbooks/site.yml wrote per client profile (librdkafka, Java),
        with what they connect to and as whom; no secret."""
        out = {}
        for profile, path in connection.offered(connection.clients_dir(self.path, STATE_DIR)).items():
            summary = connection.from_file(path).summary()
            java = path.with_name(f"{profile}-java.properties")
            out[profile] = {"librdkafka": str(path), "java": str(java) if java.is_file() else None,
                            "bootstrap": summary["bootstrap"], "user": summary["sasl.username"],
                            "default": profile == self.security}
        return out

    def broker(self, ident: int | str) -> Broker:
        return self._find({(str(b.broker_id), b.name): b for b in self.brokers}, ident, "broker", "brokers")

    def _find(self, nodes: dict[tuple[str, str], Any], ident: int | str, what: str, plural: str) -> Any:
        """The node whose (id, inventory name) matches `ident`; an error listing them otherwise."""
        for keys, node in nodes.items():
            if str(ident) in keys:
                return node
        known = ", ".join(f"{name} (id {i})" for i, name in nodes) or "none"
        raise InventoryError(f"{self.path}: no {what} {ident!r}; {plural} are {known}")


class HostVars(Protocol):
    """A host's variable by name, templated; `default` where the inventory does not set it."""

    def __call__(self, name: str, default: Any = None) -> Any: ...


def read(path: Path | str) -> tuple[dict[str, list[str]], Callable[[str], HostVars]]:
    """The inventory's groups, and a reader of each host's templated variables (None-safe for
    undefined ones), through Ansible's own API."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible.vars.manager import VariableManager

    path = Path(path)
    if not path.exists():
        raise InventoryError(f"inventory {path} does not exist")
    loader = DataLoader()
    manager = InventoryManager(loader=loader, sources=[str(path)])
    variables = VariableManager(loader=loader, inventory=manager)

    def resolver(host_name: str) -> HostVars:
        host = manager.get_host(host_name)
        hostvars = variables.get_vars(host=host, include_hostvars=False)
        templar = Templar(loader=loader, variables=hostvars)

        def get(name: str, default: Any = None) -> Any:
            if name not in hostvars:
                return default
            try:
                return templar.template(hostvars[name])
            except Exception as exc:  # Ansible raises several error types for bad templates
                raise InventoryError(f"{path}: host {host_name}: cannot resolve {name}: {exc}") from exc

        return get

    return manager.get_groups_dict(), resolver


def load(path: Path | str, kafka_group: str = "kafka", zookeeper_group: str = "zookeeper",
         controller_group: str = "kafka_controller") -> ClusterInventory:
    path = Path(path)
    groups, resolver = read(path)
    brokers = []
    kafka_hosts = groups.get(kafka_group, [])
    if not kafka_hosts:
        raise InventoryError(f"{path}: group '{kafka_group}' has no hosts; a cluster needs at least one broker")
    for index, name in enumerate(kafka_hosts):
        get = resolver(name)
        base = int(get("kafka_broker_id_base", 0))
        try:
            broker_id = int(get("kafka_broker_id", index + base))
            port = int(get("kafka_port", 9092))
        except (TypeError, ValueError) as exc:
            raise InventoryError(f"{path}: host {name}: kafka_broker_id and kafka_port must be integers ({exc})") from exc
        host = str(get("kafka_advertised_host", get("ansible_host", name)))
        disk = get("kafka_bench_fault_disk_mount")
        brokers.append(Broker(name, broker_id, host, port, str(get("kafka_conf_dir", "/etc/kafka")),
                              str(disk) if disk else None))
    zookeepers = []
    for name in groups.get(zookeeper_group, []):
        get = resolver(name)
        tls = str(get("zookeeper_tls_enabled", False)).lower() in ("true", "yes", "1")
        zookeepers.append(ZooKeeperServer(name, str(get("zookeeper_host", get("ansible_host", name))),
                                          int(get("zookeeper_client_port", 2181)),
                                          str(get("zookeeper_conf_dir", "/etc/zookeeper")),
                                          f"{get('zookeeper_tls_ca_dir')}/ca.pem" if tls else None))
    first = resolver(kafka_hosts[0])
    version = str(first("kafka_version", DEFAULT_KAFKA_VERSION))
    mode = str(first("kafka_metadata_mode", default_metadata_mode(version)))
    if mode not in ("kraft", "zookeeper"):
        raise InventoryError(f"{path}: kafka_metadata_mode is {mode!r}; allowed: kraft, zookeeper")
    controllers = _controllers(path, groups.get(controller_group, []) if mode == "kraft" else [], resolver,
                               {b.name: b for b in brokers})
    if mode == "kraft" and not controllers:
        raise InventoryError(f"{path}: KRaft mode needs controllers: group '{controller_group}' has no hosts")
    waiting = tuple(name for name in groups.get(controller_group, []) if mode == "zookeeper"
                    and str(resolver(name)("kafka_zookeeper_migration", False)).lower() in ("true", "yes", "1"))
    protocol = str(first("kafka_security_protocol", "PLAINTEXT")).upper()
    security = {"PLAINTEXT": "plaintext", "SASL_SSL": "sasl_ssl"}.get(
        protocol, "mtls" if str(first("kafka_ssl_client_auth", "none")) == "required" else "tls")
    return ClusterInventory(path, tuple(brokers), tuple(zookeepers), controllers, mode, version, waiting, security)


def _controllers(path: Path, names: list[str], resolver: Callable[[str], HostVars],
                 brokers: dict[str, Broker]) -> tuple[Controller, ...]:
    out = []
    for index, name in enumerate(names):
        get = resolver(name)
        try:
            node_id = brokers[name].broker_id if name in brokers else int(
                get("kafka_node_id", index + int(get("kafka_controller_id_base", 9990))))
            port = int(get("kafka_controller_port", 9093))
        except (TypeError, ValueError) as exc:
            raise InventoryError(f"{path}: host {name}: kafka_node_id and kafka_controller_port must be integers "
                                 f"({exc})") from exc
        host = str(get("kafka_advertised_host", get("ansible_host", name)))
        out.append(Controller(name, node_id, host, port, str(get("kafka_conf_dir", "/etc/kafka")), name in brokers))
    return tuple(out)
