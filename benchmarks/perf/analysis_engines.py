"""The Spark analysis against the same metrics computed by DuckDB on the same Parquet files,
side by side in one run, on synthetic runs of 1 and 10 million messages (`ledger_synth`).

Printed per size: Spark cold and warm (median of the warm repeats), DuckDB warm, the ratio
Spark / DuckDB (target <= 5x warm), whether every count is identical, the largest relative
difference of the latency percentiles (target < 1%), and how Spark's time grows from the
smallest to the largest size (target: no worse than linear).

    python -m benchmarks.perf.analysis_engines [--sizes 1000000 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from benchmarks.core import paths
from benchmarks.perf import ledger_synth, save_figures

COUNTS = ("sent", "acked", "failed", "indeterminate", "lost", "unseen", "duplicates", "reordered", "failed_delivered",
          "indeterminate_delivered")
PERCENTILES = ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_p999_ms", "latency_max_ms")


def _first(df) -> dict:
    row = df.first()
    if row is None:
        raise RuntimeError("the analysis returned no row for the synthetic run")
    return row.asDict()


def spark_metrics(spark, run_dir: Path) -> dict:
    """The metrics the report needs, computed by the analysis jobs (every action collected)."""
    from pyspark.sql import functions as F

    from benchmarks.analysis import inputs, metrics

    found = inputs.read(spark, str(run_dir))
    a = metrics.analyse(found.runs, found.events, found.produce, found.consume, found.timeline)
    counts = _first(a.counts.join(a.reordered, on="run_id", how="left"))
    measured = _first(a.phases.filter(F.col("phase") == "measured"))
    windows = a.unavailability.collect()
    seconds = a.per_second.collect()
    a.faults.collect()
    a.release()
    return {
        **{k: counts[k] for k in COUNTS},
        **{k: measured[k] for k in PERCENTILES}, "throughput_msgs_s": measured["throughput_msgs_s"],
        "unavailable_windows": len(windows), "unavailable_s": round(sum(w.duration_s for w in windows), 6),
        "acked_per_second": [int(r.acked) for r in sorted(seconds, key=lambda r: r.second)],
    }


DUCKDB_SQL = """
CREATE OR REPLACE TEMP VIEW produce AS SELECT * FROM read_parquet('{run}/ledger/produce/*.parquet');
CREATE OR REPLACE TEMP VIEW consume AS SELECT * FROM read_parquet('{run}/ledger/consume/*.parquet');
CREATE OR REPLACE TEMP TABLE run AS SELECT * FROM read_json_auto('{run}/summary.json');
CREATE OR REPLACE TEMP TABLE ids AS
  SELECT producer, seq, count(*) AS copies, min("offset") AS first_offset, arg_min("partition", "offset") AS first_partition
  FROM consume WHERE "group" = 'final-read' GROUP BY producer, seq;
CREATE OR REPLACE TEMP TABLE highest AS
  SELECT "partition", max("offset") AS max_offset FROM consume WHERE "group" = 'final-read' GROUP BY "partition";
"""

DUCKDB_COUNTS = """
WITH status AS (
  SELECT p.outcome, p."offset", coalesce(i.copies, 0) AS copies, h.max_offset
  FROM produce p LEFT JOIN ids i USING (producer, seq) LEFT JOIN highest h ON h."partition" = p."partition")
SELECT count(*) AS sent, count(*) FILTER (outcome = 'acked') AS acked, count(*) FILTER (outcome = 'failed') AS failed,
       count(*) FILTER (outcome = 'indeterminate') AS indeterminate,
       count(*) FILTER (outcome = 'acked' AND copies = 0 AND max_offset > "offset") AS lost,
       count(*) FILTER (outcome = 'acked' AND copies = 0 AND NOT coalesce(max_offset > "offset", false)) AS unseen,
       count(*) FILTER (outcome = 'failed' AND copies > 0) AS failed_delivered,
       count(*) FILTER (outcome = 'indeterminate' AND copies > 0) AS indeterminate_delivered
FROM status
"""

DUCKDB_DUPLICATES = "SELECT coalesce(sum(copies - 1), 0) FROM ids"

DUCKDB_REORDERED = """
SELECT count(*) FILTER (seq < later_before) FROM (
  SELECT seq, max(seq) OVER (PARTITION BY first_partition, producer ORDER BY first_offset
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS later_before FROM ids)
"""

DUCKDB_LATENCY = """
SELECT quantile_disc(lat, [0.5, 0.95, 0.99, 0.999]) AS q, max(lat) AS mx,
       (SELECT count(*) FROM produce, run WHERE outcome = 'acked' AND ack_ns >= run.measured_from_ns AND ack_ns < run.load_end_ns)
         / ((SELECT load_end_ns - measured_from_ns FROM run) / 1e9) AS throughput
FROM (SELECT (ack_ns - intended_ns) / 1e6 AS lat FROM produce, run
      WHERE outcome = 'acked' AND intended_ns >= run.measured_from_ns AND intended_ns < run.load_end_ns)
"""

# The same windows as metrics.unavailability: gaps between 100 ms buckets of acks, with the
# start and end of the load as edges, at least the threshold and 5 acks at the partition's rate.
DUCKDB_UNAVAILABLE = """
WITH buckets AS (
  SELECT "partition", min(ack_ns) AS first_ns, max(ack_ns) AS last_ns FROM produce WHERE outcome = 'acked'
  GROUP BY "partition", floor(ack_ns / 100000000)),
per AS (SELECT "partition", count(*) AS acks, max(ack_ns) AS last_ack FROM produce WHERE outcome = 'acked' GROUP BY "partition"),
parts AS (SELECT unnest(range(0, (SELECT partitions FROM run))) AS "partition"),
edges AS (
  SELECT p."partition", e AS first_ns, e AS last_ns FROM parts p LEFT JOIN per USING ("partition"), run,
  unnest([run.load_start_ns, greatest(run.load_end_ns, coalesce(per.last_ack, 0))]) AS t(e)),
ordered AS (
  SELECT "partition", first_ns, lag(last_ns) OVER (PARTITION BY "partition" ORDER BY first_ns, last_ns) AS prev_last
  FROM (SELECT * FROM buckets UNION ALL SELECT * FROM edges))
SELECT count(*), coalesce(sum((first_ns - prev_last) / 1e9), 0)
FROM ordered o LEFT JOIN per USING ("partition"), run
WHERE prev_last IS NOT NULL
  AND first_ns - prev_last >= greatest({threshold} * 1e9, 5 * (run.load_end_ns - run.load_start_ns) / coalesce(per.acks, 1))
"""

DUCKDB_PER_SECOND = """
SELECT floor((ack_ns - run.load_start_ns) / 1e9) AS second, count(*) FROM produce, run WHERE outcome = 'acked'
GROUP BY second ORDER BY second
"""


def duckdb_metrics(con, run_dir: Path) -> dict:
    from benchmarks.analysis.metrics import GAP_THRESHOLD_S

    con.execute(DUCKDB_SQL.format(run=run_dir))
    names = ("sent", "acked", "failed", "indeterminate", "lost", "unseen", "failed_delivered", "indeterminate_delivered")
    counts = dict(zip(names, con.execute(DUCKDB_COUNTS).fetchone()))
    counts["duplicates"] = int(con.execute(DUCKDB_DUPLICATES).fetchone()[0])
    counts["reordered"] = int(con.execute(DUCKDB_REORDERED).fetchone()[0])
    q, mx, throughput = con.execute(DUCKDB_LATENCY).fetchone()
    windows, seconds = con.execute(DUCKDB_UNAVAILABLE.format(threshold=GAP_THRESHOLD_S)).fetchone()
    per_second = [int(c) for _, c in con.execute(DUCKDB_PER_SECOND).fetchall()]
    return {**{k: int(counts[k]) for k in COUNTS}, **dict(zip(PERCENTILES, [*q, mx])), "throughput_msgs_s": throughput,
            "unavailable_windows": int(windows), "unavailable_s": round(float(seconds), 6), "acked_per_second": per_second}


def compare(spark_result: dict, duck_result: dict) -> tuple[list[str], float]:
    """(names of counts that differ, largest relative difference of a percentile)."""
    differ = [k for k in (*COUNTS, "unavailable_windows", "acked_per_second") if spark_result[k] != duck_result[k]]
    if abs(spark_result["unavailable_s"] - duck_result["unavailable_s"]) > 1e-3:
        differ.append("unavailable_s")
    worst = max(abs(spark_result[k] - duck_result[k]) / abs(duck_result[k]) for k in PERCENTILES if duck_result[k])
    return differ, worst


def timed(fn, *args):
    started = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=3, help="warm repeats per engine (median quoted)")
    parser.add_argument("--data", type=Path, default=paths.STATE_DIR / "perf-analysis",
                        help="where the synthetic runs are generated (kept for the next invocation)")
    args = parser.parse_args()
    import duckdb

    from benchmarks.analysis.session import spark_session

    spark = spark_session("local[*]")
    rows = []
    for size in args.sizes:
        run_dir = args.data / f"{ledger_synth.RUN_ID}-{size}"
        if not (run_dir / "summary.json").exists():
            print(f"generating {size:,} messages in {run_dir} ...", flush=True)
            ledger_synth.generate(args.data, size)
        cold, _ = timed(spark_metrics, spark, run_dir)
        spark_times, duck_times = [], []
        con = duckdb.connect()
        duckdb_metrics(con, run_dir)  # warm-up: file cache, plans
        for _ in range(args.repeat):
            t, spark_result = timed(spark_metrics, spark, run_dir)
            spark_times.append(t)
            t, duck_result = timed(duckdb_metrics, con, run_dir)
            duck_times.append(t)
        differ, worst = compare(spark_result, duck_result)
        row = {"messages": size, "spark_cold_s": cold, "spark_warm_s": statistics.median(spark_times),
               "duckdb_warm_s": statistics.median(duck_times), "counts_identical": not differ, "differ": differ,
               "max_percentile_diff": worst, "lost": spark_result["lost"], "reordered": spark_result["reordered"],
               "duplicates": spark_result["duplicates"], "unavailable_windows": spark_result["unavailable_windows"]}
        row["ratio"] = row["spark_warm_s"] / row["duckdb_warm_s"]
        rows.append(row)
        print(f"{size:>11,} messages: Spark cold {cold:6.1f} s, warm {row['spark_warm_s']:6.1f} s | DuckDB warm "
              f"{row['duckdb_warm_s']:5.2f} s | Spark/DuckDB {row['ratio']:5.1f}x (target <= 5) | counts identical: "
              f"{'yes' if not differ else 'NO ' + ', '.join(differ)} | percentiles within {worst:.3%} (target < 1%) | "
              f"lost {row['lost']}, reordered {row['reordered']}, duplicates {row['duplicates']}, "
              f"windows {row['unavailable_windows']}", flush=True)
    if len(rows) > 1:
        small, large = rows[0], rows[-1]
        growth = large["spark_warm_s"] / small["spark_warm_s"]
        size_ratio = large["messages"] / small["messages"]
        print(f"Spark warm time grows {growth:.1f}x from {small['messages']:,} to {large['messages']:,} messages "
              f"({size_ratio:.0f}x the data; target: no worse than linear, i.e. <= {size_ratio:.0f}x)")
    print(f"figures: {save_figures('analysis', rows)}")
    spark.stop()


if __name__ == "__main__":
    main()
