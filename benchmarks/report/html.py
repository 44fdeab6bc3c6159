"""The self-contained HTML page: a comparison table with verdicts, loss bars, and per run the
seed labs' questions answered (who led what before and after each fault, when the ISR shrank
and recovered, what the producer saw, what was lost) with throughput, latency and leader / ISR
timelines, fault windows shaded. Inline CSS and SVG only: it opens offline."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from html import escape
from typing import Any

from benchmarks.report import svg
from benchmarks.report.collect import LOST_IDS_SHOWN, ReportData, RunReport

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px auto;max-width:1180px;
color:#222;padding:0 16px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.muted{color:#666}.small{font-size:12px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right;vertical-align:top}
th{background:#f6f6f6;font-weight:600}td.l,th.l{text-align:left}
tr.bad td{background:#fdecea}tr.warn td{background:#fff8e1}tr.good td.verdict{color:#1b5e20}
td.verdict{text-align:left;padding-bottom:8px;border-bottom:1px solid #ccc}
table.comparison tr.figures td{border-bottom:none}
table.comparison td.l span.small{display:inline-block;min-width:170px}
.chart{width:100%;max-width:780px;display:block;margin:4px 0 10px}
.chart text{font-size:11px;fill:#444}.chart .label{font-size:12px;fill:#222}.chart .grid{stroke:#eee}.chart .axis{stroke:#999}
details{margin:8px 0 16px}summary{cursor:pointer;font-weight:600;font-size:16px}
.pill{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;margin-left:6px}
.pill.bad{background:#d62728;color:#fff}.pill.warn{background:#ffb300}.pill.good{background:#2e7d32;color:#fff}
code{font-size:12px;background:#f4f4f4;padding:1px 4px;border-radius:3px}
.defs{font-size:12.5px;color:#444;max-width:980px}
"""

DEFINITIONS = """
<p class="defs"><b>How to read this.</b> <b>Lost</b>: acknowledged by the cluster, absent from the final read of the
whole topic after every fault was healed, while a later offset of the same partition was read. <b>Unseen</b>:
acknowledged, absent, and nothing after it was read either. <b>Failed</b>: the producer was told the write did not
happen; <b>unconfirmed</b> (indeterminate): no answer before the delivery timeout — never counted as acknowledged;
the final read tells whether such writes landed. <b>Latency</b> is measured from the <i>intended</i> send time of the
open-loop schedule, so a stalled producer shows up as latency (no coordinated omission). <b>Without acks</b>: the
longest total time one partition went without a successful acknowledgement while the producers kept sending.
Phases: warm-up, steady (before the first fault), fault (until it is healed, or the end of the load), recovery.</p>
"""


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


def _table(headers: Iterable[str], rows: Iterable[Iterable[Any]], left: int = 1, classes: Iterable[str] | None = None) -> str:
    headers = list(headers)
    head = "".join(f'<th class="{"l" if i < left else ""}">{escape(h)}</th>' for i, h in enumerate(headers))
    body = []
    for index, row in enumerate(rows):
        cls = list(classes)[index] if classes is not None else ""
        cells = "".join(f'<td class="{"l" if i < left else ""}">{c}</td>' for i, c in enumerate(row))
        body.append(f'<tr class="{cls}">{cells}</tr>')
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _settings(s: dict[str, Any]) -> str:
    return (f"acks={escape(s['acks'])}, RF {s['replication_factor']}, min ISR {s['min_insync_replicas']}"
            + (", unclean election" if s["unclean_leader_election"] else ""))


def comparison(data: ReportData) -> str:
    """One row of figures per run, its verdict on a row of its own underneath."""
    headers = ["scenario", "acks", "RF", "min ISR", "unclean", "fault", "sent", "acked", "failed", "unconf.", "lost",
               "unseen", "dup.", "reord.", "acked/s", "p50 ms", "p99 ms", "p99.9 ms", "no-ack s"]
    head = "".join(f'<th class="{"l" if h in ("scenario", "fault") else ""}">{escape(h)}</th>' for h in headers)
    body = []
    for run in data.runs:
        s = run.summary
        cells = [f'<a href="#{escape(s["run_id"])}">{escape(s["scenario"])}</a>', escape(s["acks"]),
                 s["replication_factor"], s["min_insync_replicas"], _num(s["unclean_leader_election"]),
                 f'<span class="small">{escape(s["fault"])}</span>', _num(s["sent"]), _num(s["acked"]),
                 _num(s["failed"]), _num(s["indeterminate"]), f"<b>{_num(s['lost'])}</b>", _num(s["unseen"]),
                 _num(s["duplicates"]), _num(s["reordered"]), _num(s["throughput_msgs_s"]),
                 _num(s["latency_p50_ms"], 1), _num(s["latency_p99_ms"], 1), _num(s["latency_p999_ms"], 1),
                 _num(s["unavailable_s"], 1)]
        row = "".join(f'<td class="{"l" if h in ("scenario", "fault") else ""}">{c}</td>' for h, c in zip(headers, cells))
        body.append(f'<tr class="{run.severity} figures">{row}</tr>')
        body.append(f'<tr class="{run.severity}"><td></td><td class="verdict" colspan="{len(headers) - 1}">'
                    f'<span class="pill {run.severity}">{run.severity}</span> {escape(run.verdict)}</td></tr>')
    return f'<table class="comparison"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def loss_bars(data: ReportData) -> str:
    items = [(r.summary["scenario"], [("lost", r.summary["lost"]), ("unseen", r.summary["unseen"]),
                                      ("duplicates", r.summary["duplicates"]),
                                      ("unconfirmed but written",
                                       r.summary["indeterminate_delivered"] + r.summary["failed_delivered"])])
             for r in data.runs]
    return svg.bars(items, "acknowledged messages lost or unseen, duplicates, refused writes that landed anyway")


def _fault_windows(run: RunReport, origin: int) -> list[tuple[float, float, str]]:
    """(start, end, label) of every injected fault, in seconds from the start of the load."""
    intents = {e["fault_id"]: e for e in run.fault_events if e["event"] == "fault-intent"}
    healed = {e["fault_id"]: e["at_ns"] for e in run.fault_events if e["event"] == "fault-healed"}
    end = run.bounds["load_end_ns"]
    out = []
    for e in run.fault_events:
        if e["event"] == "fault-injected":
            intent = intents.get(e["fault_id"], {})
            label = f"{intent.get('kind', 'fault')} ({intent.get('reason', '')})"
            out.append(((e["at_ns"] - origin) / 1e9, (min(healed.get(e["fault_id"], end), end) - origin) / 1e9, label))
    return out


def _leader_lanes(run: RunReport, origin: int, shade: list[tuple[float, float, str]], x_range: tuple[float, float]) -> str:
    min_isr = run.summary["min_insync_replicas"]
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


def run_section(run: RunReport) -> str:
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
    out = [f'<details open id="{escape(s["run_id"])}"><summary>{escape(s["scenario"])} '
           f'<span class="pill {run.severity}">{run.severity}</span></summary>',
           f'<p class="muted">{escape(s["description"] or "")}<br>{_settings(s)}; fault: {escape(s["fault"])}; '
           f'run <code>{escape(s["run_id"])}</code></p>',
           f"<p><b>Verdict:</b> {escape(run.verdict)}</p>", throughput, latency]
    if run.segments:
        out += ["<h3>Leader and ISR of every partition</h3>", _leader_lanes(run, origin, shade, x_range)]
    if run.faults:
        rows = [[escape(f["kind"]), escape(f["reason"] or ""), _num(_s(f["injected_ns"], origin), 1), f["partition"],
                 _num(f["leader_before"]), _num(f["leader_after"]), _num(f["new_leader_s"], 2), _num(f["isr_shrink_s"], 2),
                 _num(f["isr_expand_s"], 2), _num(f["first_ack_s"], 2)] for f in run.faults]
        out += ["<h3>Who led what, before and after each fault</h3>",
                '<p class="small muted">Seconds are counted from the moment the fault was injected (the control script '
                'acted), not from the intent. "First ack": the first acknowledged message sent after the injection.</p>',
                _table(["fault", "target", "at s", "partition", "leader before", "leader at heal/end", "new leader after s",
                        "ISR shrank after s", "ISR back after s", "first ack after s"], rows, left=2)]
    order = {"warmup": 0, "steady": 1, "fault": 2, "recovery": 3, "measured": 4}
    e2e = {r["phase"]: r for r in run.end_to_end}
    rows = [[p["phase"], _num(p["seconds"], 1), _num(p["sent"]), _num(p["acked"]), _num(p["failed"]), _num(p["indeterminate"]),
             _num(p["throughput_msgs_s"]), _num(p["throughput_mb_s"], 3), _num(p["latency_p50_ms"], 1),
             _num(p["latency_p95_ms"], 1), _num(p["latency_p99_ms"], 1), _num(p["latency_p999_ms"], 1),
             _num(p["latency_max_ms"], 1),
             _num(p["send_latency_p99_ms"], 1), _num(e2e.get(p["phase"], {}).get("e2e_p99_ms"), 1)]
            for p in sorted(run.phases, key=lambda p: order.get(p["phase"], 9))]
    out += ["<h3>What the producer saw</h3>",
            _table(["phase", "seconds", "sent", "acked", "failed", "unconfirmed", "acked/s", "MB/s", "p50 ms", "p95 ms", "p99 ms",
                    "p99.9 ms", "max ms", "p99 from send ms", "end-to-end p99 ms"], rows)]
    if run.errors:
        out.append(_table(["outcome", "error", "messages"],
                          [[escape(e["outcome"]), escape(e["error"] or ""), _num(e["messages"])] for e in run.errors], left=2))
    if run.unavailability:
        rows = [[u["partition"], _num(_s(u["start_ns"], origin), 2), _num(_s(u["end_ns"], origin), 2), _num(u["duration_s"], 2),
                 _num(u["recovered"]), _num(u["leaderless"]), _num(u["under_min_isr"]), _num(u["during_fault"])]
                for u in run.unavailability]
        out += ["<h3>Windows without acks</h3>",
                _table(["partition", "from s", "to s", "seconds", "ended by an ack", "no leader seen", "ISR < min seen",
                        "during fault"], rows)]
    out.append("<h3>What was lost</h3>")
    if run.lost:
        more = s["lost"] + s["unseen"] - len(run.lost)
        out.append(_table(["status", "producer", "seq", "partition", "offset"],
                          [[m["status"], m["producer"], m["seq"], m["partition"], m["offset"]] for m in run.lost], left=1))
        if more > 0:
            out.append(f'<p class="small muted">… and {more:,} more (first {LOST_IDS_SHOWN} shown; '
                       'all in lost-messages.csv).</p>')
    else:
        out.append(f"<p>Nothing: every one of the {s['acked']:,} acknowledged messages is in the log.</p>")
    out.append("</details>")
    return "\n".join(out)


def page(data: ReportData) -> str:
    generated = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lost = sum(r.summary["lost"] + r.summary["unseen"] for r in data.runs)
    headline = (f"{len(data.runs)} run(s); {lost:,} acknowledged message(s) lost or missing in all"
                + ("" if lost else " — no run lost an acknowledged write"))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>kafka-bench report — {escape(data.source)}</title><style>{CSS}</style></head>
<body>
<h1>kafka-bench report</h1>
<p class="muted">{escape(data.source)} · generated {generated}</p>
<p><b>{escape(headline)}</b></p>
<h2>Comparison</h2>
{comparison(data)}
{DEFINITIONS}
{loss_bars(data)}
<h2>Runs</h2>
{''.join(run_section(r) for r in data.runs)}
</body></html>
"""
