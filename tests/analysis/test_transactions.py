"""The exactly-once checker on a hand-built history: one transaction of each kind that matters
(committed and whole, lost, torn, aborted and read, aborted and clean, unknown either way) and
a partition whose last stable offset hangs below its high watermark."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from benchmarks.analysis import schemas, transactions
from benchmarks.analysis.rows import RunRow
from benchmarks.core.codes import FINAL_READ, FINAL_READ_COMMITTED
from benchmarks.report.verdict import transactions_said

pytestmark = pytest.mark.spark

RUN = "r1"
# (producer, txn, first_seq, messages, intent, fate): 3 messages each, producer 0 then producer 1.
TXNS = [
    (0, 0, 0, 3, "commit", "committed"),   # whole: every message read committed
    (0, 1, 3, 3, "commit", "committed"),   # LOST: one message missing from the read_committed read
    (0, 2, 6, 3, "abort", "aborted"),      # clean abort: nothing read
    (0, 3, 9, 3, "abort", "aborted"),      # ABORTED READ: a consumer group read one of its messages
    (1, 0, 0, 3, "commit", "unknown"),     # unknown, all read: it committed, fine
    (1, 1, 3, 3, "commit", "unknown"),     # unknown, none read: it aborted, fine
    (1, 2, 6, 3, "commit", "unknown"),     # TORN: read in part
]
# What the read_committed final read found, and what a consumer group read.
COMMITTED_READ = [(0, s) for s in (0, 1, 2, 3, 5)] + [(1, s) for s in (0, 1, 2, 6)]
GROUP_READ = [(0, 0), (0, 10)]
# Sends the client reported failed: two of the clean abort's (its purge), one of the torn transaction's.
FAILED = [(0, 6), (0, 7), (1, 7)]


def _txns(spark):
    rows = [(RUN, p, t, first, n, intent, fate, 0, 1, None) for p, t, first, n, intent, fate in TXNS]
    return spark.createDataFrame(rows, schemas.TXN)


def _produce(spark):
    rows = [(RUN, p, first + i, -1, 0, 0, 1, "failed" if (p, first + i) in FAILED else "acked", 0, None, None, None)
            for p, _, first, n, _, _ in TXNS for i in range(n)]
    return spark.createDataFrame(rows, schemas.PRODUCE)


def _outcomes(spark):
    return transactions.transaction_outcomes(_txns(spark), _produce(spark), _consume(spark))


def _consume(spark):
    def read(group, pairs):
        return [(RUN, group, group, p, s, 0, 100 * p + s, 0, 1) for p, s in pairs]
    return spark.createDataFrame(read(FINAL_READ_COMMITTED, COMMITTED_READ) + read("g", GROUP_READ)
                                 + read(FINAL_READ, [(0, s) for s in range(12)]), schemas.CONSUME)


def _timeline(spark, samples):
    """Samples of one partition: (t in s, high watermark, last stable offset)."""
    names = schemas.TIMELINE.names
    rows = []
    for t, hw, lso in samples:
        row = dict.fromkeys(names)
        row |= {"run_id": RUN, "t_ns": int(t * 1e9), "partition": 0, "high_watermark": hw, "last_stable_offset": lso}
        rows.append(tuple(row[n] for n in names))
    return spark.createDataFrame(rows, schemas.TIMELINE)


def test_each_kind_of_transaction_is_told_apart(spark):
    got = _outcomes(spark).drop("intent")
    want = spark.createDataFrame([
        (RUN, 0, 0, "committed", 3, 0, 3, 1, False, False, False),
        (RUN, 0, 1, "committed", 3, 0, 2, 0, True, False, True),
        (RUN, 0, 2, "aborted", 3, 2, 0, 0, False, False, False),
        (RUN, 0, 3, "aborted", 3, 0, 0, 1, False, True, False),
        (RUN, 1, 0, "unknown", 3, 0, 3, 0, False, False, False),
        (RUN, 1, 1, "unknown", 3, 0, 0, 0, False, False, False),
        (RUN, 1, 2, "unknown", 3, 1, 1, 0, False, False, True),
    ], "run_id string, producer int, txn long, fate string, messages long, failed_sends long, committed_read long, "
       "group_read long, lost_commit boolean, aborted_read boolean, torn boolean")
    assertDataFrameEqual(got, want)


def test_a_hanging_transaction_is_measured_by_how_long_the_last_stable_offset_stood_still(spark):
    samples = [(0.0, 10, 10), (0.5, 14, 12), (1.0, 20, 18),   # transactions come and go: never still
               (1.5, 26, 22), (2.0, 30, 22), (3.0, None, None), (4.5, 40, 22), (5.0, 42, 42),  # hangs 3 s at 22
               (5.5, 44, 44)]
    got = transactions.lso_stalls(_timeline(spark, samples))
    assertDataFrameEqual(got, spark.createDataFrame([(RUN, 3.0)], "run_id string, lso_stall_s double"))


def test_the_run_counts_and_the_verdict_name_every_anomaly(spark):
    outcomes = _outcomes(spark)
    stalls = transactions.lso_stalls(_timeline(spark, [(0.0, 5, 3), (2.0, 9, 3), (2.5, 9, 9)]))
    got = transactions.transaction_counts(outcomes, stalls)
    want = spark.createDataFrame([(RUN, 2, 2, 3, 1, 1, 2, 2.0, 3)],
                                 "run_id string, txn_committed long, txn_aborted long, txn_unknown long, "
                                 "lost_commits long, aborted_reads long, torn long, lso_stall_s double, "
                                 "txn_failed_sends long")
    assertDataFrameEqual(got, want)
    row = RunRow.of(got.first().asDict() | {"scenario": "s", "txn_client": "librdkafka 2.12.1"})
    said, broken = transactions_said(row)
    assert broken
    assert "1 committed transaction LOST" in said and "1 aborted transaction READ" in said
    assert "2 transactions TORN" in said and "held back up to 2.0 s" in said and "librdkafka 2.12.1" in said
