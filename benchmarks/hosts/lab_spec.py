"""What a lab is, read from its inventory: its hosts (names, addresses on the lab's subnet), the
gateway and management addresses, the hosts' data filesystem; and whether this machine's kernel
can run tc netem for them. Building and tearing down the lab is `benchmarks.hosts.lab`."""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from benchmarks.core import paths
from benchmarks.hosts import inventory as inventory_lib

DEFAULT_INVENTORY = paths.INVENTORIES / "lab"
_NAME = re.compile(r"[a-z][a-z0-9-]{0,10}")


class LabError(RuntimeError):
    """The lab cannot be built or torn down; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class LabHost:
    name: str
    address: str

    @property
    def netns(self) -> str:
        return f"kb-{self.name}"

    @property
    def veth(self) -> str:
        """The machine's end of the host's link (the host's end is eth0 in its namespace)."""
        return f"kbv-{self.name}"


@dataclasses.dataclass(frozen=True)
class LabSpec:
    inventory: Path
    hosts: tuple[LabHost, ...]
    network: ipaddress.IPv4Network
    bridge: str
    gateway: str
    management: str
    state_dir: Path
    # Kafka's data on a filesystem of each host's own (a tmpfs of data_mb MiB mounted at data_mount),
    # which the disk-full fault may fill; empty: the data stays in the host's /var.
    data_mount: str = ""
    data_mb: int = 0

    @property
    def key(self) -> Path:
        return self.state_dir / "id_ed25519"

    @property
    def control_path_dir(self) -> Path:
        return self.state_dir / "cp"

    def host(self, name: str) -> LabHost:
        for host in self.hosts:
            if host.name == name:
                return host
        raise LabError(f"{self.inventory}: no lab host {name!r}; hosts are {', '.join(h.name for h in self.hosts)}")


def kernel_netem_missing(sys_module: Path = Path("/sys/module"), modprobe: str = "modprobe") -> str:
    """Why this machine's kernel cannot run tc netem (empty: it can): no sch_netem loaded, and
    modprobe finds none to load."""
    if (sys_module / "sch_netem").exists():
        return ""
    try:
        found = subprocess.run([modprobe, "-n", "sch_netem"], capture_output=True, text=True, timeout=10)
    except OSError as exc:
        return f"this machine's kernel has no sch_netem loaded and modprobe cannot look for one ({exc.strerror})"
    return "" if found.returncode == 0 else f"this machine's kernel has none ({found.stderr.strip() or 'modprobe -n failed'})"


def netem_missing(inventory_path: Path | str, kernel: Callable[[], str] | None = None) -> str:
    """Why the hosts of `inventory_path` cannot run tc netem, when this machine can tell: a lab's
    hosts share this machine's kernel. Empty for any other inventory (its hosts' own kernels decide)."""
    try:
        load_spec(inventory_path)
    except (LabError, inventory_lib.InventoryError, OSError):
        return ""
    missing = (kernel or kernel_netem_missing)()
    return f"the lab's hosts share this machine's kernel: {missing}" if missing else ""


def load_spec(inventory_path: Path | str = DEFAULT_INVENTORY) -> LabSpec:
    """The lab an inventory describes, checked before anything is created: every host's
    ansible_host inside kafka_bench_lab_network and distinct from the bridge's addresses."""
    inventory_path = Path(inventory_path)
    groups, resolver = inventory_lib.read(inventory_path)
    names = [n for n in groups.get("all", []) if n != "localhost"]
    if not names:
        raise LabError(f"{inventory_path}: the inventory has no hosts")
    get = resolver(names[0])
    where = f"{inventory_path} (group_vars)"
    missing = [v for v in ("kafka_bench_lab_network", "kafka_bench_lab_bridge", "kafka_bench_lab_gateway",
                           "kafka_bench_lab_management_address", "kafka_bench_lab_state_dir") if get(v) is None]
    if missing:
        raise LabError(f"{where}: not a lab inventory; missing {', '.join(missing)}")
    try:
        network = ipaddress.IPv4Network(str(get("kafka_bench_lab_network")))
        gateway = ipaddress.IPv4Address(str(get("kafka_bench_lab_gateway")))
        management = ipaddress.IPv4Address(str(get("kafka_bench_lab_management_address")))
    except ValueError as exc:
        raise LabError(f"{where}: kafka_bench_lab_network / _gateway / _management_address: {exc}") from exc
    if not network.is_private:
        raise LabError(f"{where}: kafka_bench_lab_network {network} must be a private network")
    bridge = str(get("kafka_bench_lab_bridge"))
    if not re.fullmatch(r"[a-z][a-z0-9-]{0,14}", bridge):
        raise LabError(f"{where}: kafka_bench_lab_bridge {bridge!r} must be 1-15 of a-z, 0-9, '-'")
    reserved = {gateway: "kafka_bench_lab_gateway", management: "kafka_bench_lab_management_address"}
    for address, var in reserved.items():
        if address not in network or address in (network.network_address, network.broadcast_address):
            raise LabError(f"{where}: {var} {address} must be a host address of kafka_bench_lab_network {network}")
    if gateway == management:
        raise LabError(f"{where}: kafka_bench_lab_gateway and kafka_bench_lab_management_address must differ")
    hosts, seen = [], dict(reserved)
    for name in names:
        # Inventory hosts that share an address are processes of one lab host (a dedicated KRaft
        # controller beside a broker): they name it with kafka_bench_lab_host.
        lab_name = str(resolver(name)("kafka_bench_lab_host") or name)
        if not _NAME.fullmatch(lab_name):
            raise LabError(f"{inventory_path}: host {name!r}: lab host names are 1-11 of a-z, 0-9, '-' "
                           f"(they name the namespace and the link); got {lab_name!r}")
        raw = resolver(name)("ansible_host")
        try:
            address = ipaddress.IPv4Address(str(raw))
        except ValueError as exc:
            raise LabError(f"{inventory_path}: host {name}: ansible_host {raw!r} must be an IPv4 address "
                           f"in {network}") from exc
        if address not in network or address in (network.network_address, network.broadcast_address):
            raise LabError(f"{inventory_path}: host {name}: ansible_host {address} is not a host address of "
                           f"kafka_bench_lab_network {network}; the lab only reaches its own hosts")
        if seen.get(address) == lab_name:
            continue  # another process of a lab host already listed
        if address in seen:
            raise LabError(f"{inventory_path}: host {name}: ansible_host {address} is already used by {seen[address]}"
                           f" (inventory hosts on one lab host set kafka_bench_lab_host: {seen[address]})")
        if lab_name in seen.values():
            raise LabError(f"{inventory_path}: host {name}: lab host {lab_name} already has another address")
        seen[address] = lab_name
        hosts.append(LabHost(lab_name, str(address)))
    data_mount, data_mb = _data_disk(where, get("kafka_bench_lab_data_mount"), get("kafka_bench_lab_data_mb"))
    return LabSpec(inventory_path, tuple(hosts), network, bridge, str(gateway), str(management),
                   Path(str(get("kafka_bench_lab_state_dir"))), data_mount, data_mb)


# A host's own directories the data filesystem must not cover (their contents would vanish under it).
_HOST_DIRS = ("/", "/etc", "/var", "/opt", "/run", "/tmp", "/usr", "/var/lib")


def _data_disk(where: str, mount: object, size_mb: object) -> tuple[str, int]:
    """The lab hosts' data filesystem (mount point, MiB), checked: both set or neither."""
    if mount is None and size_mb is None:
        return "", 0
    if not isinstance(mount, str) or not re.fullmatch(r"(/[A-Za-z0-9._-]+)+", mount) or mount in _HOST_DIRS:
        raise LabError(f"{where}: kafka_bench_lab_data_mount {mount!r} must be an absolute path of its own, "
                       f"not one of {', '.join(_HOST_DIRS)} (e.g. /var/lib/kafka)")
    if isinstance(size_mb, bool) or not isinstance(size_mb, int) or not 16 <= size_mb <= 65536:
        raise LabError(f"{where}: kafka_bench_lab_data_mb {size_mb!r} must be a whole number of MiB from 16 to 65536")
    return mount, size_mb
