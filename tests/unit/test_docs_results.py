"""Results in the documentation come from committed result files (benchmarks/docs/docs_results.py)."""

import csv
import json

from benchmarks.docs import docs_results

COLUMNS = ("scenario", "trial", "fault", "acked", "sent", "lost", "unseen", "checked", "valid", "kafka_version",
           "metadata_mode", "unavailable_in_fault_s", "new_leader_s", "verdict")


def _suite(tmp_path, rows, planned):
    suite = tmp_path / "20261128T162642-seeds"
    suite.mkdir()
    with open(suite / "summary.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({c: row.get(c, "") for c in COLUMNS} for row in rows)
    (suite / "suite.json").write_text(json.dumps({"suite": "seeds", "runs": [{"scenario": s} for s in planned]}))
    return suite


def _row(scenario, **over):
    return {"scenario": scenario, "trial": "1", "fault": "broker-stop (broker 1) at 6 s", "acked": "900", "sent": "1000",
            "lost": "0", "unseen": "0", "checked": "True", "valid": "True", "kafka_version": "3.9.2",
            "metadata_mode": "zookeeper", "unavailable_in_fault_s": "1.62", "new_leader_s": "0.94",
            "verdict": "0 lost | fine", **over}


def test_the_committed_pages_show_what_their_result_files_give():
    assert docs_results.stale() == [], "a results block is stale: run `make docs` and commit it"


def test_a_capture_keeps_the_summary_and_where_it_came_from_and_a_block_shows_it_in_the_plans_order(tmp_path,
                                                                                                  monkeypatch):
    suite = _suite(tmp_path, [_row("b-second", lost="", unseen="", checked="False", valid="False"), _row("a-first")],
                   planned=["a-first", "b-second"])
    out = tmp_path / "results"
    monkeypatch.setattr(docs_results, "RESULTS", out)
    docs_results.capture(suite, "demo", "make bench")
    source = json.loads((out / "demo" / "source.json").read_text())
    assert source["command"] == "make bench" and source["began"] == "2026-11-28 16:26"
    assert source["machine"]["cores"] >= 1

    page = "intro\n<!-- results: demo -->\nold text\n<!-- end results -->\nafter\n"
    new = docs_results.refresh(page, out)
    lines = new.splitlines()
    assert lines[0] == "intro" and lines[-1] == "after" and "old text" not in new
    assert "Measured by `make bench` on 2026-11-28 16:26 UTC, Kafka 3.9.2 (zookeeper)" in new
    assert "SOME RUNS INVALID" in new
    runs = [line for line in lines if line.startswith("| `")]
    assert runs[0].startswith("| `a-first` | broker-stop (broker 1) at 6 s | 900 / 1,000 | 0 | 1.6 s | 0.9 s | 0 lost / fine |")
    assert runs[1].startswith("| `b-second` |") and "| not checked |" in runs[1]
    assert docs_results.refresh(new, out) == new
