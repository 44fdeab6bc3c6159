"""Where a command's CPU goes, by kind of process: the Kafka and ZooKeeper nodes, the load
processes, the harness, Spark, Ansible, Kafka's tools. On two cores every process of a test or
a run competes with the brokers, so this says what to make cheaper first.

Every process on the machine is sampled every `--interval` seconds while the command runs (its
user and system CPU from /proc/<pid>/stat, and its command line), so processes the command did
not start (a cluster already running) are counted from the first sample on. A process that
lives less than an interval is missed: the machine's busy time not attributed to any process
is printed as such (Ansible's module processes are most of it).

    python -m benchmarks.perf.cpu_by_process -- pytest tests/integration/test_upgrade.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.perf import cpu_ticks, proc_stat, save_figures, sum_by

SERVICE_MARKER = b"-Dkafka.bench.service="
ZOOKEEPER_MAIN = b"org.apache.zookeeper.server.quorum.QuorumPeerMain"  # roles/zookeeper: its JVM's main class
TICKS = os.sysconf("SC_CLK_TCK")


def kind(argv: list[bytes]) -> str:
    """The kind of process a command line is."""
    if not argv or not argv[0]:
        return "kernel or unreadable"
    line = b" ".join(argv).decode(errors="replace")
    program = os.path.basename(argv[0].decode(errors="replace"))
    if any(a.startswith(SERVICE_MARKER) for a in argv):  # by its main class: service names are the inventory's
        return "zookeeper node" if ZOOKEEPER_MAIN in argv else "kafka node"
    if program == "java":
        if "spark" in line.lower():
            return "spark"
        return "java load" if "LedgerProducer" in line else "kafka tools (java)"
    if "ansible" in line or "AnsiballZ" in line:
        return "ansible"
    if "multiprocessing" in line:
        return "load processes (python)"
    if "pytest" in line or "kafka-bench" in line or "benchmarks" in line:
        return "harness (python)"
    return program


def busy_ticks() -> int:
    """The machine's busy time so far (all CPUs), in clock ticks."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return sum(fields) - fields[3] - fields[4]  # less idle and iowait


def processes() -> Iterator[tuple[tuple[int, str], int]]:
    """(pid, start time) and user+system ticks of every process now."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = proc_stat(entry.name)
            except (OSError, IndexError):
                continue
            yield (int(entry.name), fields[19]), cpu_ticks(fields)


def command_line(pid: int) -> list[bytes] | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None


class Sampler:
    """CPU ticks per process since it was first seen (or since the start, for one already running)."""

    def __init__(self) -> None:
        self.kinds: dict[tuple[int, str], str] = {}
        self.first: dict[tuple[int, str], int] = {}
        self.last: dict[tuple[int, str], int] = {}
        self._sample(running_before=True)

    def sample(self) -> None:
        self._sample(running_before=False)

    def _sample(self, running_before: bool) -> None:
        for key, ticks in processes():
            # Read again each time: a fork of the harness or a control script is put with the
            # program it execs last (Spark's JVM, a broker), not with what it was forked from.
            argv = command_line(key[0])
            if argv and argv[0]:
                self.kinds[key] = kind(argv)
            elif key not in self.kinds:  # a kernel thread or a zombie: its command line is empty
                self.kinds[key] = kind([])
            self.first.setdefault(key, ticks if running_before else 0)
            self.last[key] = ticks

    def by_kind(self) -> list[tuple[float, int, str]]:
        """CPU seconds per kind of process: (seconds, processes, kind), the largest first."""
        return sum_by(self.last, key=lambda k: self.kinds[k], seconds=lambda k: (self.last[k] - self.first[k]) / TICKS)


def measure(command: list[str], interval_s: float) -> dict[str, Any]:
    start_busy, start = busy_ticks(), time.monotonic()
    sampler = Sampler()
    proc = subprocess.Popen(command)
    while proc.poll() is None:
        time.sleep(interval_s)
        sampler.sample()
    busy = (busy_ticks() - start_busy) / TICKS
    rows: list[dict[str, Any]] = [{"kind": k, "cpu_s": round(s, 1), "processes": n}
                                 for s, n, k in sampler.by_kind() if round(s, 1) > 0]
    attributed = sum(r["cpu_s"] for r in rows)
    return {"command": command, "exit_code": proc.returncode, "wall_s": round(time.monotonic() - start, 1),
            "busy_cpu_s": round(busy, 1), "cpus": os.cpu_count(), "by_kind": rows,
            "unattributed_cpu_s": round(busy - attributed, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("command", nargs="+", help="the command to run (after --)")
    args = parser.parse_args()
    figures = measure(args.command, args.interval)
    busy = figures["busy_cpu_s"] or 1.0
    print(f"{figures['wall_s']} s wall, {figures['busy_cpu_s']} s of CPU busy on {figures['cpus']} CPUs "
          f"({figures['busy_cpu_s'] / figures['wall_s'] / figures['cpus']:.0%} of the machine)")
    for row in figures["by_kind"]:
        print(f"  {row['cpu_s']:8.1f} s  {row['cpu_s'] / busy:5.1%}  {row['kind']} ({row['processes']} processes)")
    print(f"  {figures['unattributed_cpu_s']:8.1f} s  {figures['unattributed_cpu_s'] / busy:5.1%}  "
          f"not attributed (processes shorter than {args.interval} s, the kernel)")
    print(f"figures: {save_figures('cpu-by-process', figures)}")
    return figures["exit_code"]


if __name__ == "__main__":
    raise SystemExit(main())
