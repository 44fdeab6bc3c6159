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

from benchmarks.core import connection
from benchmarks.core.connection import Connection
from benchmarks.core.paths import STATE_DIR


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
    # The service's name (kafka_service_name; cp-ansible's kafka_broker_service_name): the systemd
    # unit under systemd service control, the name its control script finds the process by otherwise.
    service: str = "kafka"
    control: str = "script"  # kafka_bench_service_control: script | systemd

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
    service: str = "zookeeper"  # zookeeper_service_name

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
    service: str = "kafka"

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
    # Hosts whose services this project's roles did not deploy (kafka_bench_service_control:
    # systemd): faults act on their units; deploying, tearing down and procedures are refused.
    foreign_hosts: tuple[str, ...] = ()

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
            java = connection.java_twin(path)
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


@dataclasses.dataclass(frozen=True)
class Layout:
    """How an inventory names the brokers' group and what its ids and ports default to: this
    project's roles, or cp-ansible's (Confluent's playbooks), so an inventory written for either
    works as it is."""

    name: str
    broker_group: str
    broker_id_var: str
    broker_id_base: int  # broker id = position in the group + base, unless the host pins it
    controller_id_var: str
    controller_id_base: int
    # The services' names where the inventory does not set them, by the layout's variable names.
    broker_service: tuple[str, str]
    controller_service: tuple[str, str]
    zookeeper_service: tuple[str, str]

    def broker_port(self, get: HostVars) -> Any:
        if self is CP_ANSIBLE:  # the listener clients use, by its key in kafka_broker_listeners
            listeners = get("kafka_broker_listeners") or {}
            listener = listeners.get(str(get("kafka_bench_listener", "internal")), {})
            return listener.get("port", 9092)
        return get("kafka_port", 9092)

    def controller_port(self, get: HostVars) -> Any:
        if self is CP_ANSIBLE:
            return ((get("kafka_controller_listeners") or {}).get("controller") or {}).get("port", 9093)
        return get("kafka_controller_port", 9093)

    def host(self, get: HostVars, name: str) -> str:
        if self is CP_ANSIBLE:
            return str(get("hostname", get("ansible_host", name)))
        return str(get("kafka_advertised_host", get("ansible_host", name)))


KAFKA_BENCH = Layout("kafka-bench", "kafka", "kafka_broker_id", 0, "kafka_node_id", 9990,
                     ("kafka_service_name", "kafka"), ("kafka_service_name", "kafka"),
                     ("zookeeper_service_name", "zookeeper"))
# cp-ansible's unit names (confluent-server unless confluent_server_enabled is false, then confluent-kafka).
CP_ANSIBLE = Layout("cp-ansible", "kafka_broker", "broker_id", 1, "node_id", 9991,
                    ("kafka_broker_service_name", "confluent-server"),
                    ("kafka_controller_service_name", "confluent-kcontroller"),
                    ("zookeeper_service_name", "confluent-zookeeper"))


def layout_of(path: Path, groups: dict[str, list[str]]) -> Layout:
    """This project's layout (group kafka), or cp-ansible's (group kafka_broker); not both."""
    if groups.get("kafka") and groups.get("kafka_broker"):
        raise InventoryError(f"{path}: both groups 'kafka' and 'kafka_broker' have hosts; name the brokers in one "
                             "('kafka': this project's layout, 'kafka_broker': cp-ansible's)")
    return CP_ANSIBLE if groups.get("kafka_broker") else KAFKA_BENCH


def load(path: Path | str, zookeeper_group: str = "zookeeper",
         controller_group: str = "kafka_controller") -> ClusterInventory:
    path = Path(path)
    groups, resolver = read(path)
    layout = layout_of(path, groups)
    brokers = []
    kafka_hosts = groups.get(layout.broker_group, [])
    if not kafka_hosts:
        raise InventoryError(f"{path}: group 'kafka' (or cp-ansible's 'kafka_broker') has no hosts; a cluster needs "
                             "at least one broker")
    for index, name in enumerate(kafka_hosts):
        get = resolver(name)
        base = int(get("kafka_broker_id_base", layout.broker_id_base))
        try:
            broker_id = int(get(layout.broker_id_var, index + base))
            port = int(layout.broker_port(get))
        except (TypeError, ValueError, AttributeError) as exc:
            raise InventoryError(f"{path}: host {name}: {layout.broker_id_var} and the listener port must be integers "
                                 f"({exc})") from exc
        disk = get("kafka_bench_fault_disk_mount")
        brokers.append(Broker(name, broker_id, layout.host(get, name), port, str(get("kafka_conf_dir", "/etc/kafka")),
                              str(disk) if disk else None, _service(get, layout.broker_service),
                              str(get("kafka_bench_service_control", "script"))))
    zookeepers = []
    for name in groups.get(zookeeper_group, []):
        get = resolver(name)
        tls = str(get("zookeeper_tls_enabled", False)).lower() in ("true", "yes", "1")
        host = get("zookeeper_host", get("hostname", get("ansible_host", name)) if layout is CP_ANSIBLE
                   else get("ansible_host", name))
        zookeepers.append(ZooKeeperServer(name, str(host), int(get("zookeeper_client_port", 2181)),
                                          str(get("zookeeper_conf_dir", "/etc/zookeeper")),
                                          f"{get('zookeeper_tls_ca_dir')}/ca.pem" if tls else None,
                                          _service(get, layout.zookeeper_service)))
    first = resolver(kafka_hosts[0])
    version = str(first("kafka_version", DEFAULT_KAFKA_VERSION))
    default_mode = (("kraft" if groups.get(controller_group) else "zookeeper") if layout is CP_ANSIBLE
                    else default_metadata_mode(version))  # cp-ansible: KRaft when there are controllers
    mode = str(first("kafka_metadata_mode", default_mode))
    if mode not in ("kraft", "zookeeper"):
        raise InventoryError(f"{path}: kafka_metadata_mode is {mode!r}; allowed: kraft, zookeeper")
    controllers = _controllers(path, groups.get(controller_group, []) if mode == "kraft" else [], resolver,
                               {b.name: b for b in brokers}, layout)
    if mode == "kraft" and not controllers:
        raise InventoryError(f"{path}: KRaft mode needs controllers: group '{controller_group}' has no hosts")
    waiting = tuple(name for name in groups.get(controller_group, []) if mode == "zookeeper"
                    and str(resolver(name)("kafka_zookeeper_migration", False)).lower() in ("true", "yes", "1"))
    protocol = str(first("kafka_security_protocol", "PLAINTEXT")).upper()
    security = {"PLAINTEXT": "plaintext", "SASL_SSL": "sasl_ssl"}.get(
        protocol, "mtls" if str(first("kafka_ssl_client_auth", "none")) == "required" else "tls")
    return ClusterInventory(path, tuple(brokers), tuple(zookeepers), controllers, mode, version, waiting, security,
                            foreign_hosts=_foreign_hosts(path, groups, resolver))


SERVICE_CONTROLS = ("script", "systemd")


def _foreign_hosts(path: Path, groups: dict[str, list[str]], resolver: Callable[[str], HostVars]) -> tuple[str, ...]:
    """The cluster's hosts under systemd service control (playbooks/faults/vars/service-control.yml)."""
    names = dict.fromkeys(n for g in ("zookeeper", "kafka", "kafka_broker", "kafka_controller") for n in groups.get(g, []))
    foreign = []
    for name in names:
        control = str(resolver(name)("kafka_bench_service_control", "script"))
        if control not in SERVICE_CONTROLS:
            raise InventoryError(f"{path}: host {name}: kafka_bench_service_control is {control!r}; allowed: "
                                 + ", ".join(SERVICE_CONTROLS))
        if control == "systemd":
            foreign.append(name)
    return tuple(foreign)


def _service(get: HostVars, named: tuple[str, str]) -> str:
    """The node's service name: its layout's variable, else that layout's default."""
    variable, default = named
    return str(get(variable, default))


def _controllers(path: Path, names: list[str], resolver: Callable[[str], HostVars],
                 brokers: dict[str, Broker], layout: Layout = KAFKA_BENCH) -> tuple[Controller, ...]:
    out = []
    for index, name in enumerate(names):
        get = resolver(name)
        try:
            node_id = brokers[name].broker_id if name in brokers else int(
                get(layout.controller_id_var, index + int(get("kafka_controller_id_base", layout.controller_id_base))))
            port = int(layout.controller_port(get))
        except (TypeError, ValueError, AttributeError) as exc:
            raise InventoryError(f"{path}: host {name}: {layout.controller_id_var} and the controller listener port "
                                 f"must be integers ({exc})") from exc
        service = brokers[name].service if name in brokers else _service(get, layout.controller_service)
        out.append(Controller(name, node_id, layout.host(get, name), port, str(get("kafka_conf_dir", "/etc/kafka")),
                              name in brokers, service))
    return tuple(out)
