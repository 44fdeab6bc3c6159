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

import os
import subprocess
import time
from pathlib import Path

from benchmarks.hosts import inventory as inventory_lib
from benchmarks.perf import ab_arguments, archive_figures, children_cpu_s, save_figures, with_and_without

QUERY = ("topics", "--describe", "--under-replicated-partitions")


def one_run(tool: str, archive: bool) -> dict[str, float]:
    """One run of the query: its wall time and the CPU of its process tree."""
    env = {**os.environ, "KAFKA_TOOL_ARCHIVE": "on" if archive else "off"}
    cpu, wall = children_cpu_s(), time.monotonic()
    subprocess.run([tool, *QUERY], env=env, check=True, capture_output=True, timeout=300)
    return {"wall_s": time.monotonic() - wall, "cpu_s": children_cpu_s() - cpu}


def main() -> None:
    args = ab_arguments(__doc__, 8, "runs")
    inv = inventory_lib.load(args.inventory)
    broker = inv.brokers[0]
    archives = sorted(Path(broker.tool).parent.glob("tools-*.jsa"))
    if not archives:
        raise SystemExit(f"no archive of the tools' classes beside {broker.tool}: deploy the cluster with the "
                         f"kafka role (it runs `kafka-tool archive-classes` once the node is healthy)")
    one_run(broker.tool, True)  # the files' pages in memory for both
    one_run(broker.tool, False)
    rows = with_and_without(args.rounds, lambda archive: one_run(broker.tool, archive))
    m, ratios, said = archive_figures(rows)
    results = {"inventory": str(args.inventory), "kafka_version": inv.kafka_version, "archive": str(archives[-1]),
               "rounds": args.rounds, "medians": m, "ratios": ratios, "raw": rows}
    print(f"kafka-tool {' '.join(QUERY)} on {inv.kafka_version}, medians of {args.rounds} runs each:\n{said}")
    print(f"raw figures: {save_figures('tool-start', results)}")


if __name__ == "__main__":
    main()
