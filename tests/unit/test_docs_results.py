"""Results in the documentation come from committed result files (benchmarks/docs/docs_results.py)."""

import csv
import json

from benchmarks.docs import docs_results
from benchmarks.perf import producer_throughput

COLUMNS = ("scenario", "trial", "fault", "acked", "sent", "lost", "unseen", "checked", "valid", "kafka_version",
           "metadata_mode", "unavailable_in_fault_s", "new_leader_s", "verdict", "steady")


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


def test_a_perf_capture_shows_the_generator_beside_perf_test_and_the_c_loop(tmp_path, monkeypatch):
    medians = {"perf_test_per_s": 71479.6, "ledger_on_per_s": 66861.8, "ledger_off_per_s": 70000.0,
               "half_rate_achieved_over_target": 1.00002, "half_rate_send_delay_p99_ms": 45.12,
               "rate_1_4_send_delay_p99_ms": 16.59, "rate_1_8_send_delay_p99_ms": 33.55,
               "half_rate_cpu_us_per_msg": 18.5, "rate_1_4_cpu_us_per_msg": 29.4, "rate_1_8_cpu_us_per_msg": 44.7,
               "native_max_per_s": 463484.3, "native_same_rate_send_delay_p99_ms": 7.04,
               "native_half_own_send_delay_p99_ms": 334.05, "native_same_rate_cpu_us_per_msg": 8.58}
    result = tmp_path / "perf-producer-20261129T003619.json"
    result.write_text(json.dumps({
        "settings": {"acks": "all", "linger.ms": "5", "size": 100, "producers": 2, "repeat": 2},
        "cluster": {"inventory": "inventories/local", "kafka_version": "3.9.2", "metadata_mode": "zookeeper", "brokers": 3},
        "medians": medians, "ratios": {"generator_over_perf_test": 0.9354, "ledger_on_over_off": 0.955},
        "raw": {"rounds": [
            producer_throughput.round_ratios(100.0, {"acked_per_s": 90.0}, {"acked_per_s": 100.0}, "forward"),
            producer_throughput.round_ratios(200.0, {"acked_per_s": 210.0}, {"acked_per_s": 200.0}, "reversed")]}}))
    out = tmp_path / "results"
    monkeypatch.setattr(docs_results, "RESULTS", out)
    docs_results.capture_perf(result, "perf", "make perf")
    assert json.loads((out / "perf" / "source.json").read_text())["began"] == "2026-11-29 00:36"

    new = docs_results.refresh("<!-- results: perf -->\n<!-- end results -->\n", out)
    assert "Measured by `make perf` on 2026-11-29 00:36 UTC, Kafka 3.9.2 (zookeeper, 3 brokers" in new
    assert "medians of 2 rounds (a ratio: the median of the rounds' own ratios)" in new
    assert "| generator (ledger on) / producer-perf-test | 0.94 (66,862 and 71,480 msg/s) | ≥ 1.0 |" in new
    assert "| send delay p99 at half the maximum (¼, ⅛) | 45.1 ms (16.6 ms, 33.5 ms) | ≤ 1 ms |" in new
    assert "| CPU per message at half the maximum (¼, ⅛) | 18.5 µs (29.4 µs, 44.7 µs) | — |" in new
    assert "| C loop: maximum rate; send delay p99 at half of it | 463,484 msg/s; 334.1 ms | — |" in new
    assert docs_results.refresh(new, out) == new
    assert ("generator / producer-perf-test 0.90 (forward), 1.05 (reversed); ledger on / off 0.90 (forward), "
            "1.05 (reversed).") in new


def test_a_suite_with_a_security_cost_table_is_shown_as_that_table(tmp_path, monkeypatch):
    suite = _suite(tmp_path, [_row("half[plaintext]", steady="True"), _row("half[tls]", steady="False", lost="2")],
                   planned=["half[plaintext]", "half[tls]"])
    figures = ("throughput_msgs_s", "throughput_ratio", "latency_p50_ms", "p50_ratio", "latency_p99_ms", "p99_ratio",
               "broker_cpu_ms_per_1k", "cpu_ratio")
    with open(suite / docs_results.SECURITY, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(("sweep_of", "metadata_mode", "kafka_version", "scenario", "security", "runs", *figures))
        writer.writerow(("half", "zookeeper", "3.9.2", "half[plaintext]", "plaintext", "1",
                         "28000.4", "1.0", "58.2", "1.0", "520.0", "1.0", "34.44", "1.0"))
        writer.writerow(("half", "zookeeper", "3.9.2", "half[tls]", "tls", "1",
                         "27990.0", "1.0", "290.0", "4.983", "4426.0", "8.512", "", ""))
    out = tmp_path / "results"
    monkeypatch.setattr(docs_results, "RESULTS", out)
    docs_results.capture(suite, "security", "kafka-bench run security-cost")
    assert (out / "security" / docs_results.SECURITY).exists()

    new = docs_results.refresh("<!-- results: security -->\n<!-- end results -->\n", out)
    assert "from `docs/results/security/security-cost.csv`, 2 runs, 2 acknowledged writes lost." in new
    rows = [line for line in new.splitlines() if line.startswith("| `")]
    assert rows == ["| `half` | plaintext | 28,000 | 1.00 | 58 / 520 | 1.00 | 34.4 | 1.00 |",
                    "| `half` | tls | 27,990 | 1.00 | 290 / 4,426 (not steady) | 8.51 | – | – |"]
    assert docs_results.refresh(new, out) == new
