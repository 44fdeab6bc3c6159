"""The self-contained HTML page: a comparison table with verdicts, loss bars, and per run the
seed labs' questions answered (who led what before and after each fault, when the ISR shrank
and recovered, what the producer saw, what was lost) with throughput, latency and leader / ISR
timelines, fault windows shaded. Inline CSS and SVG only: it opens offline.

The page is templates/report.html.j2 (autoescaped); this module gives it each run's charts
(SVG markup from svg.py) and the rows of its tables, formatted."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from benchmarks.analysis.rows import RunRow, TrialsRow
from benchmarks.record import run_events
from benchmarks.report import svg
from benchmarks.report.collect import LOST_IDS_SHOWN, ReportData, RunReport

_TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
                                autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def _s(ns: int | None, origin: int) -> float | None:
    return None if ns is None else (ns - origin) / 1e9


def _num(value: Any, digits: int = 0) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def _settings(acks: str, replication_factor: int, min_insync_replicas: int, unclean_leader_election: bool,
              eligible_leader_replicas: bool | None = None) -> str:
    return (f"acks={acks}, RF {replication_factor}, min ISR {min_insync_replicas}"
            + (", unclean election" if unclean_leader_election else "")
            + ("" if eligible_leader_replicas is None else f", ELR {'on' if eligible_leader_replicas else 'off'}"))


COMPARISON = ("scenario", "acks", "RF", "min ISR", "unclean", "ELR", "fault", "sent", "acked", "failed", "unconf.", "lost",
              "unseen", "dup.", "reord.", "acked/s", "p50 ms", "p99 ms", "p99.9 ms", "no-ack s")


LEADER_FROM = {"isr": "the ISR", "elr": "the ELR", "unclean": "unclean election"}


def figures(s: RunRow) -> list[tuple[str, Any]]:
    """A run's row of the comparison table: (column, cell)."""
    cells = [_run_name(s), s.acks, s.replication_factor,
             s.min_insync_replicas, _num(s.unclean_leader_election), _num(s.eligible_leader_replicas),
             Markup('<span class="small">{}</span>').format(s.fault),
             _num(s.sent), _num(s.acked), _num(s.failed), _num(s.indeterminate),
             Markup("<b>{}</b>").format(_num(s.lost)), _num(s.unseen), _num(s.duplicates), _num(s.reordered),
             _num(s.throughput_msgs_s), _num(s.latency_p50_ms, 1), _num(s.latency_p99_ms, 1),
             _num(s.latency_p999_ms, 1), _num(s.unavailable_s, 1)]
    return list(zip(COMPARISON, cells))


def loss_bars(data: ReportData) -> str:
    items = [(r.summary.scenario, [("lost", r.summary.lost or 0), ("unseen", r.summary.unseen or 0),
                                   ("duplicates", r.summary.duplicates or 0),
                                   ("unconfirmed but written",
                                    (r.summary.indeterminate_delivered or 0) + (r.summary.failed_delivered or 0))])
             for r in data.runs if r.summary.checked]
    return svg.bars(items, "acknowledged messages lost or unseen, duplicates, refused writes that landed anyway")


def _fault_windows(run: RunReport, origin: int) -> list[tuple[float, float, str]]:
    """(start, end, label) of every injected fault, in seconds from the start of the load."""
    intents = {e["fault_id"]: e for e in run.fault_events if e["event"] == run_events.FAULT_INTENT}
    healed = {e["fault_id"]: e["at_ns"] for e in run.fault_events if e["event"] == run_events.FAULT_HEALED}
    end = run.bounds["load_end_ns"]
    out = []
    for e in run.fault_events:
        if e["event"] == run_events.FAULT_INJECTED:
            intent = intents.get(e["fault_id"], {})
            label = f"{intent.get('kind', 'fault')} ({intent.get('reason', '')})"
            out.append(((e["at_ns"] - origin) / 1e9, (min(healed.get(e["fault_id"], end), end) - origin) / 1e9, label))
    for step in run.steps:  # each play of a procedure, on the same time axis as the traffic
        out.append(((step["start_ns"] - origin) / 1e9, (min(step["end_ns"] or end, end) - origin) / 1e9,
                    f"{step['procedure']} {step['step']}: {step['play']}" + (f" ({step['node']})" if step["node"] else "")))
    return out


def _leader_lanes(run: RunReport, origin: int, shade: list[tuple[float, float, str]], x_range: tuple[float, float]) -> str:
    min_isr = run.summary.min_insync_replicas
    leaders = sorted({seg["leader"] for seg in run.segments if seg["leader"] is not None})
    fill = {b: svg.color(i) for i, b in enumerate(leaders)}
    rows: dict[int, list[tuple[float, float, str, str]]] = {}
    for seg in run.segments:
        isr = [x for x in (seg["isr"] or "").split(",") if x]
        leader = seg["leader"]
        colour = "#d62728" if leader is None else fill[leader]
        if leader is not None and len(isr) < min_isr:
            colour = "#ffb300"
        tip = (f"partition {seg['partition']}: leader {leader if leader is not None else 'none'}, ISR [{seg['isr']}] "
               f"from {(seg['start_ns'] - origin) / 1e9:.1f} s to {(seg['end_ns'] - origin) / 1e9:.1f} s")
        start, end = (seg["start_ns"] - origin) / 1e9, (seg["end_ns"] - origin) / 1e9
        rows.setdefault(seg["partition"], []).append((start, end, colour, tip))
    legend = [(f"leader {b}", fill[b]) for b in leaders] + [("no leader", "#d62728"), (f"ISR < {min_isr}", "#ffb300")]
    return svg.lanes([(f"p{p}", bars) for p, bars in sorted(rows.items())], shade, x_range,
                     "seconds since the load started (hover a bar for leader and ISR)", legend)


def _off_schedule(run: RunReport, origin: int) -> list[list[Any]]:
    """The injections skipped (at the time they were due) and those that missed their target (at
    the time they acted), in order, each with why and the injection that made up for it."""
    acted = {e["fault_id"]: e["at_ns"] for e in run.fault_events if e["event"] == run_events.FAULT_INJECTED}
    rows = sorted((e["scheduled_ns"] if e["event"] == run_events.FAULT_SKIPPED else acted.get(e["fault_id"], e["t_ns"]),
                   e["step"] or "", "skipped" if e["event"] == run_events.FAULT_SKIPPED else "missed",
                   e["reason"] or "", e["made_up_by"] or "–")
                  for e in run.fault_events if e["event"] in (run_events.FAULT_SKIPPED, run_events.FAULT_MISSED))
    return [[_num(_s(at, origin), 1), step, outcome, why, made_up] for at, step, outcome, why, made_up in rows]


def run_context(run: RunReport) -> dict[str, Any]:
    """What the template shows of one run: its charts (markup) and its tables' rows (formatted)."""
    s, b = run.summary, run.bounds
    origin = b["load_start_ns"]
    x_range = (0.0, (b["load_end_ns"] - origin) / 1e9 + 2)
    shade = _fault_windows(run, origin)
    secs = [(r["second"] + 0.5, r) for r in run.per_second]
    throughput = svg.line_chart([("sent/s", [(x, r["sent"]) for x, r in secs]), ("acked/s", [(x, r["acked"]) for x, r in secs]),
                                 ("failed+unconfirmed/s", [(x, r["failed"] + r["indeterminate"]) for x, r in secs])],
                                shade, "seconds since the load started", "messages / s", x_range=x_range)
    latency = svg.line_chart([("p50", [(x, r["latency_p50_ms"]) for x, r in secs]),
                              ("p99", [(x, r["latency_p99_ms"]) for x, r in secs])],
                             shade, "seconds since the load started (by ack time)", "latency ms (log)", log=True, x_range=x_range)
    order = {"warmup": 0, "steady": 1, "fault": 2, "recovery": 3, "measured": 4}
    e2e = {r["phase"]: r for r in run.end_to_end}
    return {
        "run_id": s.run_id, "scenario": s.scenario, "description": s.description or "",
        "settings": _settings(s.acks, s.replication_factor, s.min_insync_replicas, s.unclean_leader_election,
                              s.eligible_leader_replicas),
        "fault": s.fault, "severity": run.severity, "verdict": run.verdict, "figures": figures(s),
        "throughput_chart": Markup(throughput), "latency_chart": Markup(latency),
        "lanes": Markup(_leader_lanes(run, origin, shade, x_range)) if run.segments else None,
        "faults": [[f["kind"], f["reason"] or "", _num(_s(f["injected_ns"], origin), 1), _num(f["late_s"], 1), f["partition"],
                    _num(f["leader_before"]), _num(f["leader_after"]), _num(f["new_leader_s"], 2),
                    LEADER_FROM.get(f["new_leader_from"] or "", "–"),
                    _num(f["isr_shrink_s"], 2), _num(f["isr_expand_s"], 2), _num(f["first_ack_s"], 2)] for f in run.faults],
        "off_schedule": _off_schedule(run, origin),
        "acted": sum(e["event"] == run_events.FAULT_INJECTED for e in run.fault_events),
        "phases": [[p["phase"], _num(p["seconds"], 1), _num(p["sent"]), _num(p["acked"]), _num(p["failed"]),
                    _num(p["indeterminate"]), _num(p["throughput_msgs_s"]), _num(p["throughput_mb_s"], 3),
                    _num(p["latency_p50_ms"], 1), _num(p["latency_p95_ms"], 1), _num(p["latency_p99_ms"], 1),
                    _num(p["latency_p999_ms"], 1), _num(p["latency_max_ms"], 1), _num(p["send_latency_p99_ms"], 1),
                    _num(e2e.get(p["phase"], {}).get("e2e_p99_ms"), 1)]
                   for p in sorted(run.phases, key=lambda p: order.get(p["phase"], 9))],
        "errors": [[e["outcome"], e["error"] or "", e["cause"] or "", _num(e["messages"])] for e in run.errors],
        "unavailability": [[u["partition"], _num(_s(u["start_ns"], origin), 2), _num(_s(u["end_ns"], origin), 2),
                            _num(u["duration_s"], 2), _num(u["recovered"]), _num(u["leaderless"]),
                            _num(u["under_min_isr"]), _num(u["during_fault"])] for u in run.unavailability],
        "steps": [[st["procedure"], st["step"], st["play"], st["node"] or "", _num(_s(st["start_ns"], origin), 1),
                   _num(st["duration_s"], 1), _num(st["sent"]), _num(st["failed"]), _num(st["indeterminate"]),
                   _num(st["latency_p99_ms"], 1), _num(st["steady_p99_ms"], 1), _num(st["unavailable_s"], 2),
                   _num(st["unavailable_partitions"]), _num(st["leader_changes"])] for st in run.steps],
        "lost": [[m["status"], m["producer"], m["seq"], m["partition"], m["offset"]] for m in run.lost],
        "more_lost": s.gone - len(run.lost), "acked": s.acked,
    }


TRIALS = ("configuration", "settings", "fault", "trials", "lost in", "95% interval", "lost a trial (median / max)",
          "no-ack s (median / p90 / max)", "new leader s (median / p90 / max)", "faults")


def _three(t: TrialsRow, name: str) -> str:
    return " / ".join(_num(getattr(t, f"{name}_{which}_s"), 1) for which in ("median", "p90", "max"))


def trials_rows(data: ReportData) -> list[dict[str, Any]]:
    """The trials table (a row per configuration, with its verdict), when any configuration ran
    more than once; else empty (the comparison table says it all)."""
    if all(t.figures.trials + t.figures.trials_invalid <= 1 for t in data.trials):
        return []
    rows = []
    for t in data.trials:
        f = t.figures
        where = " · ".join(str(x) for x in (f.metadata_mode, f.kafka_version) if x)
        rows.append({"severity": t.severity, "verdict": t.verdict, "cells": [
            f.scenario + (f" ({where})" if where else ""),
            _settings(f.acks, f.replication_factor, f.min_insync_replicas, f.unclean_leader_election),
            f.fault, _num(f.trials) + (f" (+{f.trials_invalid} invalid)" if f.trials_invalid else ""),
            _num(f.trials_with_loss),
            "–" if f.loss_ci_low is None else f"{f.loss_ci_low:.1%} – {f.loss_ci_high:.1%}",
            f"{_num(f.lost_median)} / {_num(f.lost_max)}", _three(f, "unavailable"), _three(f, "new_leader"),
            _num(f.faults_injected)]})
    return rows


def _run_name(s: RunRow) -> Markup:
    name = s.scenario + (f" trial {s.trial}" if (s.trials or 0) > 1 else "")
    return Markup('<a href="#{}">{}</a>').format(s.run_id, name)


def extra_tables(data: ReportData) -> list[dict[str, Any]]:
    """Exactly-once, consumer-group and security-cost figures, for the runs that have them (none: no table)."""
    tables: list[dict[str, Any]] = []
    txn = [r.summary for r in data.runs if r.summary.txn_committed is not None]
    if txn:
        tables.append({"title": "Exactly-once", "headers": (
            "run", "client", "committed", "aborted", "unconfirmed", "lost commits", "aborted reads", "torn",
            "duplicates", "LSO stall s"),
            "about": "Transactions as their producers were told they ended, against what read_committed readers got. "
                     "Lost commit: a committed transaction with a message missing; aborted read: an aborted one a "
                     "reader saw; torn: read in part; LSO stall: the longest the last stable offset stood still below "
                     "the high watermark (a hanging transaction holding read_committed consumers back).",
            "rows": [(_run_name(s), s.txn_client or "–", _num(s.txn_committed), _num(s.txn_aborted),
                      _num(s.txn_unknown), _num(s.lost_commits), _num(s.aborted_reads), _num(s.torn),
                      _num(s.duplicates), _num(s.lso_stall_s, 1)) for s in txn]})
    groups = {(g["run_id"], g["group"]): g for g in data.tables.get("consumer-groups", [])}
    if groups:
        by_run = {r.summary.run_id: r.summary for r in data.runs}
        lag: dict[tuple[str, str], tuple[int, float]] = {}
        for row in data.tables.get("consumer-lag", []):
            key, was = (row["run_id"], row["group"]), lag.get((row["run_id"], row["group"]), (0, 0.0))
            lag[key] = (max(was[0], row["lag"]), max(was[1], row["lag_s"]))
        moves: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in data.tables.get("rebalances", []):
            if row["during_load"]:
                moves.setdefault((row["run_id"], row["group"]), []).append(row)
        tables.append({"title": "Consumer groups", "headers": (
            "run", "group", "read", "lag max", "lag max s", "rebalances", "slowest s", "paused", "moved", "skipped",
            "out of order", "read twice"),
            "about": "Lag: acknowledged messages the log holds that the group had not read yet, at the end of each "
                     "second (and the age of the oldest). Rebalances under load: partitions taken from members and "
                     "given out again; paused: partitions without an owner meanwhile; moved: given to another member. "
                     "Skipped: never read although a later offset was; out of order: a member read a lower offset "
                     "after a higher one within one assignment.",
            "rows": [_group_row(by_run[key[0]], g, lag.get(key, (0, 0.0)), moves.get(key, []))
                     for key, g in sorted(groups.items()) if key[0] in by_run]})
    cost = data.tables.get("security-cost", [])
    if len({row["security"] for row in cost}) > 1:
        tables.append({"title": "What security costs", "headers": (
            "scenario", "profile", "runs", "acked/s", "vs plaintext", "p50 ms", "vs plaintext", "p99 ms",
            "vs plaintext", "broker CPU ms per 1,000 msgs", "vs plaintext"),
            "about": "Each client security profile against plaintext on the same sweep point (the same load, the same "
                     "cluster, only client.security differs); the median of each profile's valid runs. Ratios: a "
                     "profile's figure over plaintext's, so acked/s below 1 and latency or CPU above 1 is what the "
                     "profile costs. Latency over the measured phase; broker CPU: what every broker process used "
                     "during the whole load (brokers on this machine only) per 1,000 acknowledged messages.",
            "rows": [(row["scenario"], row["security"], _num(row["runs"]), _num(row["throughput_msgs_s"]),
                      _ratio(row["throughput_ratio"]), _num(row["latency_p50_ms"], 1), _ratio(row["p50_ratio"]),
                      _num(row["latency_p99_ms"], 1), _ratio(row["p99_ratio"]), _num(row["broker_cpu_ms_per_1k"], 1),
                      _ratio(row["cpu_ratio"])) for row in cost]})
    return tables


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _group_row(s: RunRow, g: dict[str, Any], lag: tuple[int, float], moves: list[dict[str, Any]]) -> tuple:
    return (_run_name(s), g["group"], _num(g["read"]), _num(lag[0]), _num(lag[1], 1), _num(len(moves)),
            _num(max((m["duration_s"] for m in moves), default=None), 1), _num(sum(m["partitions_paused"] for m in moves)),
            _num(sum(m["partitions_moved"] for m in moves)), _num(g["skipped"]), _num(g["out_of_order"]),
            _num(g["group_duplicates"]))


def page(data: ReportData) -> str:
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lost = sum(r.summary.gone for r in data.runs)
    controls = sum(r.summary.gone for r in data.runs if r.summary.expect_loss)
    unchecked = sum(not r.summary.checked for r in data.runs)
    headline = (f"{len(data.runs)} run(s); {lost - controls:,} acknowledged message(s) lost or missing in all"
                + (f" (and {controls:,} by negative controls, built to lose them)" if controls else "")
                + ("" if lost - controls else " — no run lost an acknowledged write but the negative controls"
                   if controls else " — no run lost an acknowledged write")
                + (f"; {unchecked} run(s) failed before their final read and could not be checked" if unchecked else ""))
    if data.missing:
        headline = (f"INCOMPLETE SUITE: {len(data.missing)} planned run(s) never ended: {', '.join(data.missing)}. "
                    + headline)
    if any(t.figures.blind for t in data.trials):
        headline = "HARNESS BLIND: a negative control did not lose what it was built to lose (see Trials). " + headline
    return _TEMPLATES.get_template("report.html.j2").render(
        source=data.source, generated=generated, headline=headline, comparison_headers=COMPARISON,
        loss_bars=Markup(loss_bars(data)), runs=[run_context(r) for r in data.runs], lost_ids_shown=LOST_IDS_SHOWN,
        trials_headers=TRIALS, trials=trials_rows(data), extra_tables=extra_tables(data))
