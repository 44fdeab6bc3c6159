"""The lab: several hosts on one machine, so the multi-host path is tested for real.

Each host of a lab inventory (inventories/lab) becomes a Linux network namespace with its own
address on a bridge the lab creates, its own /etc and /var (copy-on-write over the machine's),
an empty /opt, its own /run, /tmp, host name and process tree, and an sshd: Ansible reaches it
over SSH exactly as it reaches a real host, and the roles use their real-host paths unchanged.

The bridge carries two addresses of the machine: the *gateway*, which clients (the runner)
use, and the *management* address, from which Ansible connects. Network faults cut the
former and never the latter, so a host cut off from its cluster can still be healed.

Nothing leaves the lab: the hosts have no default route, only the lab's own subnet. Teardown
kills every process of every lab namespace, deletes the namespaces, links and the bridge, and
checks that no namespace, link, mount or process is left; it works from any half-built state.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.core.wait import WaitTimeout, wait_until
from benchmarks.hosts.lab_spec import LabError, LabHost, LabSpec

HOST_SCRIPT = Path(__file__).resolve().parent / "lab-host.sh"
TOOLS = {"ip": "iproute2", "unshare": "util-linux", "sshd": "openssh-server", "ssh-keygen": "openssh-client",
         "ssh": "openssh-client", "nft": "nftables"}


Run = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def run_command(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, check=False)


@dataclasses.dataclass(frozen=True)
class HostState:
    host: LabHost
    netns: bool
    pid: int | None
    ssh: bool

    @property
    def up(self) -> bool:
        return self.netns and self.pid is not None and self.ssh


class Lab:
    """Builds and tears down the lab of a spec. The command runner, the process starter, the
    clock, the SSH probe and the mount table are injectable, so the sequencing is tested
    without root."""

    def __init__(self, spec: LabSpec, run: Run = run_command, popen: Callable[..., subprocess.Popen] = subprocess.Popen,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 ssh_probe: Callable[[str], bool] | None = None,
                 mountinfo: Callable[[], str] = lambda: Path("/proc/self/mountinfo").read_text()) -> None:
        self.spec = spec
        self.run = run
        self.popen = popen
        self.clock = clock
        self.sleep = sleep
        self.ssh_probe = ssh_probe or _ssh_answers
        self.mountinfo = mountinfo

    # --- helpers -------------------------------------------------------------------------
    def _must(self, *args: str) -> str:
        done = self.run(args)
        if done.returncode != 0:
            raise LabError(f"`{' '.join(args)}` failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
        return done.stdout

    def _links(self) -> set[str]:
        out = self.run(["ip", "-o", "link", "show"]).stdout
        return {m.group(1) for m in re.finditer(r"^\d+: ([^:@]+)[@:]", out, re.M)}

    def _namespaces(self) -> set[str]:
        return {line.split()[0] for line in self.run(["ip", "netns", "list"]).stdout.splitlines() if line.strip()}

    def _host_dir(self, host: LabHost) -> Path:
        return self.spec.state_dir / "hosts" / host.name

    def _recorded_pid(self, host: LabHost) -> int | None:
        """The pid `up` recorded for the host's init, whatever became of that process."""
        try:
            return int((self._host_dir(host) / "init.pid").read_text())
        except (OSError, ValueError):
            return None

    def _pid(self, host: LabHost) -> int | None:
        """The pid of the host's init (unshare) when it is alive and still the lab's."""
        pid = self._recorded_pid(host)
        if pid is None:
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return pid if HOST_SCRIPT.name.encode() in cmdline and host.name.encode() in cmdline else None

    def _exited(self, host: LabHost) -> bool:
        """Whether the init started for this host is gone (exited or a zombie). Only for the
        start-up wait: right after the start its command line may still read empty (exec)."""
        pid = self._recorded_pid(host)
        if pid is None:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return True
        return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")

    # --- preflight ---------------------------------------------------------------------------
    def preflight(self) -> None:
        if os.geteuid() != 0:
            raise LabError("the lab creates network namespaces and mounts: run it as root")
        missing = [f"{tool} (Debian package {package})" for tool, package in TOOLS.items()
                   if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists()]
        if missing:
            raise LabError(f"the lab needs {', '.join(missing)}; `make lab-deps` installs them")
        probe = self.run(["ip", "netns", "list"])
        if probe.returncode != 0:
            raise LabError(f"network namespaces are not available here: {probe.stderr.strip()}")

    # --- up --------------------------------------------------------------------------------------
    def up(self, timeout_s: float = 30.0, on_host: Callable[[LabHost, str], None] | None = None) -> list[HostState]:
        """Create what is missing (a second `up` changes nothing) and wait for every sshd."""
        spec = self.spec
        self.preflight()
        spec.state_dir.mkdir(parents=True, exist_ok=True)
        spec.control_path_dir.mkdir(parents=True, exist_ok=True)
        if not spec.key.exists():
            self._must("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kafka-bench-lab", "-f", str(spec.key))
        authorized = spec.state_dir / "authorized_keys"
        authorized.write_text(Path(f"{spec.key}.pub").read_text())
        hosts_file = spec.state_dir / "etc-hosts"
        hosts_file.write_text("127.0.0.1\tlocalhost\n" + "".join(f"{h.address}\t{h.name}\n" for h in spec.hosts))
        prefix = spec.network.prefixlen
        if spec.bridge not in self._links():
            self._must("ip", "link", "add", "name", spec.bridge, "type", "bridge")
        addresses = self.run(["ip", "-o", "-4", "addr", "show", "dev", spec.bridge]).stdout
        for address in (spec.gateway, spec.management):
            if f" {address}/" not in addresses:
                self._must("ip", "addr", "add", f"{address}/{prefix}", "dev", spec.bridge)
        self._must("ip", "link", "set", spec.bridge, "up")
        for host in spec.hosts:
            if self._pid(host) is not None and host.netns in self._namespaces():
                if on_host:
                    on_host(host, "already up")
                continue
            self._start_host(host, authorized, hosts_file, prefix)
            if on_host:
                on_host(host, "started")
        pending = list(spec.hosts)

        def answering() -> bool:
            nonlocal pending
            pending = [h for h in pending if not self.ssh_probe(h.address)]
            dead = [h for h in pending if self._exited(h)]
            if dead:
                raise self._host_failed(dead[0], "its init exited")
            return not pending

        try:
            wait_until(answering, timeout_s, interval_s=0.2, what="the lab hosts' sshd", clock=self.clock,
                       sleep=self.sleep)
        except WaitTimeout:
            raise self._host_failed(pending[0], f"no sshd answered on {pending[0].address}:22 within {timeout_s:g} s"
                                    ) from None
        self._write_ssh_config()
        return self.status()

    def _host_failed(self, host: LabHost, why: str) -> LabError:
        log = self._host_dir(host) / "init.log"
        tail = log.read_text(errors="replace")[-1500:] if log.exists() else "(no log)"
        return LabError(f"lab host {host.name}: {why}; `kafka-bench lab down` cleans up. {log}:\n{tail}")

    def _start_host(self, host: LabHost, authorized: Path, hosts_file: Path, prefix: int) -> None:
        spec = self.spec
        if host.netns not in self._namespaces():
            self._must("ip", "netns", "add", host.netns)
        if host.veth not in self._links():
            self._must("ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
        self._must("ip", "link", "set", host.veth, "master", spec.bridge, "up")
        inside = self.run(["ip", "-n", host.netns, "-o", "-4", "addr", "show", "dev", "eth0"]).stdout
        if f" {host.address}/" not in inside:
            self._must("ip", "-n", host.netns, "addr", "add", f"{host.address}/{prefix}", "dev", "eth0")
        self._must("ip", "-n", host.netns, "link", "set", "lo", "up")
        self._must("ip", "-n", host.netns, "link", "set", "eth0", "up")
        state = self._host_dir(host)
        state.mkdir(parents=True, exist_ok=True)
        with open(state / "init.log", "ab") as log:
            process = self.popen(
                ["ip", "netns", "exec", host.netns, "unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child",
                 "--mount-proc", "--", "/bin/sh", str(HOST_SCRIPT), host.name, host.address, str(state),
                 str(authorized), str(hosts_file), spec.data_mount, str(spec.data_mb)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        (state / "init.pid").write_text(str(process.pid))

    def _write_ssh_config(self) -> Path:
        """An ssh_config for people: `ssh -F .state/lab/ssh_config lab1`."""
        spec = self.spec
        lines = ["# Written by `kafka-bench lab up`: ssh -F this-file HOST"]
        for host in spec.hosts:
            lines += [f"Host {host.name}", f"  HostName {host.address}", "  User root", f"  IdentityFile {spec.key}",
                      "  IdentitiesOnly yes", "  StrictHostKeyChecking no", "  UserKnownHostsFile /dev/null",
                      "  LogLevel ERROR", f"  BindAddress {spec.management}"]
        path = spec.state_dir / "ssh_config"
        path.write_text("\n".join(lines) + "\n")
        return path

    # --- status ----------------------------------------------------------------------------------
    def status(self) -> list[HostState]:
        namespaces = self._namespaces()
        return [HostState(h, h.netns in namespaces, self._pid(h), self.ssh_probe(h.address) if h.netns in namespaces
                          else False) for h in self.spec.hosts]

    # --- down ------------------------------------------------------------------------------------
    def _namespace_pids(self, netns: str) -> list[int]:
        done = self.run(["ip", "netns", "pids", netns])
        return [int(p) for p in done.stdout.split() if p.isdigit()] if done.returncode == 0 else []

    def _control_masters(self) -> list[int]:
        """Ansible's SSH connection masters for lab hosts (they would outlive the hosts)."""
        marker = str(self.spec.control_path_dir).encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if marker in (entry / "cmdline").read_bytes():
                        pids.append(int(entry.name))
                except OSError:
                    continue
        return pids

    def down(self, purge: bool = True, timeout_s: float = 20.0) -> list[str]:
        """Kill, delete and check; returns what is left (empty when clean)."""
        spec = self.spec
        namespaces = self._namespaces()
        for host in spec.hosts:
            pid = self._pid(host)
            if pid is not None:
                _kill(pid, signal.SIGKILL)  # unshare --kill-child takes the host's PID 1, and so all of it
        for pid in self._control_masters():
            _kill(pid, signal.SIGKILL)
        def gone() -> bool:
            pids = [p for h in spec.hosts if h.netns in namespaces for p in self._namespace_pids(h.netns)]
            for pid in pids:
                _kill(pid, signal.SIGKILL)
            return not pids

        with contextlib.suppress(WaitTimeout):  # what is left is named by the check that follows
            wait_until(gone, timeout_s, interval_s=0.2, what="the lab's processes to end", clock=self.clock,
                       sleep=self.sleep)
        for host in spec.hosts:
            if host.netns in namespaces:
                self.run(["ip", "netns", "del", host.netns])
            if host.veth in self._links():
                self.run(["ip", "link", "del", host.veth])
        if spec.bridge in self._links():
            self.run(["ip", "link", "del", spec.bridge])
        left = self.leftovers()
        if purge and not left:
            shutil.rmtree(spec.state_dir / "hosts", ignore_errors=True)
            shutil.rmtree(spec.control_path_dir, ignore_errors=True)
            for name in ("etc-hosts", "authorized_keys", "ssh_config"):
                (spec.state_dir / name).unlink(missing_ok=True)
        return left

    def leftovers(self) -> list[str]:
        """Every namespace, link, mount or process of this lab still present."""
        spec = self.spec
        left = [f"namespace {n}" for n in sorted(self._namespaces() & {h.netns for h in spec.hosts})]
        links = self._links()
        left += [f"link {n}" for n in [spec.bridge, *(h.veth for h in spec.hosts)] if n in links]
        markers = [str(spec.state_dir), *(f"/run/netns/{h.netns}" for h in spec.hosts)]
        for line in self.mountinfo().splitlines():
            if any(m in line for m in markers):
                left.append(f"mount {line.split()[4]}")
        left += [f"process {p} (lab init)" for p in (self._pid(h) for h in spec.hosts) if p is not None]
        left += [f"process {p} (ssh connection master)" for p in self._control_masters()]
        return left


def _kill(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _ssh_answers(address: str, port: int = 22, timeout_s: float = 0.5) -> bool:
    """Whether an SSH server greets on address:port."""
    try:
        with socket.create_connection((address, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            return sock.recv(4).startswith(b"SSH-")
    except OSError:
        return False
