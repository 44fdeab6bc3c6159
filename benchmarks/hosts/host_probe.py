"""The cluster's hosts as seen from here, apart from what Kafka says: whether a port accepts
connections, a ZooKeeper server's mode (`srvr`), a service's process state from its control
script, and the brokers' CPU time (from /proc here, or over SSH on hosts of their own)."""

from __future__ import annotations

import ipaddress
import os
import shlex
import socket
import ssl
import subprocess
from collections.abc import Callable
from pathlib import Path

from benchmarks.hosts.inventory import Broker, ClusterInventory, ZooKeeperServer

PROCESS_STATES = {0: "running", 4: "paused", 3: "stopped"}  # the control script's `status` exit codes


def zookeeper_mode(server: ZooKeeperServer, timeout: float = 2.0) -> str | None:
    """The server's mode from the `srvr` four-letter word, None when it does not answer. Over
    TLS (trusting the cluster CA) when its client port speaks TLS; the server closes the
    connection once it has answered."""
    chunks: list[bytes] = []
    try:
        with socket.create_connection((server.host, server.port), timeout=timeout) as raw:
            sock = (ssl.create_default_context(cafile=server.tls_ca).wrap_socket(raw, server_hostname=server.host)
                    if server.tls_ca else raw)
            sock.sendall(b"srvr")
            if not server.tls_ca:
                sock.shutdown(socket.SHUT_WR)
            while data := sock.recv(4096):
                chunks.append(data)
    except ssl.SSLEOFError:  # closed without close_notify, after the answer
        pass
    except OSError:
        return None
    data = b"".join(chunks)
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("Mode: "):
            return line.split(": ", 1)[1].strip()
    return None


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections there."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def on_this_machine(host: str) -> bool:
    """Whether the inventory's address for a service is this machine's (loopback)."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_ctl(host: str, ctl: str, action: str) -> subprocess.CompletedProcess[str] | None:
    """The control script's answer to `action`, for a service on this machine (a loopback address
    whose script exists here); None where it cannot be asked from here."""
    if not on_this_machine(host) or not os.access(ctl, os.X_OK):
        return None
    try:
        return subprocess.run([ctl, action], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None


def local_process_state(host: str, ctl: str) -> str | None:
    """The service's process state from its control script, for services on this machine; None
    where it cannot be seen from here."""
    done = local_ctl(host, ctl, "status")
    return PROCESS_STATES.get(done.returncode) if done else None


def process_state_probe(inventory: ClusterInventory,
                        remote: Callable[[str, str], str | None] | None = None) -> Callable[[str, str], str | None]:
    """A `process_probe` for cluster.describe that also sees services on hosts of their own: the
    control script's state here for a service on this machine, else by `remote` (inventory host,
    shell command -> its output or None; over SSH: ssh_reader) asking the host's control script.
    None where the state cannot be seen: no `remote`, the host does not answer, or the service is
    not under a control script of the roles (systemd control, a script that is not there)."""
    hosts = {(z.host, z.ctl): z.name for z in inventory.zookeepers}
    hosts.update({(c.host, c.ctl): c.name for c in inventory.controllers})
    hosts.update({(b.host, b.ctl): b.name for b in inventory.brokers if b.control == "script"})

    def probe(host: str, ctl: str) -> str | None:
        if on_this_machine(host):
            return local_process_state(host, ctl)
        name = hosts.get((host, ctl))
        if remote is None or name is None:
            return None
        answer = remote(name, f"{shlex.quote(ctl)} status >/dev/null 2>&1; echo $?")
        try:
            return PROCESS_STATES.get(int((answer or "").strip()))
        except ValueError:
            return None

    return probe


def broker_cpu(inventory: ClusterInventory,
               remote: Callable[[str, str], str | None] | None = None) -> dict[str, tuple[int, float]] | None:
    """Each broker's process id and the CPU seconds it has used so far (user + system): read here
    from /proc for a broker on this machine, else by `remote` (inventory host, shell command ->
    its output or None; over SSH, as Ansible reaches the host: ssh_reader). None when any broker
    cannot be read."""
    out = {}
    for b in inventory.brokers:
        done = local_ctl(b.host, b.ctl, "pid") if b.control == "script" else None
        if done is not None:
            pid = done.stdout.strip() if done.returncode == 0 else ""
            try:
                stat = Path(f"/proc/{int(pid)}/stat").read_text()
            except (ValueError, OSError):
                return None
            reading = _cpu_reading(f"{pid} {os.sysconf('SC_CLK_TCK')}\n{stat}")
        else:
            reading = _cpu_reading(remote(b.name, _cpu_command(b))) if remote is not None else None
        if reading is None:
            return None
        out[b.name] = reading
    return out or None


def _cpu_command(b: Broker) -> str:
    """Shell lines printing the broker's pid and clock ticks per second, then its /proc stat line."""
    pid = (f"{shlex.quote(b.ctl)} pid" if b.control == "script"
           else f"systemctl show -p MainPID --value {shlex.quote(b.service)}")
    return f'p=$({pid}) && [ -n "$p" ] && [ "$p" != 0 ] && echo "$p $(getconf CLK_TCK)" && cat "/proc/$p/stat"'


def _cpu_reading(output: str | None) -> tuple[int, float] | None:
    """(pid, CPU seconds) from `_cpu_command`'s output: utime + stime, fields 14 and 15 of the
    stat line (counted after the command name, which may hold spaces)."""
    try:
        head, stat = (output or "").split("\n", 1)
        pid, ticks = (int(x) for x in head.split())
        fields = stat.rsplit(")", 1)[1].split()
        return pid, (int(fields[11]) + int(fields[12])) / ticks
    except (ValueError, IndexError, ZeroDivisionError):
        return None


def cpu_used(before: dict[str, tuple[int, float]] | None, after: dict[str, tuple[int, float]] | None) -> float | None:
    """CPU seconds the brokers used between two `broker_cpu` readings; None when either is missing
    or a broker is another process by then (restarted: its CPU before the restart is unknown)."""
    if before is None or after is None or {k: p for k, (p, _) in before.items()} != {k: p for k, (p, _) in after.items()}:
        return None
    return round(sum(after[k][1] - before[k][1] for k in before), 3)
