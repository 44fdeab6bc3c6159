"""Commands on inventory hosts over SSH, reached as Ansible reaches them (address, user, port,
key and extra arguments from the inventory): the hosts' clocks and the brokers' CPU are read
this way, outside a playbook."""

from __future__ import annotations

import functools
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path

from benchmarks.hosts import inventory


def ssh_command(host: str, get: inventory.HostVars, remote: str) -> list[str] | None:
    """The ssh command line Ansible would use to reach `host` (its address, user, port, key and
    extra arguments from the inventory) to run `remote` there; None when Ansible runs the host's
    tasks locally."""
    if get("ansible_connection", "ssh") == "local":
        return None
    command = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
    for name in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        command += shlex.split(str(get(name, "") or ""))
    if key := get("ansible_ssh_private_key_file"):
        command += ["-i", str(key)]
    if port := get("ansible_port"):
        command += ["-p", str(port)]
    user, address = get("ansible_user"), get("ansible_host", host)
    return [*command, f"{user}@{address}" if user else str(address), remote]


def ssh_reader(inventory_path: Path) -> Callable[[str, str], str | None]:
    """Runs a shell command on an inventory host over SSH, as Ansible reaches it; its output, or
    None (the host runs its tasks locally, cannot be reached, or the command failed). The
    inventory is read on the first command, not before."""
    @functools.cache
    def resolver() -> Callable[[str], inventory.HostVars]:
        return inventory.read(inventory_path)[1]

    def run(host: str, command: str) -> str | None:
        argv = ssh_command(host, resolver()(host), command)
        if argv is None:
            return None
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    return run
