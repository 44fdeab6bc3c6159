"""Exactly-once: what became of every transaction of a transactional run, judged against what
read_committed readers got (the runner's read_committed final read, and the consumer groups,
which read committed in such a run).

Definitions (the report repeats them):
- a **lost commit** is a transaction its producer was told committed, of which the
  read_committed final read lacks at least one message;
- an **aborted read** is a transaction its producer was told aborted, of which any
  read_committed reader (the final read or a consumer group) saw a message;
- a **torn** transaction is one the read_committed final read saw some but not all of,
  whatever its producer was told;
- an **unknown** transaction is one whose end the producer could not confirm (a commit that
  timed out, a fatal error): either way is correct for it, as long as it is not torn;
- **lso_stall_s** is the longest a partition's last stable offset stood still below its high
  watermark across the timeline's samples: how long a transaction left open (a hanging one)
  held read_committed consumers back. Transactions that end between two samples never show.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.analysis.exprs import UNBOUNDED, sum_if
from benchmarks.core.codes import FINAL_READ_COMMITTED, FINAL_READS

#: Per run, in summary.csv (null for a run without transactions). txn_failed_sends: sends refused
#: inside transactions that did not commit (an abort purges its messages not yet written: expected).
TXN_COLUMNS = ("txn_committed", "txn_aborted", "txn_unknown", "lost_commits", "aborted_reads", "torn", "lso_stall_s",
               "txn_failed_sends")
_ID = ["run_id", "producer", "seq"]


def transaction_outcomes(txns: DataFrame, produce: DataFrame, consume: DataFrame) -> DataFrame:
    """One row per transaction: run_id, producer, txn, intent, fate, messages, failed_sends (its
    sends the client reported failed), committed_read (its messages the read_committed final read
    found), group_read (its messages any consumer group read), and the flags lost_commit,
    aborted_read and torn."""
    txns = schemas.check(txns, schemas.TXN, "transaction ledger")
    produce = schemas.check(produce, schemas.PRODUCE, "produce ledger")
    consume = schemas.check(consume, schemas.CONSUME, "consume ledger")
    members = txns.select("run_id", "producer", "txn", "intent", "fate", "messages",
                          F.explode(F.sequence("first_seq", F.col("first_seq") + F.col("messages") - 1)).alias("seq"))
    committed = (consume.filter(F.col("group") == FINAL_READ_COMMITTED).select(*_ID).distinct()
                 .withColumn("_committed", F.lit(1)))
    groups = consume.filter(~F.col("group").isin(*FINAL_READS)).select(*_ID).distinct().withColumn("_group", F.lit(1))
    failed = produce.filter(F.col("outcome") == "failed").select(*_ID).withColumn("_failed", F.lit(1))
    per_txn = (members.join(failed, on=_ID, how="left").join(committed, on=_ID, how="left")
               .join(groups, on=_ID, how="left")
               .groupBy("run_id", "producer", "txn", "intent", "fate", "messages")
               .agg(F.count("_failed").alias("failed_sends"), F.count("_committed").alias("committed_read"),
                    F.count("_group").alias("group_read")))
    seen, n = F.col("committed_read"), F.col("messages")
    return per_txn.select(
        "run_id", "producer", "txn", "intent", "fate", "messages", "failed_sends", "committed_read", "group_read",
        ((F.col("fate") == "committed") & (seen < n)).alias("lost_commit"),
        ((F.col("fate") == "aborted") & ((seen > 0) | (F.col("group_read") > 0))).alias("aborted_read"),
        ((seen > 0) & (seen < n)).alias("torn"))


def lso_stalls(timeline: DataFrame) -> DataFrame:
    """(run_id, lso_stall_s): per run, the longest a partition's last stable offset stood still
    below its high watermark, from the first to the last sample that saw it so (samples in which
    the leader did not answer are skipped, not taken as the end of a stall). Runs whose timeline
    holds no last stable offset (not transactional) have no row."""
    timeline = schemas.check(timeline, schemas.TIMELINE, "timeline")
    answered = timeline.filter(F.col("last_stable_offset").isNotNull() & F.col("high_watermark").isNotNull())
    w = Window.partitionBy("run_id", "partition").orderBy("t_ns")
    held = F.col("last_stable_offset") < F.col("high_watermark")
    before = F.lag("last_stable_offset").over(w)
    fresh = (~held | F.lag(held).over(w).isNull() | ~F.lag(held).over(w) | (before != F.col("last_stable_offset")))
    segments = (answered.withColumn("_held", held).withColumn("_fresh", fresh.cast("int"))
                .withColumn("_segment", F.sum("_fresh").over(w.rowsBetween(UNBOUNDED, 0))))
    stalls = (segments.filter("_held").groupBy("run_id", "partition", "_segment")
              .agg(((F.max("t_ns") - F.min("t_ns")) / 1e9).alias("_s")))
    runs = answered.select("run_id").distinct()
    return (runs.join(stalls.groupBy("run_id").agg(F.max("_s").alias("lso_stall_s")), on="run_id", how="left")
            .fillna(0.0, subset=["lso_stall_s"]))


def transaction_counts(outcomes: DataFrame, stalls: DataFrame) -> DataFrame:
    """Per transactional run: TXN_COLUMNS. From `transaction_outcomes` and `lso_stalls`."""
    fate = F.col("fate")
    counted = outcomes.groupBy("run_id").agg(
        sum_if(fate == "committed").alias("txn_committed"), sum_if(fate == "aborted").alias("txn_aborted"),
        sum_if(fate == "unknown").alias("txn_unknown"), sum_if(F.col("lost_commit")).alias("lost_commits"),
        sum_if(F.col("aborted_read")).alias("aborted_reads"), sum_if(F.col("torn")).alias("torn"),
        F.sum(F.when(fate != "committed", F.col("failed_sends")).otherwise(0)).cast("long").alias("txn_failed_sends"))
    return counted.join(stalls, on="run_id", how="left").select("run_id", *TXN_COLUMNS)
