"""From the cluster timeline: leadership, ISR health, windows without acks, what each fault did."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.analysis.contract import EXPECTED_ACKS, GAP_THRESHOLD_S
from benchmarks.analysis.exprs import UNBOUNDED
from benchmarks.record import run_events


def partition_states(timeline: DataFrame, runs: DataFrame) -> DataFrame:
    """Timeline samples with their successor's time and the partition's health:
    run_id, partition, t_ns, next_t_ns, leader, isr, elr (KRaft's Eligible Leader Replicas; null
    without), isr_size, replicas_size, leaderless, under_min_isr, high_watermark, and hw_stalled:
    under min ISR and the high watermark the same at the next sample (both known)."""
    timeline = schemas.check(timeline, schemas.TIMELINE, "timeline")
    w = Window.partitionBy("run_id", "partition").orderBy("t_ns")
    size = lambda c: F.when((F.col(c).isNull()) | (F.col(c) == ""), 0).otherwise(F.size(F.split(F.col(c), ",")))  # noqa: E731
    under = size("isr") < F.col("min_insync_replicas")
    next_hw = F.lead("high_watermark").over(w)
    return (timeline.filter(F.col("partition").isNotNull())
            .join(F.broadcast(runs.select("run_id", "min_insync_replicas")), on="run_id", how="inner")
            .select("run_id", "partition", "t_ns", F.lead("t_ns").over(w).alias("next_t_ns"), "leader", "isr", "elr",
                    size("isr").alias("isr_size"), size("replicas").alias("replicas_size"),
                    F.col("leader").isNull().alias("leaderless"), under.alias("under_min_isr"), "high_watermark",
                    F.coalesce(under & (next_hw == F.col("high_watermark")), F.lit(False)).alias("hw_stalled")))


def leadership_segments(states: DataFrame) -> DataFrame:
    """Consecutive samples with the same leader and ISR merged: run_id, partition, start_ns,
    end_ns, leader, isr."""
    w = Window.partitionBy("run_id", "partition").orderBy("t_ns")
    changed = ~(F.col("leader").eqNullSafe(F.lag("leader").over(w)) & F.col("isr").eqNullSafe(F.lag("isr").over(w)))
    segment = F.sum(F.when(changed, 1).otherwise(0)).over(w.rowsBetween(UNBOUNDED, Window.currentRow))
    return (states.withColumn("_changed", changed).withColumn("_segment", segment)
            .groupBy("run_id", "partition", "_segment")
            .agg(F.min("t_ns").alias("start_ns"), F.max(F.coalesce("next_t_ns", "t_ns")).alias("end_ns"),
                 F.max("leader").alias("leader"), F.max("isr").alias("isr"))
            .drop("_segment"))


def health_time(states: DataFrame) -> DataFrame:
    """Per (run_id, partition): seconds the timeline showed it without a leader, with fewer
    in-sync replicas than min.insync.replicas, and so with its high watermark standing still."""
    span = (F.coalesce("next_t_ns", "t_ns") - F.col("t_ns")) / 1e9
    return states.groupBy("run_id", "partition").agg(
        F.sum(F.when(F.col("leaderless"), span).otherwise(0.0)).alias("leaderless_s"),
        F.sum(F.when(F.col("under_min_isr"), span).otherwise(0.0)).alias("under_min_isr_s"),
        F.sum(F.when(F.col("hw_stalled"), span).otherwise(0.0)).alias("hw_stall_s"))


def acked_invisible(produce: DataFrame, states: DataFrame) -> DataFrame:
    """Per (run_id, partition): messages acknowledged while the partition's high watermark stood
    still under min ISR, at an offset at or above it: acknowledged, and not readable by any
    consumer until the ISR grew back (with Eligible Leader Replicas, KIP-966, acks=0/1 writes)."""
    stalls = states.filter(F.col("hw_stalled")).select("run_id", "partition", "t_ns", "next_t_ns", "high_watermark")
    acked = produce.filter(F.col("outcome") == "acked").select("run_id", "partition", "ack_ns", "offset")
    return (acked.join(F.broadcast(stalls), on=["run_id", "partition"], how="inner")
            .filter((F.col("ack_ns") >= F.col("t_ns")) & (F.col("ack_ns") < F.col("next_t_ns"))
                    & (F.col("offset") >= F.col("high_watermark")))
            .groupBy("run_id", "partition").agg(F.count("*").alias("acked_invisible")))


def unavailability(produce: DataFrame, runs: DataFrame, states: DataFrame, bounds: DataFrame,
                   gap_threshold_s: float = GAP_THRESHOLD_S, expected_acks: float = EXPECTED_ACKS) -> DataFrame:
    """Windows without a successful ack to a partition: run_id, partition, start_ns, end_ns,
    duration_s, recovered (an ack ended it, not the end of the load), during_fault, and what
    the timeline showed meanwhile (leaderless, under_min_isr).

    Acks are first reduced to the first and last ack per 100 ms bucket: a gap of at least the
    threshold (>= 100 ms) always falls between buckets, so the windows are exact and the window
    function only sorts buckets, not messages. A slow partition's threshold is stretched to the
    time `expected_acks` acks take at its average rate, so sparse traffic is not an outage."""
    runs = schemas.check(runs, schemas.RUNS, "runs")
    acked = produce.filter(F.col("outcome") == "acked")
    buckets = (acked.groupBy("run_id", "partition", F.floor(F.col("ack_ns") / 100_000_000).alias("_bucket"))
               .agg(F.min("ack_ns").alias("first_ns"), F.max("ack_ns").alias("last_ns"))
               .drop("_bucket").withColumn("sentinel", F.lit(False)))
    parts = runs.select("run_id", "load_start_ns", "load_end_ns",
                        F.explode(F.sequence(F.lit(0), F.col("partitions").cast("int") - 1)).alias("partition"))
    per_partition = acked.groupBy("run_id", "partition").agg(F.count("*").alias("_acks"))
    last_ack = buckets.groupBy("run_id", "partition").agg(F.max("last_ns").alias("_last"))
    edges = (parts.join(last_ack, on=["run_id", "partition"], how="left")
             .select("run_id", "partition", F.explode(F.array(
                 F.col("load_start_ns"), F.greatest(F.col("load_end_ns"), F.coalesce(F.col("_last"), F.lit(0)))))
                 .alias("first_ns"))
             .withColumn("last_ns", F.col("first_ns")).withColumn("sentinel", F.lit(True)))
    w = Window.partitionBy("run_id", "partition").orderBy("first_ns", "last_ns")
    gaps = (buckets.unionByName(edges)
            .withColumn("start_ns", F.lag("last_ns").over(w))
            .withColumn("end_ns", F.col("first_ns"))
            .withColumn("recovered", ~F.col("sentinel") | (F.col("end_ns") < F.max("last_ns").over(
                Window.partitionBy("run_id", "partition").rowsBetween(UNBOUNDED, Window.unboundedFollowing))))
            .join(F.broadcast(per_partition), on=["run_id", "partition"], how="left")
            .join(F.broadcast(runs.select("run_id", "load_start_ns", "load_end_ns")), on="run_id", how="left")
            .withColumn("_threshold_ns", F.greatest(
                F.lit(gap_threshold_s * 1e9),
                expected_acks * (F.col("load_end_ns") - F.col("load_start_ns")) / F.coalesce(F.col("_acks"), F.lit(1))))
            .filter(F.col("start_ns").isNotNull() & ((F.col("end_ns") - F.col("start_ns")) >= F.col("_threshold_ns")))
            .select("run_id", "partition", "start_ns", "end_ns",
                    ((F.col("end_ns") - F.col("start_ns")) / 1e9).alias("duration_s"), "recovered"))
    seen = (gaps.alias("g").join(states.alias("s"), on=["run_id", "partition"], how="left")
            .filter(F.col("s.t_ns").isNull() | F.col("s.t_ns").between(F.col("g.start_ns"), F.col("g.end_ns")))
            .groupBy("run_id", "partition", "g.start_ns")
            .agg(F.coalesce(F.max(F.col("s.leaderless").cast("int")), F.lit(0)).cast("boolean").alias("leaderless"),
                 F.coalesce(F.max(F.col("s.under_min_isr").cast("int")), F.lit(0)).cast("boolean").alias("under_min_isr")))
    fault = bounds.select("run_id", "fault_start_ns", "fault_end_ns")
    return (gaps.join(seen, on=["run_id", "partition", "start_ns"], how="left")
            .join(F.broadcast(fault), on="run_id", how="left")
            .withColumn("during_fault", F.coalesce((F.col("start_ns") < F.col("fault_end_ns"))
                                                   & (F.col("end_ns") > F.col("fault_start_ns")), F.lit(False)))
            .fillna(False, subset=["leaderless", "under_min_isr"])
            .drop("fault_start_ns", "fault_end_ns"))


def fault_impact(events: DataFrame, states: DataFrame, produce: DataFrame, runs: DataFrame) -> DataFrame:
    """Per (fault, partition): the leader before the fault and at its end, seconds from the
    injection to a new leader (when the target led it, and only while the load ran: a leader
    elected after the load is a restart, not a failover the clients saw), to the ISR shrinking
    and re-expanding, and to the first successful ack of a message sent after the injection; and
    where the new leader came from (`new_leader_from`): the ISR, the Eligible Leader Replicas
    (KRaft, KIP-966) or neither (an unclean election), as the last sample before it showed them;
    and `late_s`, how long after it was due the fault acted (its playbook's start, a wait for a
    recovered cluster, the read that resolved its target; null for a run that did not record when
    it was due)."""
    events = schemas.check(events, schemas.EVENTS, "events")
    runs = schemas.check(runs, schemas.RUNS, "runs")
    intent = events.filter(F.col("event") == run_events.FAULT_INTENT).select("run_id", "fault_id", "kind", "broker", "reason",
                                                                           "scheduled_ns")
    injected = (events.filter(F.col("event") == run_events.FAULT_INJECTED)
                .select("run_id", "fault_id", F.col("at_ns").alias("injected_ns")))
    healed = (events.filter(F.col("event") == run_events.FAULT_HEALED)
              .select("run_id", "fault_id", F.col("at_ns").alias("healed_ns")))
    faults = (intent.join(injected, on=["run_id", "fault_id"], how="inner")
              .join(healed, on=["run_id", "fault_id"], how="left"))
    keys = ["run_id", "fault_id", "partition"]
    samples = (states.join(F.broadcast(faults), on="run_id", how="inner")
               .join(F.broadcast(runs.select("run_id", "load_end_ns")), on="run_id", how="inner"))
    seconds = lambda c: (F.col(c) - F.col("injected_ns")) / 1e9  # noqa: E731
    before = (samples.filter(F.col("t_ns") <= F.col("injected_ns")).groupBy(*keys)
              .agg(F.max_by("leader", "t_ns").alias("leader_before")))
    target = F.col("broker")
    isr_lost_target = F.when(target.isNull(), F.col("isr_size") < F.col("replicas_size")).otherwise(
        ~F.array_contains(F.split(F.col("isr"), ","), target.cast("string")))
    until = F.coalesce(F.col("healed_ns"), F.lit(2**62))
    elected = (F.col("leader").isNotNull() & (F.col("leader") != F.coalesce(target, F.lit(-1)))
               & (F.col("t_ns") <= F.col("load_end_ns")))
    after = (samples.filter(F.col("t_ns") > F.col("injected_ns")).groupBy(*keys)
             .agg(F.min(F.when(elected, F.col("t_ns"))).alias("_new_leader_ns"),
                  F.min_by(F.col("leader"), F.when(elected, F.col("t_ns"))).alias("_new_leader"),
                  F.max_by(F.col("leader"), F.when(F.col("t_ns") <= until, F.col("t_ns"))).alias("leader_after"),
                  F.min(F.when(isr_lost_target, F.col("t_ns"))).alias("_shrink_ns")))
    expand = (samples.join(after.select(*keys, "_shrink_ns"), on=keys, how="inner")
              .filter((F.col("t_ns") > F.col("_shrink_ns")) & (F.col("isr_size") >= F.col("replicas_size")))
              .groupBy(*keys).agg(F.min("t_ns").alias("_expand_ns")))
    members = lambda c: F.split(F.coalesce(F.col(c), F.lit("")), ",")  # noqa: E731
    origin = (samples.join(after.select(*keys, "_new_leader_ns", "_new_leader"), on=keys, how="inner")
              .filter(F.col("t_ns") < F.col("_new_leader_ns")).groupBy(*keys, "_new_leader")
              .agg(F.max_by("isr", "t_ns").alias("_isr"), F.max_by("elr", "t_ns").alias("_elr"))
              .select(*keys, F.when(F.array_contains(members("_isr"), F.col("_new_leader").cast("string")), "isr")
                      .when(F.array_contains(members("_elr"), F.col("_new_leader").cast("string")), "elr")
                      .otherwise("unclean").alias("_from")))
    first_ack = (produce.filter(F.col("outcome") == "acked").select("run_id", "partition", "sent_ns", "ack_ns")
                 .join(F.broadcast(faults.select("run_id", "fault_id", "injected_ns")), on="run_id", how="inner")
                 .filter(F.col("sent_ns") > F.col("injected_ns"))
                 .groupBy(*keys).agg(F.min("ack_ns").alias("_first_ack_ns")))
    return (faults.join(before, on=["run_id", "fault_id"], how="inner")
            .join(after, on=keys, how="left").join(expand, on=keys, how="left").join(first_ack, on=keys, how="left")
            .join(origin, on=keys, how="left")
            .select("run_id", "fault_id", "kind", "broker", "reason", "injected_ns",
                    ((F.col("injected_ns") - F.col("scheduled_ns")) / 1e9).alias("late_s"), "healed_ns", "partition",
                    "leader_before", "leader_after",
                    F.when(F.col("leader_before") == target, seconds("_new_leader_ns")).alias("new_leader_s"),
                    F.when(F.col("leader_before") == target, F.col("_from")).alias("new_leader_from"),
                    seconds("_shrink_ns").alias("isr_shrink_s"), seconds("_expand_ns").alias("isr_expand_s"),
                    seconds("_first_ack_ns").alias("first_ack_s")))
