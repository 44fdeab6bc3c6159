"""What a run of Kafka's command-line tools costs with and without the archive of their classes
(class-data sharing: `kafka-tool archive-classes`, which the kafka role runs once a node is
healthy). Every health check, wait and procedure step of the playbooks starts such a JVM, many of
them while a broker restarts on the same cores.

Side by side in one run, alternating so the machine's drift hits both alike: the health check's
own query (`kafka-tool topics --describe --under-replicated-partitions`) with the archive and
with `KAFKA_TOOL_ARCHIVE=off`; the CPU of each run (its process tree, from RUSAGE_CHILDREN) and
its wall time, medians and their ratios.

    python -m benchmarks.perf.tool_start [--inventory inventories/local] [--rounds 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

from benchmarks.core import paths
from benchmarks.hosts import inventory as inventory_lib
from benchmarks.perf import children_cpu_s, save_figures

QUERY = ("topics", "--describe", "--under-replicated-partitions")


def one_run(tool: str, archive: bool) -> dict[str, float]:
    """One run of the query: its wall time and the CPU of its process tree."""
    env = {**os.environ, "KAFKA_TOOL_ARCHIVE": "on" if archive else "off"}
    cpu, wall = children_cpu_s(), time.monotonic()
    subprocess.run([tool, *QUERY], env=env, check=True, capture_output=True, timeout=300)
    return {"wall_s": time.monotonic() - wall, "cpu_s": children_cpu_s() - cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inventory", type=Path, default=paths.DEFAULT_INVENTORY)
    parser.add_argument("--rounds", type=int, default=8, help="pairs of runs, each pair in alternating order")
    args = parser.parse_args()
    inv = inventory_lib.load(args.inventory)
    broker = inv.brokers[0]
    archives = sorted(Path(broker.tool).parent.glob("tools-*.jsa"))
    if not archives:
        raise SystemExit(f"no archive of the tools' classes beside {broker.tool}: deploy the cluster with the "
                         f"kafka role (it runs `kafka-tool archive-classes` once the node is healthy)")
    one_run(broker.tool, True)  # the files' pages in memory for both
    one_run(broker.tool, False)
    rows: dict[str, list[dict[str, float]]] = {"archive": [], "no_archive": []}
    for round_ in range(args.rounds):
        order = (True, False) if round_ % 2 == 0 else (False, True)
        for archive in order:
            rows["archive" if archive else "no_archive"].append(one_run(broker.tool, archive))
    med = statistics.median
    results = {
        "inventory": str(args.inventory), "kafka_version": inv.kafka_version, "archive": str(archives[-1]),
        "rounds": args.rounds,
        "medians": {f"{name}_{field}": med(r[field] for r in runs) for name, runs in rows.items()
                    for field in ("cpu_s", "wall_s")},
        "raw": rows,
    }
    m = results["medians"]
    results["ratios"] = {"cpu_archive_over_none": m["archive_cpu_s"] / m["no_archive_cpu_s"],
                         "wall_archive_over_none": m["archive_wall_s"] / m["no_archive_wall_s"]}
    print(f"kafka-tool {' '.join(QUERY)} on {inv.kafka_version}, medians of {args.rounds} runs each:")
    print(f"  CPU : {m['archive_cpu_s']:.2f} s with the archive, {m['no_archive_cpu_s']:.2f} s without "
          f"(ratio {results['ratios']['cpu_archive_over_none']:.2f})")
    print(f"  wall: {m['archive_wall_s']:.2f} s with the archive, {m['no_archive_wall_s']:.2f} s without "
          f"(ratio {results['ratios']['wall_archive_over_none']:.2f})")
    print(f"raw figures: {save_figures('tool-start', results)}")


if __name__ == "__main__":
    main()
