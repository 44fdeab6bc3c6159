"""`kafka-bench compare`: matching by scenario, figures as each summary.csv has them, the
differences named only beyond noise, and the newest results of each metadata mode."""

from __future__ import annotations

import csv

import pytest

from benchmarks.report import compare

COLUMNS = ["run_id", "scenario", "metadata_mode", "kafka_version", "fault", "new_leader_s", "unavailable_s", "lost",
           "unseen", "latency_p99_ms", "throughput_msgs_s", "valid", "verdict"]


def results(directory, mode, version, rows):
    directory.mkdir(parents=True)
    with open(directory / "summary.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for scenario, new_leader, unavailable, lost, p99 in rows:
            writer.writerow({"run_id": f"r-{scenario}", "scenario": scenario, "metadata_mode": mode,
                             "kafka_version": version, "fault": "broker-kill", "new_leader_s": new_leader,
                             "unavailable_s": unavailable, "lost": lost, "unseen": 0, "latency_p99_ms": p99,
                             "throughput_msgs_s": 2000, "valid": True, "verdict": f"{scenario} on {mode}"})
    return directory


def test_the_same_scenarios_side_by_side_with_the_differences_that_matter(tmp_path):
    zk = results(tmp_path / "1-seeds", "zookeeper", "3.9.2", [("leader-kill", 18.2, 19.0, 0, 40.0),
                                                               ("atu-lab", 0.5, 1.1, 0, 12.0), ("zk-only", 1, 1, 0, 1)])
    kraft = results(tmp_path / "2-seeds", "kraft", "4.3.1", [("leader-kill", 9.1, 9.8, 0, 41.0),
                                                              ("atu-lab", 0.6, 1.0, 0, 30.0)])
    comparison, html, csv_path = compare.write([zk, kraft], tmp_path / "out")
    assert comparison.labels == ["zookeeper 3.9.2", "kraft 4.3.1"]
    assert comparison.scenarios == ["leader-kill", "atu-lab"] and comparison.unmatched == {"zookeeper 3.9.2": ["zk-only"]}
    leader_kill, atu = comparison.rows
    assert leader_kill["new_leader_s [zookeeper 3.9.2]"] == 18.2 and leader_kill["new_leader_s [kraft 4.3.1]"] == 9.1
    assert leader_kill["differences"] == ("time to a new leader: 18.2 s (zookeeper 3.9.2) vs 9.1 s (kraft 4.3.1); "
                                          "seconds without acks (worst partition): 19.0 s (zookeeper 3.9.2) vs "
                                          "9.8 s (kraft 4.3.1)")
    assert atu["differences"] == "p99 ack latency: 12.0 ms (zookeeper 3.9.2) vs 30.0 ms (kraft 4.3.1)", \
        "0.1 s of leader time is noise; 12 -> 30 ms of p99 is not"
    rows = list(csv.DictReader(csv_path.open()))
    assert [r["scenario"] for r in rows] == ["leader-kill", "atu-lab"]
    assert rows[0]["verdict [kraft 4.3.1]"] == "leader-kill on kraft"
    page = html.read_text()
    assert "Only in zookeeper 3.9.2: zk-only" in page and page.count("<svg") >= 3


def test_lost_writes_are_always_a_difference_and_alike_sides_are_told_apart(tmp_path):
    a = results(tmp_path / "a", "kraft", "4.3.1", [("negative", 9, 9, 0, 10)])
    b = results(tmp_path / "b", "kraft", "4.3.1", [("negative", 9, 9, 3, 10)])
    comparison = compare.compare([a, b])
    assert comparison.labels == ["kraft 4.3.1 (a)", "kraft 4.3.1 (b)"]
    assert comparison.rows[0]["differences"] == "acknowledged writes lost: 0.0 (kraft 4.3.1 (a)) vs 3.0 (kraft 4.3.1 (b))"


def test_nothing_to_compare_is_refused_with_the_reason(tmp_path):
    a = results(tmp_path / "a", "kraft", "4.3.1", [("x", 1, 1, 0, 1)])
    b = results(tmp_path / "b", "zookeeper", "3.9.2", [("y", 1, 1, 0, 1)])
    with pytest.raises(compare.CompareError, match="share no scenario: kraft 4.3.1: x; zookeeper 3.9.2: y"):
        compare.compare([a, b])
    with pytest.raises(compare.CompareError, match="no summary.csv"):
        compare.compare([a, tmp_path / "missing"])
    with pytest.raises(compare.CompareError, match="at least two"):
        compare.compare([a])


def test_newest_results_of_each_mode(tmp_path):
    results(tmp_path / "20261101T000000-seeds", "zookeeper", "3.9.2", [("a", 1, 1, 0, 1)])
    newest_zk = results(tmp_path / "20261102T000000-seeds", "", "", [("a", 1, 1, 0, 1)])  # before modes were recorded
    newest_kraft = results(tmp_path / "20261103T000000-seeds", "kraft", "4.3.1", [("a", 1, 1, 0, 1)])
    results(tmp_path / "20261104T000000-durability", "kraft", "4.3.1", [("a", 1, 1, 0, 1)])
    (tmp_path / "20261105T000000-seeds").mkdir()  # not analysed: no summary.csv
    assert compare.newest_by_mode(tmp_path, "seeds") == {"kraft": newest_kraft, "zookeeper": newest_zk}
