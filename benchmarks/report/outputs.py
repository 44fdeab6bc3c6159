"""The report of a run or sweep directory, end to end: Spark session, inputs, analysis,
verdicts, then report.html, summary.csv (a row per run), trials.csv (a row per configuration:
its trials summed up), summary.parquet, lost-messages.csv, for runs with operational procedures procedure-steps.csv,
for runs with consumer groups consumer-lag.csv, rebalances.csv and consumer-groups.csv, and for
transactional runs transactions.csv (the transactions that broke a promise or were not confirmed)."""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame

from benchmarks.analysis import inputs, metrics, trials
from benchmarks.analysis.session import fit_codegen, spark_session
from benchmarks.record import suite
from benchmarks.report import html
from benchmarks.report.collect import ReportData, collect
from benchmarks.report.verdict import trials_verdict, verdict

SUMMARY_COLUMNS = (*metrics.RUN_COLUMNS, "verdict")


@dataclasses.dataclass
class Report:
    data: ReportData
    html: Path
    csv: Path
    parquet: Path
    lost: Path | None


def local_directory(root: str) -> Path | None:
    """The local directory `root` names (a plain path or file:// URL), or None for hdfs://, s3a://, ..."""
    parsed = urlparse(root)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else root)
    return None


def summary_rows(data: ReportData) -> list[dict]:
    """One flat row per run (lists as "; "-separated text, so CSV and Parquet hold the same)."""
    rows = [{**r.summary.to_dict(), "verdict": r.verdict} for r in data.runs]
    for row in rows:
        row["invalid_reasons"] = "; ".join(row["invalid_reasons"] or [])
        row["fault_schedule"] = json.dumps(row["fault_schedule"] or [])
        row["causes"] = json.dumps(row["causes"] or {}, sort_keys=True)
    return rows


def _write_csv(path: Path, columns: tuple[str, ...], rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def write(data: ReportData, out_dir: Path) -> Report:
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = summary_rows(data)
    csv_path = out_dir / "summary.csv"
    _write_csv(csv_path, SUMMARY_COLUMNS, rows)
    _write_csv(out_dir / "trials.csv", (*trials.TRIALS_COLUMNS, "verdict"),
               [{**t.figures.to_dict(), "verdict": t.verdict} for t in data.trials])
    parquet_path = out_dir / "summary.parquet"
    pq.write_table(pa.Table.from_pylist(rows), parquet_path)
    lost_path = None
    if data.lost_all:
        lost_path = out_dir / "lost-messages.csv"
        _write_csv(lost_path, tuple(data.lost_all[0]), data.lost_all)
    if data.steps_all:
        _write_csv(out_dir / "procedure-steps.csv", tuple(data.steps_all[0]), data.steps_all)
    for name, table in data.tables.items():  # consumer-lag.csv, rebalances.csv, ...: only those with rows
        if table:
            _write_csv(out_dir / f"{name}.csv", tuple(table[0]), table)
    html_path = out_dir / "report.html"
    tmp = html_path.with_suffix(".html.tmp")
    tmp.write_text(html.page(data), encoding="utf-8")
    tmp.replace(html_path)
    return Report(data, html_path, csv_path, parquet_path, lost_path)


def build(root: str, out_dir: Path | None = None, master: str = "local[*]", conf: dict[str, str] | None = None,
          gap_threshold_s: float = metrics.GAP_THRESHOLD_S,
          keep: Callable[[DataFrame], DataFrame] | None = None) -> Report:
    """Analyse every run under `root` (any path Spark reads) and write the report to `out_dir`
    (default: `root` itself when it is local). The intermediate results are `keep`: by default
    checkpointed on one machine (faster) and cached on a cluster (recomputed if an executor goes)."""
    if keep is None:
        keep = metrics.checkpointed if master.startswith("local") else metrics.cached
    if out_dir is None:
        out_dir = local_directory(root)
        if out_dir is None:
            raise inputs.InputError(f"{root} is not a local directory: give --out DIR for the report")
    spark = spark_session(master, conf)
    found = inputs.read(spark, root)
    fit_codegen(spark, found.produce.count(), conf)
    analysis = metrics.analyse(found.runs, found.events, found.produce, found.consume, found.timeline,
                               gap_threshold_s=gap_threshold_s, txns=found.txns, changes=found.changes, keep=keep)
    events = [row.asDict() for row in found.events.collect()]
    data = collect(analysis, events, source=root)
    local = local_directory(root)
    if local is not None and (plan := suite.read_plan(local)) is not None:
        data.missing = [suite.describe(run, len(plan.runs)) for run in suite.missing(local)]
    peers = [r.summary for r in data.runs]
    for run in data.runs:
        run.verdict, run.severity = verdict(run.summary, peers)
    for configuration in data.trials:
        configuration.verdict, configuration.severity = trials_verdict(configuration.figures)
    return write(data, Path(out_dir))
