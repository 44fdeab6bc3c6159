"""Consumer groups as first-class: lag over time, rebalances, and what a group read wrong.

Definitions (the report repeats them):
- **lag** of a group on a partition at the end of each second of the load: the acknowledged
  messages of the partition the group had not read yet (records), and the age of the oldest of
  them (seconds). A message counts from its ack until the group first read it.
- a **rebalance** of a group: partitions taken from members (revoked or lost) and given out
  again, clustered while any of them is without an owner: it lasts from the first partition
  taken to the last one given out again; **partitions moved** are those that went to another
  member. The group's first assignment is not a rebalance.
- **skipped**: messages the group never read although it read a later offset of the same
  partition (Jepsen's poll-skip); **out of order**: records a member read at a lower offset than
  one it had read before on the same partition within one assignment (nonmonotonic poll);
  **group duplicates**: extra copies the group read (a rebalance before a commit replays).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.analysis.exprs import UNBOUNDED, sum_if
from benchmarks.core.codes import FINAL_READ, FINAL_READ_COMMITTED, FINAL_READS

#: Per run, in summary.csv (null for a run without consumer groups).
CONSUMER_COLUMNS = ("lag_max", "lag_max_s", "rebalances", "rebalance_max_s", "partitions_moved", "skipped",
                    "out_of_order", "group_duplicates")
_ID = ["run_id", "producer", "seq"]


def _group_reads(consume: DataFrame) -> DataFrame:
    return consume.filter(~F.col("group").isin(*FINAL_READS))


def _readable(consume: DataFrame) -> DataFrame:
    """(run_id, producer, seq, partition, offset): the log as the run's groups can read it, from its
    final read: a transactional run's groups read committed (final-read-committed), others all."""
    finals = consume.filter(F.col("group").isin(*FINAL_READS))
    committed = (finals.filter(F.col("group") == FINAL_READ_COMMITTED).select("run_id").distinct()
                 .withColumn("_committed", F.lit(True)))
    return (finals.join(F.broadcast(committed), on="run_id", how="left")
            .filter(F.when(F.col("_committed"), F.col("group") == FINAL_READ_COMMITTED)
                    .otherwise(F.col("group") == FINAL_READ))
            .select(*_ID, "partition", "offset").distinct())


def consumer_lag(produce: DataFrame, consume: DataFrame, runs: DataFrame) -> DataFrame:
    """(run_id, group, partition, second, lag, lag_s): per second of the load (from its start)
    at whose end the group had acknowledged messages of the partition left to read; seconds
    without any are absent (lag 0). Only messages the log holds for the group count (not a lost
    one, not one of an aborted transaction); one never read counts until the load's end."""
    produce = schemas.check(produce, schemas.PRODUCE, "produce ledger")
    consume = schemas.check(consume, schemas.CONSUME, "consume ledger")
    reads = _group_reads(consume)
    first_read = reads.groupBy("run_id", "group", "producer", "seq").agg(F.min("consumed_ns").alias("read_ns"))
    groups = reads.select("run_id", "group").distinct()
    window = runs.select("run_id", "load_start_ns", "load_end_ns")
    acked = (produce.filter(F.col("outcome") == "acked").select(*_ID, "partition", "ack_ns")
             .join(_readable(consume).select(*_ID), on=_ID, how="left_semi")
             .join(F.broadcast(groups), on="run_id", how="inner")
             .join(first_read, on=[*_ID, "group"], how="left")
             .join(F.broadcast(window), on="run_id", how="inner"))
    second = lambda ns: F.floor((ns - F.col("load_start_ns")) / 1e9).cast("long")  # noqa: E731
    until = F.coalesce(second(F.col("read_ns")), second(F.col("load_end_ns")) + 1)
    # A message is waiting at the end of every second from its ack's to the one before its read.
    waiting = acked.filter(until > second(F.col("ack_ns"))).select(
        "run_id", "group", "partition", "ack_ns", "load_start_ns",
        F.explode(F.sequence(second(F.col("ack_ns")), until - 1)).alias("second"))
    return (waiting.groupBy("run_id", "group", "partition", "second")
            .agg(F.count("*").alias("lag"), F.min("ack_ns").alias("_oldest"), F.first("load_start_ns").alias("_t0"))
            .select("run_id", "group", "partition", "second", "lag",
                    ((F.col("_t0") + (F.col("second") + 1) * F.lit(1_000_000_000) - F.col("_oldest")) / 1e9)
                    .alias("lag_s")))


def rebalances(changes: DataFrame, runs: DataFrame) -> DataFrame:
    """(run_id, group, rebalance, start_ns, duration_s, partitions_paused, partitions_moved,
    during_load): one row per rebalance of each group, from its members' assignment changes
    (ledger/group); during_load: it began after the load's start (not while members joined)."""
    changes = schemas.check(changes, schemas.GROUP, "group ledger")
    per_partition = Window.partitionBy("run_id", "group", "partition").orderBy("t_ns", "event")
    given = (changes.withColumn("_prev_event", F.lag("event").over(per_partition))
             .withColumn("_prev_t", F.lag("t_ns").over(per_partition))
             .withColumn("_prev_owner", F.lag("consumer").over(per_partition))
             .filter((F.col("event") == "assigned") & F.col("_prev_event").isNotNull()))
    # A partition given out again after it was taken (or, its owner gone without a word, taken over).
    gaps = given.select("run_id", "group", "partition",
                        F.when(F.col("_prev_event") != "assigned", F.col("_prev_t")).otherwise(F.col("t_ns"))
                        .alias("from_ns"), F.col("t_ns").alias("to_ns"),
                        (F.col("_prev_owner") != F.col("consumer")).alias("moved"))
    in_group = Window.partitionBy("run_id", "group").orderBy("from_ns", "to_ns")
    clustered = (gaps.withColumn("_reach", F.max("to_ns").over(in_group.rowsBetween(UNBOUNDED, -1)))
                 .withColumn("_new", (F.col("_reach").isNull() | (F.col("from_ns") > F.col("_reach"))).cast("int"))
                 .withColumn("rebalance", F.sum("_new").over(in_group.rowsBetween(UNBOUNDED, 0))))
    return (clustered.groupBy("run_id", "group", "rebalance")
            .agg(F.min("from_ns").alias("start_ns"), ((F.max("to_ns") - F.min("from_ns")) / 1e9).alias("duration_s"),
                 F.count("*").alias("partitions_paused"), sum_if(F.col("moved")).alias("partitions_moved"))
            .join(F.broadcast(runs.select("run_id", "load_start_ns")), on="run_id", how="inner")
            .withColumn("during_load", F.col("start_ns") >= F.col("load_start_ns")).drop("load_start_ns"))


def read_anomalies(consume: DataFrame, changes: DataFrame) -> DataFrame:
    """(run_id, group, read, skipped, out_of_order, group_duplicates) per consumer group: what it
    read (distinct messages), what it skipped and read out of order, and its extra copies. A
    member reading a partition again from its committed offset after it was assigned it anew
    (a replay: duplicates) is not out of order: each assignment (ledger/group) starts afresh."""
    consume = schemas.check(consume, schemas.CONSUME, "consume ledger")
    changes = schemas.check(changes, schemas.GROUP, "group ledger")
    reads = _group_reads(consume)
    log = _readable(consume)
    reach = reads.groupBy("run_id", "group", "partition").agg(F.max("offset").alias("_reach"))
    read_ids = reads.select("run_id", "group", "producer", "seq").distinct()
    skipped = (log.join(F.broadcast(reach), on=["run_id", "partition"], how="inner")
               .filter(F.col("offset") < F.col("_reach"))
               .join(read_ids, on=[*_ID, "group"], how="left_anti")
               .groupBy("run_id", "group").agg(F.count("*").alias("skipped")))
    # Assignments as markers in each member's stream of reads: the running count numbers them.
    keys = ["run_id", "group", "consumer", "partition"]
    markers = (changes.filter(F.col("event") == "assigned")
               .select(*keys, F.col("t_ns").alias("consumed_ns"), F.lit(None).cast("long").alias("offset"),
                       F.lit(1).alias("_marker")))
    stream = reads.select(*keys, "consumed_ns", "offset", F.lit(0).alias("_marker")).unionByName(markers)
    by_time = Window.partitionBy(*keys).orderBy("consumed_ns", F.col("_marker").desc(), "offset")
    numbered = (stream.withColumn("_assignment", F.sum("_marker").over(by_time.rowsBetween(UNBOUNDED, 0)))
                .filter(F.col("_marker") == 0))
    member = Window.partitionBy(*keys, "_assignment").orderBy("consumed_ns", "offset")
    backwards = (numbered.withColumn("_before", F.max("offset").over(member.rowsBetween(UNBOUNDED, -1)))
                 .groupBy("run_id", "group").agg(sum_if(F.col("offset") < F.col("_before")).alias("out_of_order"),
                                                 F.count("*").alias("_copies")))
    distinct = read_ids.groupBy("run_id", "group").agg(F.count("*").alias("read"))
    return (distinct.join(backwards, on=["run_id", "group"], how="left").join(skipped, on=["run_id", "group"], how="left")
            .fillna(0, subset=["skipped", "out_of_order"])
            .select("run_id", "group", "read", "skipped", "out_of_order",
                    (F.col("_copies") - F.col("read")).alias("group_duplicates")))


def consumer_summary(lag: DataFrame, moves: DataFrame, anomalies: DataFrame) -> DataFrame:
    """Per run with consumer groups: CONSUMER_COLUMNS (the worst group and partition for the lag;
    the rebalances that began under load)."""
    worst = lag.groupBy("run_id").agg(F.max("lag").alias("lag_max"), F.max("lag_s").alias("lag_max_s"))
    moved = moves.filter("during_load").groupBy("run_id").agg(
        F.count("*").alias("rebalances"), F.max("duration_s").alias("rebalance_max_s"),
        F.sum("partitions_moved").alias("partitions_moved"))
    counted = ("skipped", "out_of_order", "group_duplicates")
    wrong = anomalies.groupBy("run_id").agg(*[F.sum(c).alias(c) for c in counted])
    return (wrong.join(worst, on="run_id", how="left").join(moved, on="run_id", how="left")
            .fillna(0, subset=["lag_max", "rebalances", "partitions_moved"]).fillna(0.0, subset=["lag_max_s"])
            .select("run_id", *CONSUMER_COLUMNS))
