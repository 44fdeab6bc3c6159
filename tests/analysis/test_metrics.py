"""Every metric of the analysis, checked exactly on a hand-built run (tests/analysis/ledgers.py)."""

from __future__ import annotations

import math
import random

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from benchmarks.analysis import metrics, schemas, transactions
from tests.analysis import ledgers
from tests.analysis.ledgers import RUN, ns

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def analysis(spark):
    return metrics.analyse(*ledgers.frames(spark), gap_threshold_s=2.0, expected_acks=0)


def nearest_rank(values, p):
    """The exact percentile: the smallest value with at least p of the values at or below it.
    The analysis reports it within metrics.PRECISION, exactly when its bucket holds one value."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def test_counts(spark, analysis):
    expected = spark.createDataFrame(
        [(RUN, 16, 13, 2, 1, 1, 1, 1, 1, 1, 0)],
        "run_id string, sent long, acked long, failed long, indeterminate long, lost long, unseen long, "
        "duplicates long, failed_delivered long, indeterminate_delivered long, unledgered long")
    assertDataFrameEqual(analysis.counts, expected)
    assertDataFrameEqual(analysis.reordered, spark.createDataFrame([(RUN, 1)], "run_id string, reordered long"))


def test_lost_and_unseen_messages_are_named(spark, analysis):
    expected = spark.createDataFrame([(RUN, "lost", 0, 3, 0, 2), (RUN, "unseen", 0, 13, 0, 6)],
                                     "run_id string, status string, producer int, seq long, partition int, offset long")
    assertDataFrameEqual(analysis.lost, expected)


def test_message_status(analysis):
    status = {(r.producer, r.seq): r.status for r in analysis.status.collect()}
    assert status[(0, 6)] == "failed"
    assert status[(0, 8)] == "failed-delivered"
    assert status[(0, 7)] == "indeterminate-delivered"
    assert status[(1, 3)] == "delivered"
    assert status[(0, 5)] == "delivered"


def test_errors_are_counted_with_the_broker_error_behind_them(spark, analysis):
    expected = spark.createDataFrame(
        [(RUN, "failed", "NOT_ENOUGH_REPLICAS", None, 2), (RUN, "indeterminate", "_MSG_TIMED_OUT", "NOT_ENOUGH_REPLICAS", 1)],
        "run_id string, outcome string, error string, cause string, messages long")
    assertDataFrameEqual(analysis.errors, expected)


def test_phase_windows(spark, analysis):
    expected = spark.createDataFrame(
        [(RUN, "warmup", ns(0), ns(1)), (RUN, "steady", ns(1), ns(4)), (RUN, "fault", ns(4), ns(7)),
         (RUN, "recovery", ns(7), ns(10)), (RUN, "measured", ns(1), ns(10))],
        "run_id string, phase string, start_ns long, end_ns long")
    assertDataFrameEqual(metrics.phase_windows(analysis.bounds), expected)


def test_throughput_and_counts_per_phase(analysis):
    rows = {r.phase: r for r in analysis.phases.collect()}
    got = {p: (r.sent, r.acked, r.failed, r.indeterminate) for p, r in rows.items()}
    assert got == {"warmup": (2, 2, 0, 0), "steady": (5, 5, 0, 0), "fault": (4, 0, 2, 1),
                   "recovery": (5, 6, 0, 0), "measured": (14, 11, 2, 1)}
    assert rows["measured"].throughput_msgs_s == pytest.approx(11 / 9)
    assert rows["measured"].throughput_mb_s == pytest.approx(11 / 9 * 100 / 1e6)
    assert rows["steady"].throughput_msgs_s == pytest.approx(5 / 3)
    assert rows["recovery"].throughput_msgs_s == pytest.approx(2.0)
    assert rows["fault"].throughput_msgs_s == 0


def test_latency_percentiles(analysis):
    measured = [(a - i) * 1000 for p, s, i, se, a, o, *_ in ledgers.PRODUCED if o == "acked" and i >= 1]
    row = next(r for r in analysis.phases.collect() if r.phase == "measured")
    for p, name in zip(metrics.PERCENTILES, metrics.PERCENTILE_NAMES):
        assert getattr(row, f"latency_{name}_ms") == pytest.approx(nearest_rank(measured, p), abs=1e-6)
    assert row.latency_max_ms == pytest.approx(1500)
    fault = next(r for r in analysis.phases.collect() if r.phase == "fault")
    # one message intended during the fault was acked (seq 9, 1.5 s later); latency is by intended time
    assert (fault.latency_p50_ms, fault.latency_max_ms) == (pytest.approx(1500), pytest.approx(1500))


def test_end_to_end_latency(analysis):
    row = next(r for r in analysis.end_to_end.collect() if r.phase == "measured")
    assert (row.consumed, row.e2e_p50_ms, row.e2e_max_ms) == (3, pytest.approx(100), pytest.approx(1600))


def test_per_second(analysis):
    rows = {int(r.second): r for r in analysis.per_second.collect()}
    assert (rows[3].sent, rows[3].acked) == (2, 2)
    assert (rows[4].sent, rows[4].failed, rows[4].acked) == (1, 1, 0)
    assert (rows[5].sent, rows[5].failed, rows[5].indeterminate) == (2, 1, 1)
    assert (rows[7].sent, rows[7].acked, rows[7].latency_p50_ms) == (0, 1, pytest.approx(1500))
    assert sum(r.sent for r in rows.values()) == 16


def test_unavailability_windows(spark, analysis):
    expected = spark.createDataFrame(
        [(RUN, 0, ns(3.01), ns(7.5), 4.49, True, True, False, True),
         (RUN, 1, ns(3.4), ns(8.01), 4.61, True, False, True, True)],
        "run_id string, partition int, start_ns long, end_ns long, duration_s double, recovered boolean, "
        "leaderless boolean, under_min_isr boolean, during_fault boolean")
    got = analysis.unavailability.select(*expected.columns)
    assertDataFrameEqual(got, expected, rtol=1e-9)


def test_a_partition_never_acked_again_is_unavailable_until_the_end(spark):
    runs, events, produce, consume, timeline = ledgers.frames(spark)
    cut = produce.filter(~((F.col("partition") == 1) & (F.col("ack_ns") > ns(3))))
    result = metrics.analyse(runs, events, cut, consume, timeline, gap_threshold_s=2.0, expected_acks=0)
    rows = result.unavailability.filter(F.col("partition") == 1).collect()
    assert [(r.start_ns, r.end_ns, r.recovered) for r in rows] == [(ns(2.03), ns(10), False)]


def test_sparse_partitions_stretch_the_gap_threshold(spark):
    # p0 has 6 acks in 10 s: 5 expected acks take 8.3 s, longer than its 4.49 s gap
    result = metrics.analyse(*ledgers.frames(spark), gap_threshold_s=2.0, expected_acks=5)
    assert result.unavailability.count() == 0


def test_health_time_from_the_timeline(spark, analysis):
    expected = spark.createDataFrame([(RUN, 0, 1.0, 0.0, 0.0), (RUN, 1, 0.0, 3.0, 2.0)],
                                     "run_id string, partition int, leaderless_s double, under_min_isr_s double, "
                                     "hw_stall_s double")
    assertDataFrameEqual(analysis.health, expected, rtol=1e-9)


def test_leadership_segments(spark, analysis):
    expected = spark.createDataFrame(
        [(RUN, 0, ns(0), ns(5), 1, "1,2,3"), (RUN, 0, ns(5), ns(6), None, "2,3"), (RUN, 0, ns(6), ns(8), 2, "2,3"),
         (RUN, 0, ns(8), ns(10), 2, "2,3,1"),
         (RUN, 1, ns(0), ns(5), 2, "2,3,1"), (RUN, 1, ns(5), ns(8), 2, "2"), (RUN, 1, ns(8), ns(10), 2, "2,3,1")],
        "run_id string, partition int, start_ns long, end_ns long, leader int, isr string")
    assertDataFrameEqual(analysis.segments, expected)


def test_fault_impact(spark, analysis):
    expected = spark.createDataFrame(
        [(RUN, "f1", 1.0, 0, 1, 2, 2.0, "isr", 1.0, 4.0, 3.5), (RUN, "f1", 1.0, 1, 2, 2, None, None, 1.0, 4.0, 4.01)],
        "run_id string, fault_id string, late_s double, partition int, leader_before int, leader_after int, new_leader_s double, "
        "new_leader_from string, isr_shrink_s double, isr_expand_s double, first_ack_s double")
    got = analysis.faults.select(*expected.columns)
    assertDataFrameEqual(got, expected, rtol=1e-9)


def test_acknowledged_writes_above_a_stalled_high_watermark_are_counted(spark, analysis):
    """Partition 1's high watermark stands at 3 from 5 to 7 s (ISR below min ISR): an ack in that
    window at offset 3 or above was unreadable; one below the high watermark, or after the window,
    or on a partition whose high watermark is unknown, is not counted."""
    runs, events, produce, consume, timeline = ledgers.frames(spark)
    extra = spark.createDataFrame(
        [(RUN, 0, 100 + i, -1, ns(5.5), ns(5.5), ns(at), "acked", part, offset, None, None)
         for i, (at, part, offset) in enumerate([(5.6, 1, 3), (6.9, 1, 4), (5.7, 1, 2), (7.2, 1, 5), (5.8, 0, 9)])],
        schemas.PRODUCE)
    counted = metrics.acked_invisible(produce.unionByName(extra), metrics.partition_states(timeline, runs))
    assertDataFrameEqual(counted, spark.createDataFrame([(RUN, 1, 2)], "run_id string, partition int, acked_invisible long"))


@pytest.mark.parametrize(("isr", "elr", "origin"), [("1", "2,3", "elr"), ("1", "", "unclean"), ("1", None, "unclean")])
def test_where_the_new_leader_came_from(spark, isr, elr, origin):
    """Partition 0's new leader (broker 2, elected at 6 s) out of the replicas the sample before
    showed: the Eligible Leader Replicas with ISR below min ISR (KRaft, KIP-966), else an unclean
    election (also on ZooKeeper, whose timeline has no ELR)."""
    runs, events, produce, consume, timeline = ledgers.frames(spark)
    before = (F.col("partition") == 0) & (F.col("t_ns") == ns(5))
    timeline = (timeline.withColumn("isr", F.when(before, F.lit(isr)).otherwise(F.col("isr")))
                .withColumn("elr", F.when(before, F.lit(elr)).otherwise(F.col("elr"))))
    impact = metrics.fault_impact(events, metrics.partition_states(timeline, runs), produce, runs)
    assert {r.partition: r.new_leader_from for r in impact.collect()} == {0: origin, 1: None}


def test_a_leader_elected_after_the_load_is_no_failover(spark):
    """The same run, had its load ended at 5.5 s: partition 0's new leader (6 s) came after it."""
    runs, events, produce, consume, timeline = ledgers.frames(spark)
    runs = runs.withColumn("load_end_ns", F.lit(ledgers.ns(5.5)))
    impact = metrics.fault_impact(events, metrics.partition_states(timeline, runs), produce, runs)
    assert {r.partition: r.new_leader_s for r in impact.collect()} == {0: None, 1: None}


def test_summary_row(analysis):
    (row,) = analysis.summary.collect()
    assert tuple(row.asDict()) == metrics.RUN_COLUMNS
    # A run without transactions has null transaction columns (not zeros: no transaction was checked).
    assert {c: row[c] for c in (*transactions.TXN_COLUMNS, "txn_client")} == dict.fromkeys(
        (*transactions.TXN_COLUMNS, "txn_client"))
    assert (row.faults_injected, row.injections_with_loss, row.trial, row.trials, row.trials_with_loss) == (1, 1, 1, 1, 1)
    assert (row.sent, row.acked, row.failed, row.indeterminate, row.lost, row.unseen, row.duplicates,
            row.reordered) == (16, 13, 2, 1, 1, 1, 1, 1)
    assert (row.unavailable_s, row.unavailable_in_fault_s) == (pytest.approx(4.61), pytest.approx(4.61))
    assert row.new_leader_s == pytest.approx(2.0)
    assert (row.new_leader_from, row.under_min_isr_s, row.eligible_leader_replicas) == ("isr", pytest.approx(3.0), True)
    assert (row.hw_stall_s, row.acked_invisible) == (pytest.approx(2.0), 0)
    assert row.causes == {"NOT_ENOUGH_REPLICAS": 1}
    assert row.throughput_msgs_s == pytest.approx(11 / 9)
    assert row.e2e_p99_ms == pytest.approx(1600)
    # 0.9 s of broker CPU for 13 acknowledged messages; no sweep
    assert (row.broker_cpu_s, row.broker_cpu_ms_per_1k, row.sweep_of, row.sweep_point) == (0.9, 69230.769, None, [])


def test_missing_and_mistyped_columns_are_named(spark):
    runs, events, produce, consume, timeline = ledgers.frames(spark)
    with pytest.raises(schemas.SchemaError, match=r"produce ledger: missing column 'ack_ns' \(bigint\)"):
        metrics.analyse(runs, events, produce.drop("ack_ns"), consume, timeline)
    with pytest.raises(schemas.SchemaError, match=r"consume ledger: column 'offset' is string, expected bigint"):
        metrics.analyse(runs, events, produce, consume.withColumn("offset", F.col("offset").cast("string")), timeline)


def test_percentiles_are_within_the_stated_precision(spark):
    """Many values spread over seven decades, negative and zero ones too: every percentile
    within metrics.PRECISION of the exact one (or FLOOR_MS of it near zero), max exact."""
    rng = random.Random(7)
    values = [10 ** rng.uniform(-4, 3) for _ in range(5000)] + [0.0] * 40 + [-rng.uniform(0, 5) for _ in range(60)]
    rows = [("a" if i % 2 else "b", v) for i, v in enumerate(values)]
    df = spark.createDataFrame(rows, "g string, v double")
    got = {r.g: r for r in metrics.percentiles(df, ["g"], "v", "x").collect()}
    for group in ("a", "b"):
        mine = [v for g, v in rows if g == group]
        for name, p in zip(metrics.PERCENTILE_NAMES, metrics.PERCENTILES):
            exact = nearest_rank(mine, p)
            assert getattr(got[group], f"x_{name}_ms") == pytest.approx(exact, rel=metrics.PRECISION,
                                                                         abs=metrics.FLOOR_MS), (group, name)
        assert got[group].x_max_ms == max(mine)


def test_checkpointed_intermediate_results_give_what_cached_ones_give(spark, analysis):
    """The report on one machine keeps the intermediate results checkpointed (their plans cut
    off), on a cluster cached: every result is the same either way."""
    checkpointed = metrics.analyse(*ledgers.frames(spark), gap_threshold_s=2.0, expected_acks=0,
                                   keep=metrics.checkpointed)
    assertDataFrameEqual(checkpointed.summary, analysis.summary, checkRowOrder=True)  # the one ordered result
    for name in ("counts", "lost", "phases", "end_to_end", "unavailability", "faults", "health", "trials"):
        assertDataFrameEqual(getattr(checkpointed, name), getattr(analysis, name))
