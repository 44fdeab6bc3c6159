"""The steadiness check of the steady phase: trend and acked vs offered, exactly."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from benchmarks.analysis import metrics, schemas, steadiness
from tests.analysis import ledgers
from tests.analysis.ledgers import RUN, ns

pytestmark = pytest.mark.spark


def produced(spark, rows, timed_out=()):
    """(seq, intended s, ack s or None) -> produce ledger rows of one producer; the seqs in
    `timed_out` end indeterminate with their delivery report at the ack time given."""
    def row(seq, t, ack):
        if ack is not None and seq not in timed_out:
            return RUN, 0, seq, 0, ns(t), ns(t), ns(ack), "acked", 0, seq, None, None
        return RUN, 0, seq, 0, ns(t), ns(t), ns(ack), "indeterminate", None, None, "_MSG_TIMED_OUT", None
    return spark.createDataFrame([row(*r) for r in rows], schemas.PRODUCE)


def bounds(spark, fault_start=None, load_end=10.0, warm_p50_ms=None):
    return spark.createDataFrame([(RUN, ns(0), ns(1), ns(fault_start), None, ns(load_end), warm_p50_ms)],
                                 "run_id string, load_start_ns long, measured_from_ns long, fault_start_ns long, "
                                 "fault_end_ns long, load_end_ns long, warm_p50_ms double")


def test_the_hand_built_run_was_steady_before_its_fault(spark):
    runs, events, produce, _, _ = ledgers.frames(spark)
    got = steadiness.steadiness(produce, metrics.phase_bounds(runs, events))
    # Steady phase 1-4 s: first third only seq 1 (20 ms), last third seq 4 (10 ms) and 5 (50 ms);
    # p50 of 20, 30, 100, 10, 50 ms: 30 ms, within 5x the warmed path's 10 ms.
    expected = spark.createDataFrame([(RUN, 3.0, 1.0, 20.0, 50.0, 30.0, True)],
                                     "run_id string, steady_s double, steady_acked_share double, "
                                     "steady_p99_first_ms double, steady_p99_last_ms double, steady_p50_ms double, "
                                     "steady boolean")
    assertDataFrameEqual(got, expected, rtol=1e-3)


def test_a_start_of_run_transient_is_not_steady(spark):
    """durability-034 as seen: a second of latency at the start, milliseconds later."""
    rows = [(i, 1 + i * 0.1, 1 + i * 0.1 + (1.0 if i < 30 else 0.007)) for i in range(90)]
    [row] = steadiness.steadiness(produced(spark, rows), bounds(spark)).collect()
    assert (row.steady, row.steady_acked_share) == (False, 1.0)
    assert row.steady_p99_first_ms == pytest.approx(1000, rel=1e-3)
    assert row.steady_p99_last_ms == pytest.approx(7, rel=1e-3)


def test_sends_not_acknowledged_without_a_fault_are_not_steady(spark):
    rows = [(i, 1 + i * 0.1, None if i % 10 == 0 else 1 + i * 0.1 + 0.005) for i in range(90)]
    [row] = steadiness.steadiness(produced(spark, rows), bounds(spark)).collect()
    assert (row.steady, row.steady_acked_share) == (False, pytest.approx(0.9))


def test_jitter_at_low_latency_is_no_trend_and_a_short_phase_is_not_judged(spark):
    rows = [(i, 1 + i * 0.1, 1 + i * 0.1 + (0.015 if i < 30 else 0.003)) for i in range(90)]
    [row] = steadiness.steadiness(produced(spark, rows), bounds(spark)).collect()
    assert row.steady is True  # 15 ms vs 3 ms: 5x, but within TREND_FLOOR_MS
    seed = [(i, 1 + i * 0.1, 1 + i * 0.1 + (0.053 if i < 30 else 0.017)) for i in range(90)]
    [one_broker_down] = steadiness.steadiness(produced(spark, seed), bounds(spark)).collect()
    assert one_broker_down.steady is True  # python-one-broker-down as measured: 53 ms, then 17 ms
    [short] = steadiness.steadiness(produced(spark, rows), bounds(spark, fault_start=2.5)).collect()
    assert short.steady is None and short.steady_s == pytest.approx(1.5)


def test_a_backlog_that_builds_and_drains_inside_the_phase_is_not_steady(spark):
    """durability-acks-all-rf3-000 as measured: the warmed path at p50 5 ms, then the load's acks
    fell behind for 20 s (p50 0.4 s -> 2.4 s -> 0.04 s): no trend from end to end, all backlog."""
    hump = [0.36, 1.1, 1.4, 1.1, 1.7, 2.1, 2.2, 2.4, 2.2, 1.9, 1.7, 1.6, 1.8, 1.9, 1.8, 2.2, 2.0, 1.9, 1.3, 0.7, 0.2, 0.04]
    rows = [(i, 1 + i * 0.1, 1 + i * 0.1 + hump[min(i // 4, len(hump) - 1)]) for i in range(88)]
    [row] = steadiness.steadiness(produced(spark, rows), bounds(spark, warm_p50_ms=5.2)).collect()
    assert (row.steady, row.steady_acked_share) == (False, 1.0)
    assert row.steady_p50_ms == pytest.approx(1700, rel=1e-3)
    [unjudged] = steadiness.steadiness(produced(spark, rows), bounds(spark)).collect()
    assert unjudged.steady is True  # an unthrottled load (no warm level): only the trend and the acks count


def test_a_path_a_little_slower_than_the_warm_up_is_steady(spark):
    """Two producer processes instead of the warm-up's one: p50 7.3 ms against 5.6 ms."""
    rows = [(i, 1 + i * 0.1, 1 + i * 0.1 + 0.0073) for i in range(90)]
    [row] = steadiness.steadiness(produced(spark, rows), bounds(spark, warm_p50_ms=5.6)).collect()
    assert row.steady is True


def test_sends_in_flight_when_the_fault_struck_count_only_their_wait_before_it(spark):
    """The leader kill as measured: sends intended in the 0.15 s before the kill waited out the
    17 s election; the phase saw them wait at most until the kill."""
    rows = [(i, 1 + i * 0.05, 1 + i * 0.05 + (17.0 if 1 + i * 0.05 >= 3.85 else 0.09)) for i in range(60)]
    [row] = steadiness.steadiness(produced(spark, rows), bounds(spark, fault_start=4.0, warm_p50_ms=13.0)).collect()
    assert row.steady is True and row.steady_s == pytest.approx(3.0)
    assert row.steady_p99_last_ms <= 150.0 + 1e-6  # intended at 3.85 s at the earliest, censored at 4 s
    assert row.steady_p50_ms == pytest.approx(90.0, rel=1e-2)  # 90 ms everywhere: a level, 7x the warm path's


def test_sends_in_flight_when_the_fault_struck_are_its_outcome_whether_acked_or_not(spark):
    """Seed 002 as measured (make bench): 300 msg/s, the first kill at 4 s; the 10 sends intended
    in its last ~33 ms timed out 11 s later (the partition stayed leaderless), which made the acked
    share 98.9 % of the phase. Sends whose timeout came before the fault still count against it."""
    rows = [(i, 1 + i / 300, 1 + i / 300 + (11.0 if 1 + i / 300 >= 3.966 else 0.007)) for i in range(900)]
    in_flight = {seq for seq, t, _ in rows if t >= 3.966}
    assert len(in_flight) == 10
    [row] = steadiness.steadiness(produced(spark, rows, timed_out=in_flight),
                                  bounds(spark, fault_start=4.0, warm_p50_ms=7.0)).collect()
    assert (row.steady, row.steady_acked_share) == (True, 1.0)
    assert row.steady_p99_last_ms <= 34.0  # waited at most until the kill
    early = {seq for seq, t, _ in rows if 2.0 <= t < 2.04}  # 12 timed out at 2.3 s, before the fault
    rows = [(seq, t, 2.3 if seq in early else ack) for seq, t, ack in rows]
    [row] = steadiness.steadiness(produced(spark, rows, timed_out=in_flight | early),
                                  bounds(spark, fault_start=4.0, warm_p50_ms=7.0)).collect()
    assert row.steady is False and row.steady_acked_share == pytest.approx(1 - 12 / 890)


def test_a_level_far_above_the_warm_path_is_a_backlog(spark):
    rows = [(i, 1 + i * 0.1, 1 + i * 0.1 + 0.4) for i in range(90)]
    [row] = steadiness.steadiness(produced(spark, rows), bounds(spark, warm_p50_ms=13.0)).collect()
    assert row.steady is False and row.steady_p50_ms == pytest.approx(400.0, rel=1e-2)
