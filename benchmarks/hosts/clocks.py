"""The hosts' clocks against the runner's.

A fault acts on its host, at the host's clock: the control script waits for the scheduled
moment and prints when it acted (`at_ns=`). On the local inventory and on the lab (network
namespaces of this machine) every host reads the runner's own kernel clock; Vagrant VMs and
real hosts have clocks of their own, seconds apart when NTP is off. So before a run the
runner measures each SSH host's offset the way NTP does: over one SSH session, it writes a
line, the host answers with its clock, and the host's reading is set against the midpoint of
the round trip; of `SAMPLES` exchanges the one with the shortest round trip counts, and half
of that round trip bounds the error. Fault times are then converted: the scheduled moment to
the host's clock before the playbook runs, the moment it acted back to the runner's.
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from benchmarks.hosts import inventory
from benchmarks.hosts.ssh import ssh_command

SAMPLES = 5
TIMEOUT_S = 20.0
# On the host: one clock reading (ns) per line read.
ECHO_CLOCK = "while read -r _; do date +%s%N; done"


class ClockError(RuntimeError):
    """A host whose clock could not be read; names the host and the command."""


@dataclasses.dataclass(frozen=True)
class Offset:
    host: str
    offset_ns: int       # the host's clock minus the runner's
    uncertainty_ns: int  # the offset is within +- this (half the best round trip; 0 for the runner's own clock)
    how: str             # "local": Ansible runs the host's tasks here, on the runner's clock; "ssh": measured

    def to_host(self, runner_ns: int) -> int:
        return runner_ns + self.offset_ns

    def to_runner(self, host_ns: int) -> int:
        return host_ns - self.offset_ns


def exchange(stdin: IO[str], stdout: IO[str], clock: Callable[[], int] = time.time_ns) -> tuple[int, int, int]:
    """One line out, one clock reading back: (sent, host's reading, received), all ns."""
    sent = clock()
    stdin.write("\n")
    stdin.flush()
    line = stdout.readline()
    received = clock()
    return sent, int(line.strip()), received


def offset_of(host: str, samples: Iterable[tuple[int, int, int]]) -> Offset:
    """The offset from the sample with the shortest round trip."""
    sent, reading, received = min(samples, key=lambda s: s[2] - s[0])
    return Offset(host, reading - (sent + received) // 2, (received - sent + 1) // 2, "ssh")


def measure_host(host: str, command: list[str], samples: int = SAMPLES,
                 popen: Callable[..., Any] = subprocess.Popen) -> Offset:
    process = popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    bufsize=1)
    try:
        taken = [exchange(process.stdin, process.stdout) for _ in range(samples)]
    except (ValueError, OSError) as exc:  # no reading came back: ssh failed
        process.kill()
        _, err = process.communicate(timeout=TIMEOUT_S)
        raise ClockError(f"cannot read the clock of {host} ({' '.join(command)}): {(err or str(exc)).strip()}") from None
    process.stdin.close()
    process.wait(timeout=TIMEOUT_S)
    return offset_of(host, taken)


def measure(inventory_path: Path, hosts: Iterable[str],
            measure_one: Callable[[str, list[str]], Offset] = measure_host) -> dict[str, Offset]:
    """Each host's offset: measured over SSH, or the runner's own clock where Ansible runs locally."""
    _, resolver = inventory.read(inventory_path)
    offsets = {}
    for host in dict.fromkeys(hosts):
        command = ssh_command(host, resolver(host), ECHO_CLOCK)
        offsets[host] = Offset(host, 0, 0, "local") if command is None else measure_one(host, command)
    return offsets


def latest_on_host(offsets: Mapping[str, Offset], hosts: Iterable[str], runner_ns: int) -> int:
    """A moment of the runner's clock on the hosts' clocks, for a playbook that may not act
    before it on any of them: one value goes to all the hosts, so the latest of them counts
    (a host whose clock is behind acts later by the difference)."""
    return max(offsets[h].to_host(runner_ns) if h in offsets else runner_ns for h in hosts)
