"""Consumer groups on hand-built ledgers: lag per second in records and seconds, rebalances
(eager and cooperative, a member gone), and skipped, out-of-order and twice-read records."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from benchmarks.analysis import consumers, schemas
from benchmarks.analysis.rows import RunRow
from benchmarks.core.codes import FINAL_READ, FINAL_READ_COMMITTED
from benchmarks.report.verdict import consumers_said

pytestmark = pytest.mark.spark

RUN = "r1"
S = 1_000_000_000  # one second, in ns; the load starts at 0 and ends at 10 s


def _runs(spark):
    names = schemas.RUNS.names
    row = dict.fromkeys(names) | {"run_id": RUN, "load_start_ns": 0, "load_end_ns": 10 * S}
    return spark.createDataFrame([tuple(row[n] for n in names)], schemas.RUNS)


def _produce(spark, acks):
    """acks: (seq, partition, offset, ack time in s)."""
    return spark.createDataFrame([(RUN, 0, seq, -1, 0, 0, int(t * S), "acked", p, off, None, None)
                                  for seq, p, off, t in acks], schemas.PRODUCE)


def _consume(spark, rows):
    """rows: (group, consumer, seq, partition, offset, read time in s)."""
    return spark.createDataFrame([(RUN, g, c, 0, seq, p, off, 0, int(t * S)) for g, c, seq, p, off, t in rows],
                                 schemas.CONSUME)


def _final(acks, group=FINAL_READ):
    return [(group, group, seq, p, off, 11.0) for seq, p, off, _ in acks]


def test_lag_counts_what_the_group_has_not_read_and_how_old_the_oldest_is(spark):
    # Partition 0: four acks in second 0; the group reads two at 0.9 s, the others at 3.5 s.
    acks = [(0, 0, 0, 0.1), (1, 0, 1, 0.2), (2, 0, 2, 0.4), (3, 0, 3, 0.5)]
    reads = [("g", "c0", 0, 0, 0, 0.9), ("g", "c0", 1, 0, 1, 0.9), ("g", "c0", 2, 0, 2, 3.5), ("g", "c0", 3, 0, 3, 3.5)]
    lost = [(9, 0, 9, 0.3)]  # acknowledged, then lost: the log never held it for the group to read
    got = consumers.consumer_lag(_produce(spark, acks + lost), _consume(spark, reads + _final(acks)), _runs(spark))
    # Waiting at the ends of seconds 0, 1 and 2: messages 2 and 3, the oldest acked at 0.4 s.
    want = spark.createDataFrame([(RUN, "g", 0, s, 2, s + 1 - 0.4) for s in (0, 1, 2)],
                                 "run_id string, group string, partition int, second long, lag long, lag_s double")
    assertDataFrameEqual(got, want, checkRowOrder=False, rtol=1e-9)


def test_a_message_never_read_waits_until_the_end_of_the_load(spark):
    """(And in a transactional run, one of an aborted transaction never counts: the committed read lacks it.)"""
    acks = [(0, 1, 0, 8.5), (1, 1, 1, 8.6)]
    got = consumers.consumer_lag(_produce(spark, acks), _consume(spark, [("g", "c0", 0, 1, 0, 8.7)] + _final(acks)),
                                 _runs(spark))
    assert [(r.second, r.lag, round(r.lag_s, 3)) for r in got.orderBy("second").collect()] == [(8, 1, 0.4), (9, 1, 1.4),
                                                                                             (10, 1, 2.4)]
    committed = _final(acks[:1], FINAL_READ_COMMITTED)  # message 1's transaction was aborted
    got = consumers.consumer_lag(_produce(spark, acks), _consume(spark, [("g", "c0", 0, 1, 0, 8.7)] + _final(acks)
                                                                 + committed), _runs(spark))
    assert got.count() == 0


def _changes(spark, rows):
    """rows: (consumer, event, partition, time in s)."""
    return spark.createDataFrame([(RUN, "g", c, int(t * S), e, p) for c, e, p, t in rows], schemas.GROUP)


def test_an_eager_rebalance_pauses_every_partition_and_counts_those_that_moved(spark):
    rows = ([("c0", "assigned", p, -2.0) for p in (0, 1, 2)]                  # the first assignment: no rebalance
            + [("c0", "revoked", p, 3.0) for p in (0, 1, 2)]                  # c1 joins: c0 gives up everything
            + [("c0", "assigned", 0, 4.5), ("c0", "assigned", 1, 4.5), ("c1", "assigned", 2, 4.6)]
            + [("c1", "revoked", 2, 7.0), ("c0", "revoked", 0, 7.0), ("c0", "revoked", 1, 7.0)]  # c1 leaves
            + [("c0", "assigned", p, 7.25) for p in (0, 1, 2)]
            + [("c0", "revoked", p, 10.0) for p in (0, 1, 2)])               # the end: nothing given out again
    got = consumers.rebalances(_changes(spark, rows), _runs(spark)).select(
        "rebalance", "start_ns", "duration_s", "partitions_paused", "partitions_moved", "during_load")
    want = spark.createDataFrame([(1, 3 * S, 1.6, 3, 1, True), (2, 7 * S, 0.25, 3, 1, True)],
                                 "rebalance long, start_ns long, duration_s double, partitions_paused long, "
                                 "partitions_moved long, during_load boolean")
    assertDataFrameEqual(got, want, rtol=1e-9)


def test_a_cooperative_rebalance_pauses_only_what_moves_and_a_rebalance_before_the_load_is_not_counted(spark):
    rows = [("c0", "assigned", 0, -3.0), ("c0", "assigned", 1, -3.0),
            ("c0", "revoked", 1, -1.5), ("c1", "assigned", 1, -1.0),          # while members joined
            ("c1", "lost", 1, 5.0), ("c0", "assigned", 1, 6.0)]               # c1's session expired
    moves = consumers.rebalances(_changes(spark, rows), _runs(spark))
    got = [(r.partitions_paused, r.partitions_moved, r.duration_s, r.during_load)
           for r in moves.orderBy("start_ns").collect()]
    assert got == [(1, 1, 0.5, False), (1, 1, 1.0, True)]
    lag = consumers.consumer_lag(_produce(spark, []), _consume(spark, []), _runs(spark))
    summary = consumers.consumer_summary(lag, moves, consumers.read_anomalies(_consume(spark, [
        ("g", "c0", 0, 0, 0, 1.0)]), _changes(spark, rows))).first()
    assert (summary.rebalances, summary.rebalance_max_s, summary.partitions_moved) == (1, 1.0, 1)


def test_skipped_out_of_order_and_twice_read_records_are_told_apart(spark):
    log = [(FINAL_READ, "final", seq, 0, seq, 11.0) for seq in range(6)]
    reads = [("g", "c0", 0, 0, 0, 1.0), ("g", "c0", 2, 0, 2, 1.1),            # offset 1 skipped
             ("g", "c0", 3, 0, 3, 1.2), ("g", "c0", 2, 0, 2, 1.3),            # 2 again, after 3: out of order, twice
             ("g", "c1", 4, 0, 4, 2.0),                                       # offset 5 never reached: not skipped
             ("g", "c1", 3, 0, 3, 2.6)]                                       # assigned anew at 2.5 s: a replay
    changes = _changes(spark, [("c0", "assigned", 0, 0.5), ("c1", "assigned", 0, 1.9), ("c1", "assigned", 0, 2.5)])
    got = consumers.read_anomalies(_consume(spark, log + reads), changes)
    want = spark.createDataFrame([(RUN, "g", 4, 1, 1, 2)], "run_id string, group string, read long, skipped long, "
                                                          "out_of_order long, group_duplicates long")
    assertDataFrameEqual(got, want)


def test_the_verdict_says_how_far_behind_the_consumers_were_and_what_they_read_wrong():
    figures = {"lag_max": 1500, "lag_max_s": 3.25, "rebalances": 2, "rebalance_max_s": 4.5, "partitions_moved": 3,
               "skipped": 0, "out_of_order": 0, "group_duplicates": 12}
    row = RunRow(run_id="r", scenario="s", **figures)
    assert consumers_said(row) == ("consumers lagged up to 1,500 records (3.2 s), 2 rebalances under load (slowest "
                                   "4.5 s, 3 partitions moved); 12 read twice", False)
    said, odd = consumers_said(RunRow(run_id="r", scenario="s", **figures | {"skipped": 4}))
    assert odd and "4 SKIPPED" in said
