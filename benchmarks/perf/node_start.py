"""What a Kafka node's start costs with and without the archive of the classes it loads as it
starts (class-data sharing: the jvm_service role's control script lists them at a node's first
start, `<ctl> archive-classes` archives them once the node is healthy, later starts map them).
Every restart of a roll, every heal of a killed broker starts such a JVM, under a procedure
often while the load fills the same cores.

Side by side in one run, alternating so the machine's drift hits both alike: broker 0 of a
deployed cluster stopped (until the others no longer list it), started with the archive and with
`JVM_SERVICE_CLASS_ARCHIVE=off`, and timed until the cluster's metadata lists it again; the CPU
its JVM used by then. Medians and their ratios.

    python -m benchmarks.perf.node_start [--inventory inventories/local] [--rounds 5]
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks.hosts import inventory as inventory_lib
from benchmarks.perf import ab_arguments, archive_figures, cpu_ticks, proc_stat, save_figures, with_and_without


def _listed(admin: Any, broker_id: int) -> bool:
    try:
        return broker_id in admin.list_topics(timeout=2).brokers
    except Exception:  # a broker restarting answers nothing: not listed yet
        return False


def _cpu_s(pid: int) -> float:
    return cpu_ticks(proc_stat(pid)) / os.sysconf("SC_CLK_TCK")


def one_start(ctl: str, admin: Any, broker_id: int, archive: bool) -> dict[str, float]:
    """Stop the node, start it, and time it until the cluster lists it; the CPU its JVM used."""
    subprocess.run([ctl, "stop"], check=True, capture_output=True, timeout=180)
    deadline = time.monotonic() + 120
    while _listed(admin, broker_id):
        if time.monotonic() > deadline:
            raise SystemExit(f"broker {broker_id} is still listed 120 s after it stopped")
        time.sleep(0.1)
    env = {**os.environ, "JVM_SERVICE_CLASS_ARCHIVE": "on" if archive else "off"}
    started = time.monotonic()
    subprocess.run([ctl, "start", "--no-wait"], env=env, check=True, capture_output=True, timeout=180)
    while not _listed(admin, broker_id):
        if time.monotonic() - started > 180:
            raise SystemExit(f"broker {broker_id} not listed 180 s after its start")
        time.sleep(0.05)
    wall = time.monotonic() - started
    pid = int(subprocess.run([ctl, "pid"], check=True, capture_output=True, text=True).stdout)
    mapped = "-XX:SharedArchiveFile=" in Path(f"/proc/{pid}/cmdline").read_text()
    if mapped != archive:
        raise SystemExit(f"broker {broker_id} started {'with' if mapped else 'without'} the archive, "
                         f"asked {'with' if archive else 'without'}: is the cluster deployed with the kafka role?")
    return {"wall_s": wall, "cpu_s": _cpu_s(pid)}


def main() -> None:
    args = ab_arguments(__doc__, 5, "starts")
    from confluent_kafka.admin import AdminClient

    inv = inventory_lib.load(args.inventory)
    node, others = inv.brokers[0], inv.brokers[1:]
    if not others:
        raise SystemExit(f"{args.inventory}: needs two brokers or more (one is restarted, another asked)")
    admin = AdminClient({"bootstrap.servers": others[0].bootstrap})
    one_start(node.ctl, admin, node.broker_id, True)  # the archive made, and its pages in memory
    rows = with_and_without(args.rounds, lambda archive: one_start(node.ctl, admin, node.broker_id, archive))
    subprocess.run([node.ctl, "start"], check=True, capture_output=True, timeout=300)  # left healthy
    m, ratios, said = archive_figures(rows)
    print(f"broker {node.broker_id} ({inv.kafka_version}, {inv.path.name}) started until listed, "
          f"medians of {args.rounds} starts each:\n{said}")
    figures = {"inventory": str(args.inventory), "kafka_version": inv.kafka_version, "rounds": args.rounds,
               "medians": m, "ratios": ratios, "raw": rows}
    print(f"raw figures: {save_figures('node-start', figures)}")


if __name__ == "__main__":
    main()
