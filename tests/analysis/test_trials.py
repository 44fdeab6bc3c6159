"""Trials of a configuration summed up: the Wilson interval against published values, the
per-configuration figures of a hand-built summary, and a 3-trial report end to end."""

from __future__ import annotations

import csv

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from benchmarks.analysis import trials
from benchmarks.report import outputs
from tests.analysis import ledgers

pytestmark = pytest.mark.spark


# (successes, trials) -> the 95% Wilson score interval, as published (Wilson 1927; Newcombe 1998,
# Brown, Cai & DasGupta 2001), to 4 places.
KNOWN = [((0, 10), (0.0, 0.2775)), ((9, 10), (0.5958, 0.9821)), ((10, 10), (0.7225, 1.0)),
         ((1, 2), (0.0945, 0.9055)), ((0, 60), (0.0, 0.0602)), ((1, 3), (0.0615, 0.7923))]


def test_the_wilson_interval_matches_published_values(spark):
    df = spark.createDataFrame([(k, n) for (k, n), _ in KNOWN] + [(0, 0)], "k long, n long")
    low, high = trials.wilson(F.col("k"), F.col("n"))
    got = [(r.low, r.high) for r in df.select(low.alias("low"), high.alias("high")).collect()]
    for ((k, n), (want_low, want_high)), (got_low, got_high) in zip(KNOWN, got):
        assert (got_low, got_high) == (pytest.approx(want_low, abs=5e-5), pytest.approx(want_high, abs=5e-5)), (k, n)
    assert got[0][0] == 0.0 and got[2][1] == 1.0  # exact at the ends, not a rounding away from them
    assert got[-1] == (None, None)  # no valid trial: no interval


SUMMARY = ("scenario string, metadata_mode string, kafka_version string, acks string, replication_factor int, "
           "min_insync_replicas int, unclean_leader_election boolean, fault string, valid boolean, lost long, "
           "unseen long, duplicates long, unavailable_s double, new_leader_s double, faults_injected long, "
           "injections_with_loss long, expect_loss boolean, fault_schedule array<struct<every_s:double>>, "
           "security string")


def test_trials_are_summed_up_per_configuration(spark):
    """acks-1 on ZooKeeper: 4 valid trials (two lose: 5 lost; 1 unseen) and one invalid trial
    that lost (left out); acks-all: 2 trials, no loss, one without a leader change; the same
    scenario on KRaft is a configuration of its own."""
    def run(scenario, mode, valid, lost, unseen, dup, unavailable, leader):
        acks = "1" if scenario == "acks-1" else "all"
        return (scenario, mode, "3.9.2" if mode == "zookeeper" else "4.3.1", acks, 3, 2, False, "broker-kill", valid,
                lost, unseen, dup, unavailable, leader, 1, 1 if lost + unseen else 0, False,
                [{"every_s": 10.0 if mode == "kraft" else None}], "plaintext")

    summary = spark.createDataFrame([
        run("acks-1", "zookeeper", True, 5, 0, 0, 10.0, 9.0), run("acks-1", "zookeeper", True, 0, 1, 2, 20.0, 8.0),
        run("acks-1", "zookeeper", True, 0, 0, 0, 30.0, 7.0), run("acks-1", "zookeeper", True, 0, 0, 0, 40.0, 6.0),
        run("acks-1", "zookeeper", False, 100, 0, 0, 99.0, 99.0),
        run("acks-all", "zookeeper", True, 0, 0, 0, 1.0, 2.0), run("acks-all", "zookeeper", True, 0, 0, 0, 3.0, None),
        run("acks-all", "kraft", True, 0, 0, 0, 0.5, 0.4),
    ], SUMMARY)
    got = trials.trials(summary).select(
        "scenario", "metadata_mode", "trials", "trials_invalid", "trials_with_loss", "lost_median", "lost_max",
        "unavailable_median_s", "unavailable_p90_s", "unavailable_max_s", "new_leader_median_s", "new_leader_max_s",
        "duplicates", "faults_injected", "injections_with_loss")
    expected = spark.createDataFrame([
        ("acks-1", "zookeeper", 4, 1, 2, 0.5, 5, 25.0, 37.0, 40.0, 7.5, 9.0, 2, 4, 2),
        ("acks-all", "kraft", 1, 0, 0, 0.0, 0, 0.5, 0.5, 0.5, 0.4, 0.4, 0, 1, 0),
        ("acks-all", "zookeeper", 2, 0, 0, 0.0, 0, 2.0, 2.8, 3.0, 2.0, 2.0, 0, 2, 0),
    ], "scenario string, metadata_mode string, trials long, trials_invalid long, trials_with_loss long, "
       "lost_median double, lost_max long, unavailable_median_s double, unavailable_p90_s double, "
       "unavailable_max_s double, new_leader_median_s double, new_leader_max_s double, duplicates long, "
       "faults_injected long, injections_with_loss long")
    assertDataFrameEqual(got, expected, rtol=1e-9)
    interval = {r.scenario + r.metadata_mode: (r.loss_ci_low, r.loss_ci_high) for r in trials.trials(summary).collect()}
    assert {r.metadata_mode: r.recurring for r in trials.trials(summary).collect()} == {"kraft": True, "zookeeper": False}
    assert interval["acks-1zookeeper"] == (pytest.approx(0.1500, abs=1e-4), pytest.approx(0.8500, abs=1e-4))
    assert interval["acks-allkraft"] == (0.0, pytest.approx(0.7935, abs=1e-4))


def test_a_three_trial_report_has_a_row_per_trial_and_the_configurations_interval(spark, tmp_path):
    """Three trials of the hand-built run, the first losing (1 lost, 1 unseen), the others not."""
    for trial in (1, 2, 3):
        ledgers.write_run_dir(spark, tmp_path / f"r{trial}", run_id=f"r{trial}", trial=trial, loses=trial == 1)
    report = outputs.build(str(tmp_path))
    with open(tmp_path / "summary.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["trial"], r["lost"], r["unseen"], r["trials"], r["trials_with_loss"]) for r in rows] == [
        ("1", "1", "1", "3", "1"), ("2", "0", "0", "3", "1"), ("3", "0", "0", "3", "1")]
    assert [(float(r["loss_ci_low"]), float(r["loss_ci_high"])) for r in rows] == [
        (pytest.approx(0.0615, abs=1e-4), pytest.approx(0.7923, abs=1e-4))] * 3
    assert {r["faults_injected"] for r in rows} == {"1"}
    with open(tmp_path / "trials.csv", newline="") as handle:
        (configuration,) = list(csv.DictReader(handle))
    assert (configuration["trials"], configuration["trials_with_loss"], configuration["faults_injected"],
            configuration["lost_max"]) == ("3", "1", "3", "2")
    assert configuration["verdict"].startswith("lost acknowledged writes in 1 of 3 trials (median 0, max 2 a trial")
    page = report.html.read_text()
    assert "<h2>Trials</h2>" in page and "hand-built trial 3" in page


@pytest.mark.parametrize(("second", "expected"), [
    (None, [("r1", "f1", 2)]),  # seq 3 acked before f1 (the first after it), seq 13 after its heal (the last)
    ((8.5, 9.5), [("r1", "f1", 1), ("r1", "f2", 1)]),  # seq 13 acked at 9.02 s while f2 was in force
])
def test_each_lost_write_is_charged_to_one_injection(spark, second, expected):
    runs, events, produce, consume, timeline = ledgers.frames(spark)
    if second:
        more = [ledgers.event(ledgers.ns(second[0]), "fault-injected", fault_id="f2", at_ns=ledgers.ns(second[0])),
                ledgers.event(ledgers.ns(second[1]), "fault-healed", fault_id="f2", at_ns=ledgers.ns(second[1]))]
        events = events.unionByName(spark.createDataFrame(more, events.schema))
    from benchmarks.analysis import metrics

    codes = metrics.status_codes(produce, consume)
    lost = metrics.lost_messages(codes, metrics.run_keys(runs))
    assertDataFrameEqual(trials.injection_losses(lost, produce, events),
                         spark.createDataFrame(expected, "run_id string, fault_id string, lost long"))


@pytest.mark.parametrize(("losing", "blind"), [(9, False), (10, False), (8, True), (0, True)])
def test_a_negative_control_that_loses_in_fewer_than_nine_of_ten_trials_flags_the_harness_blind(spark, losing, blind):
    rows = [("control", "zookeeper", "3.9.2", "1", 3, 1, False, "broker-kill", True, 5 if i < losing else 0, 0, 0, 1.0,
             1.0, 1, 0, True, [], "sasl_ssl") for i in range(10)]
    (row,) = trials.trials(spark.createDataFrame(rows, SUMMARY)).collect()
    assert (row.expect_loss, row.trials_with_loss, row.blind) == (True, losing, blind)


def test_a_blind_negative_control_is_named_in_the_report_and_fails_the_command(spark, tmp_path):
    """Two trials of a negative control, one losing: under 9 of 10, so the harness is blind."""
    from click.testing import CliRunner

    from benchmarks.cli.app import cli
    from benchmarks.core.exit_codes import ExitCode

    for trial in (1, 2):
        ledgers.write_run_dir(spark, tmp_path / f"r{trial}", run_id=f"r{trial}", trial=trial, loses=trial == 1,
                              expect_loss=True)
    result = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert result.exit_code == ExitCode.BLIND, result.output
    assert "HARNESS BLIND: hand-built: HARNESS BLIND: this negative control lost acknowledged writes in 1 of 2" \
        in " ".join(result.output.split())
    page = (tmp_path / "report.html").read_text()
    assert "<b>HARNESS BLIND: a negative control did not lose what it was built to lose" in page
