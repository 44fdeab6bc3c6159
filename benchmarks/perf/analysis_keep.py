"""The report built two ways, side by side in one run, on the same results: the analysis's
intermediate results cached (what a cluster gets) and checkpointed (what one machine gets).

Printed per repeat the seconds of each way (the two alternate which goes first; the very first
build also starts Spark, so it is left out of the medians), then the medians and the ratio
checkpointed / cached (target < 1), and whether both wrote the same summary.csv.

    python -m benchmarks.perf.analysis_keep DIR [--repeat 3]

DIR: a run directory or a directory of runs, e.g. benchmarks/results/<time>-seeds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.analysis import metrics
from benchmarks.report import outputs

WAYS = {"cached": metrics.cached, "checkpointed": metrics.checkpointed}


def build_once(root: Path, out: Path, way: str) -> float:
    """Seconds to build the report with the intermediate results kept `way`; nothing of an
    earlier build stays cached for it to find."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.catalog.clearCache()
    started = time.monotonic()
    outputs.build(str(root), out, keep=WAYS[way])
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a run directory or a directory of runs")
    parser.add_argument("--repeat", type=int, default=3, help="builds of each way (default 3)")
    args = parser.parse_args()
    if args.repeat < 2:
        parser.error("--repeat must be at least 2: the first build starts Spark and is left out")
    seconds: dict[str, list[float]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="analysis-keep-") as tmp:
        outs = {way: Path(tmp) / way for way in WAYS}
        for i in range(args.repeat):
            order = list(WAYS) if i % 2 == 0 else list(reversed(WAYS))
            for way in order:
                took = build_once(args.root, outs[way], way)
                seconds[way].append(took)
                print(f"repeat {i + 1}: {way:12s} {took:6.1f} s" + ("  (started Spark)" if i == 0 and way == order[0]
                                                                      else ""), flush=True)
        same = (outs["cached"] / "summary.csv").read_bytes() == (outs["checkpointed"] / "summary.csv").read_bytes()
    first = "cached"  # the first build of the session, which also started Spark
    medians = {way: statistics.median(s[1:] if way == first else s) for way, s in seconds.items()}
    print(f"median: cached {medians['cached']:.1f} s, checkpointed {medians['checkpointed']:.1f} s, "
          f"ratio checkpointed/cached {medians['checkpointed'] / medians['cached']:.2f} (target < 1)")
    print(f"same summary.csv: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
