"""Runs the analysis' actions once and gathers their (small) results as plain Python data."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any

from pyspark.sql import functions as F

from benchmarks.analysis.metrics import Analysis
from benchmarks.analysis.rows import RunRow, TrialsRow
from benchmarks.record import run_events

LOST_IDS_SHOWN = 50


@dataclasses.dataclass
class RunReport:
    summary: RunRow
    bounds: dict[str, Any]
    phases: list[dict[str, Any]]
    end_to_end: list[dict[str, Any]]
    per_second: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    segments: list[dict[str, Any]]
    health: list[dict[str, Any]]
    unavailability: list[dict[str, Any]]
    faults: list[dict[str, Any]]
    fault_events: list[dict[str, Any]]
    lost: list[dict[str, Any]]
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # of the procedures run under the load
    verdict: str = ""
    severity: str = "good"


@dataclasses.dataclass
class TrialsReport:
    """A configuration's trials summed up (analysis/trials.py), and their verdict."""

    figures: TrialsRow
    verdict: str = ""
    severity: str = "good"


@dataclasses.dataclass
class ReportData:
    source: str
    runs: list[RunReport]
    lost_all: list[dict[str, Any]]
    steps_all: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    trials: list[TrialsReport] = dataclasses.field(default_factory=list)
    # Tables written as they are (analysis/consumers.py, analysis/transactions.py), by name.
    tables: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    # The runs a stopped suite planned and never ended (benchmarks.record.suite), as "[4/7] name".
    missing: list[str] = dataclasses.field(default_factory=list)


def _rows(df) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in df.collect()]


def _by_run(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        out[row["run_id"]].append(row)
    return out


def collect(analysis: Analysis, events_rows: list[dict[str, Any]], source: str) -> ReportData:
    """Every result of `analysis`, grouped by run, in the order of the summary."""
    summary = _rows(analysis.summary)
    bounds = {r["run_id"]: r for r in _rows(analysis.bounds)}
    grouped = {name: _by_run(_rows(getattr(analysis, name))) for name in (
        "phases", "end_to_end", "per_second", "errors", "segments", "health", "unavailability", "faults", "steps")}
    lost_all = _rows(analysis.lost.orderBy("run_id", "partition", "offset"))
    lost = _by_run(lost_all)
    kinds = (run_events.FAULT_INTENT, run_events.FAULT_INJECTED, run_events.FAULT_HEALED, run_events.FAULT_SKIPPED,
             run_events.FAULT_MISSED)
    fault_events = _by_run([e for e in events_rows if e["event"] in kinds])
    runs = []
    for row in summary:
        rid = row["run_id"]
        runs.append(RunReport(
            summary=RunRow.of(row), bounds=bounds[rid],
            phases=grouped["phases"].get(rid, []), end_to_end=grouped["end_to_end"].get(rid, []),
            per_second=sorted(grouped["per_second"].get(rid, []), key=lambda r: r["second"]),
            errors=sorted(grouped["errors"].get(rid, []), key=lambda r: -r["messages"]),
            segments=sorted(grouped["segments"].get(rid, []), key=lambda r: (r["partition"], r["start_ns"])),
            health=sorted(grouped["health"].get(rid, []), key=lambda r: r["partition"]),
            unavailability=sorted(grouped["unavailability"].get(rid, []), key=lambda r: (r["partition"], r["start_ns"])),
            faults=sorted(grouped["faults"].get(rid, []), key=lambda r: (r["injected_ns"], r["partition"])),
            fault_events=fault_events.get(rid, []), lost=lost.get(rid, [])[:LOST_IDS_SHOWN],
            steps=sorted(grouped["steps"].get(rid, []), key=lambda r: (r["procedure_id"], r["step"]))))
    steps_all = [step for run in runs for step in run.steps]
    odd = F.col("lost_commit") | F.col("aborted_read") | F.col("torn") | (F.col("fate") == "unknown")
    tables = {
        "consumer-lag": _rows(analysis.lag.orderBy("run_id", "group", "partition", "second")),
        "rebalances": _rows(analysis.rebalances.orderBy("run_id", "group", "rebalance")),
        "consumer-groups": _rows(analysis.groups.orderBy("run_id", "group")),
        # Transactions are many: those that broke a promise, or whose end was not confirmed.
        "transactions": _rows(analysis.transactions.filter(odd).orderBy("run_id", "producer", "txn")),
        "security-cost": _rows(analysis.security_cost),
    }
    return ReportData(source=source, runs=runs, lost_all=lost_all, steps_all=steps_all,
                      trials=[TrialsReport(TrialsRow.of(row)) for row in _rows(analysis.trials)], tables=tables)
