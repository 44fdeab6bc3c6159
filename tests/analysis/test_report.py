"""The report of a run directory: self-contained HTML with the table and the charts, the
summary files, and clear errors for directories that hold no run."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from benchmarks.analysis import inputs, schemas
from benchmarks.cli.app import cli
from benchmarks.core.exit_codes import ExitCode
from benchmarks.record import records, run_events
from benchmarks.report import outputs
from tests.analysis import ledgers

pytestmark = pytest.mark.spark

REQUIRED = ("scenario", "acks", "replication_factor", "min_insync_replicas", "unclean_leader_election", "fault", "sent",
            "acked", "failed", "indeterminate", "lost", "unseen", "duplicates", "reordered", "throughput_msgs_s",
            "latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "unavailable_s")


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.fixture(scope="module")
def sweep(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    ledgers.write_run_dir(spark, root / "r1-hand-built")
    return root, outputs.build(str(root))


def test_html_is_self_contained_and_holds_table_and_charts(sweep):
    _, report = sweep
    page = report.html.read_text()
    parser = Elements()
    parser.feed(page)
    tags = [t for t, _ in parser.tags]
    # nothing to fetch: no script, stylesheet link, image or frame, no url() in CSS
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(tags)
    assert "url(" not in page and "@import" not in page
    assert {a.get("href", "#")[0] for _, a in parser.tags if "href" in a} <= {"#"}
    assert set(re.findall(r"https?://[^\"' )]+", page)) == {"http://www.w3.org/2000/svg"}  # the SVG namespace
    assert tags.count("svg") >= 4  # loss bars, throughput, latency, leader/ISR lanes
    assert "Who led what, before and after each fault" in page and "What was lost" in page
    assert "1 acknowledged message LOST" in page
    faults = page[page.index("Who led what, before and after each fault"):]
    first_row = re.findall(r"<td[^>]*>([^<]*)</td>", faults[:faults.index("</tr>", faults.index("<tbody>"))])
    assert first_row[:5] == ["broker-kill", "leader of 0", "4.0", "1.0", "0"]  # acted at 4 s, 1 s after it was due


def test_summary_files(sweep):
    root, report = sweep
    with open(root / "summary.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 1 and set(REQUIRED) <= set(rows[0])
    assert (rows[0]["sent"], rows[0]["lost"], rows[0]["unseen"], rows[0]["duplicates"]) == ("16", "1", "1", "1")
    table = pq.read_table(root / "summary.parquet")
    assert table.num_rows == 1 and table.column("lost").to_pylist() == [1]
    with open(report.lost, newline="") as handle:
        assert [(r["status"], r["producer"], r["seq"]) for r in csv.DictReader(handle)] == [
            ("lost", "0", "3"), ("unseen", "0", "13")]


def test_a_single_run_directory_is_a_report_too(spark, sweep):
    root, _ = sweep
    report = outputs.build(str(root / "r1-hand-built"))
    assert [r.summary.run_id for r in report.data.runs] == ["r1"]


def test_a_directory_without_runs_is_refused_before_anything_is_written(spark, tmp_path):
    with pytest.raises(inputs.InputError, match=r"no run here: expected .*summary.json"):
        outputs.build(str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    result = CliRunner().invoke(cli, ["report", str(tmp_path / "missing")], standalone_mode=False)
    assert result.return_value == ExitCode.INVALID_INPUT
    assert "no run here" in result.output


def test_bad_spark_conf_is_a_usage_error():
    result = CliRunner().invoke(cli, ["report", "/tmp", "--conf", "spark.executor.memory"])
    assert result.exit_code == 2 and "expected KEY=VALUE" in result.output


def test_runs_of_an_older_runner_are_named(spark, tmp_path):
    run = tmp_path / "old-run"
    ledgers.write_run_dir(spark, run)
    summary = json.loads((run / "summary.json").read_text())
    del summary["load_start_ns"]
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(schemas.SchemaError, match=r"summary.json: missing column 'load_start_ns' \(bigint\)"):
        outputs.build(str(tmp_path))


def test_a_mistyped_ledger_column_is_named_with_its_files(spark, tmp_path):
    run = tmp_path / "bad-run"
    ledgers.write_run_dir(spark, run)
    timeline = pq.read_table(run / "timeline").replace_schema_metadata(None)  # drop the schema Spark stored
    for part in (run / "timeline").glob("*.parquet"):
        part.unlink()
    pq.write_table(timeline.set_column(1, "t_ns", timeline.column("t_ns").cast("string")), run / "timeline" / "t.parquet")
    with pytest.raises(schemas.SchemaError, match=r"timeline \(timeline/\*.parquet\): column 't_ns' is string, expected bigint"):
        outputs.build(str(tmp_path))
    assert not (tmp_path / "report.html").exists()


def test_injections_skipped_or_off_target_are_listed_with_why_and_their_make_up(spark, tmp_path):
    """The runner's fault-skipped and fault-missed events, as it writes them, in a table of their
    own: when (due, or acted), which step, why, and the injection added for it."""
    run = tmp_path / "r1-hand-built"
    ledgers.write_run_dir(spark, run)
    with open(run / "events.jsonl", "a", encoding="utf-8") as handle:
        for event in (run_events.FaultSkipped(run_id=ledgers.RUN, t_ns=ledgers.ns(2.5), kind="broker-kill", step="faults[0] #1",
                                              reason="the cluster had not recovered 1 s after the injection was due: "
                                                  "broker 2 is not in the ISR of t-0",
                                              scheduled_ns=ledgers.ns(1.5), made_up_by="faults[0] #3"),
                      run_events.FaultMissed(run_id=ledgers.RUN, t_ns=ledgers.ns(4.4), fault_id="f1", step="faults[0] #2",
                                             reason="the leader of t-0 was broker 2, not broker 1")):
            handle.write(event.model_dump_json() + "\n")
    page = outputs.build(str(tmp_path)).html.read_text()
    section = page[page.index("<h3>Injections skipped or off target</h3>"):]
    section = section[:section.index("</table>")]
    assert "1 acted." in section
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", section)
    assert cells == ["1.5", "faults[0] #1", "skipped",  # due at 1.5 s into the load
                     "the cluster had not recovered 1 s after the injection was due: broker 2 is not in the ISR of t-0",
                     "faults[0] #3",
                     "4.0", "faults[0] #2", "missed", "the leader of t-0 was broker 2, not broker 1", "–"]  # acted at 4 s


def test_a_failed_run_is_reported_invalid_and_unchecked_and_a_stopped_suite_names_its_missing_runs(spark, tmp_path):
    """A suite of three trials stopped in its third: the first ran through, the second failed
    before its final read ended (summary.json says checked: false), the third never ended.
    The report shows the second invalid with its reason and no loss figures (not known, not 0),
    and names the third as missing, on the page and at the command line."""
    ledgers.write_run_dir(spark, tmp_path / "r1-hand-built", run_id="r1", trial=1)
    failed = tmp_path / "r2-hand-built-trial002"
    ledgers.write_run_dir(spark, failed, run_id="r2", trial=2)
    summary = json.loads((failed / "summary.json").read_text())
    reason = "final read failed: RetriesExhausted: final read (read_uncommitted): end offset of t-0: still " \
             "OFFSET_NOT_AVAILABLE after 14 attempts in 58.0 s"
    summary |= {"valid": False, "invalid_reasons": [reason], "checked": False}
    (failed / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "r3-hand-built-trial003").mkdir()  # the run under way when the suite was stopped
    (tmp_path / "r3-hand-built-trial003" / "events.jsonl").write_text("")
    plan = records.SuitePlan(suite="seeds", inventory="inventories/local", quick=True, seed=None, trials=None, ledger=True,
                             runs=[records.PlannedRun(number=n, scenario="hand-built", trial=n, trials=3)
                                   for n in (1, 2, 3)])
    (tmp_path / "suite.json").write_text(plan.model_dump_json())

    result = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "incomplete suite: 1 planned run(s) never ended: [3/3] hand-built trial 3/3" in " ".join(result.output.split())
    report = outputs.build(str(tmp_path))
    assert report.data.missing == ["[3/3] hand-built trial 3/3"]
    ran, stopped = sorted(report.data.runs, key=lambda r: r.summary.run_id)
    assert ran.summary.checked and ran.summary.lost == 1 and ran.summary.unseen == 1
    assert not stopped.summary.checked
    assert {c: getattr(stopped.summary, c) for c in ("lost", "unseen", "duplicates")} == dict.fromkeys(
        ("lost", "unseen", "duplicates"))
    assert stopped.summary.acked == ran.summary.acked  # what the load itself counted stands
    assert stopped.verdict.startswith(f"INVALID run ({reason}); NOT CHECKED: the run stopped before its final read")
    assert "LOST" not in stopped.verdict and stopped.severity == "warn"
    page = report.html.read_text()
    assert "INCOMPLETE SUITE: 1 planned run(s) never ended: [3/3] hand-built trial 3/3" in page
    assert "1 run(s) failed before their final read and could not be checked" in page
    with open(report.csv, newline="", encoding="utf-8") as handle:
        rows = {row["run_id"]: row for row in csv.DictReader(handle)}
    assert (rows["r2"]["lost"], rows["r2"]["checked"], rows["r1"]["lost"]) == ("", "False", "1")
    assert report.lost is not None
    with open(report.lost, newline="", encoding="utf-8") as handle:
        assert {row["run_id"] for row in csv.DictReader(handle)} == {"r1"}, "an unchecked run's writes are not listed lost"
