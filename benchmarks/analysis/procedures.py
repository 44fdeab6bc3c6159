"""What each step of an operational procedure (benchmarks/spec/procedures.py) cost the traffic.

A step is one play of the procedure's playbook, from the time it began to the time the next
one began (the last: to the procedure's end). Per step: its duration, the producers' sends
intended in it (sent, failed, indeterminate: the errors they saw), the p99 latency of those
acknowledged against the steady state before the procedure, the longest time a partition went
without an acknowledgement in it, and the leader changes the timeline saw in it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.analysis.exprs import sum_if
from benchmarks.record import run_events

STEP_COLUMNS = ["run_id", "procedure_id", "procedure", "step", "play", "node", "start_ns", "end_ns", "duration_s", "ok",
                "sent", "failed", "indeterminate", "latency_p99_ms", "steady_p99_ms", "unavailable_s",
                "unavailable_partitions", "leader_changes"]


def procedure_steps(events: DataFrame) -> DataFrame:
    """Per (run_id, procedure_id, step): the procedure's name, the play, its node (a play that
    began more than once, a batch of `serial: 1` each: the host of each; else null; a play is known
    by its id, so two plays of one name are not batches), when it began and ended, and whether the
    procedure as a whole succeeded (null: it had not ended when the run did)."""
    events = schemas.check(events, schemas.EVENTS, "events")
    started = (events.filter(F.col("event") == run_events.PROCEDURE_START)
               .select("run_id", "procedure_id", "procedure", F.col("t_ns").alias("_procedure_start_ns")))
    ended = (events.filter(F.col("event") == run_events.PROCEDURE_END)
             .select("run_id", "procedure_id", F.col("t_ns").alias("_procedure_end_ns"), "ok"))
    w = Window.partitionBy("run_id", "procedure_id").orderBy("start_ns")
    play = F.coalesce(F.when(F.col("play_id") != "", F.col("play_id")), F.col("play"))  # older runs: no play id
    batches = F.count("*").over(Window.partitionBy("run_id", "procedure_id", play))
    return (events.filter(F.col("event") == run_events.PROCEDURE_PLAY)
            .select("run_id", "procedure_id", "play", F.when(batches > 1, F.col("host")).alias("node"),
                    F.col("t_ns").alias("start_ns"))
            .join(started, on=["run_id", "procedure_id"], how="inner")
            .join(ended, on=["run_id", "procedure_id"], how="left")
            .withColumn("step", F.row_number().over(w))
            .withColumn("end_ns", F.coalesce(F.lead("start_ns").over(w), F.col("_procedure_end_ns")))
            .withColumn("duration_s", (F.col("end_ns") - F.col("start_ns")) / 1e9)
            .select("run_id", "procedure_id", "procedure", "step", "play", "node", "start_ns", "end_ns", "duration_s", "ok"))


def step_impact(steps: DataFrame, produce: DataFrame, unavailable: DataFrame, segments: DataFrame,
                bounds: DataFrame) -> DataFrame:
    """STEP_COLUMNS per step: sends intended in it by outcome, p99 latency (intended send to ack,
    ms) of those acknowledged; steady_p99_ms: the same over the measured phase before the
    procedure began; unavailable_s: the longest window without an ack that overlapped the step,
    clipped to it, over the partitions (unavailable_partitions: how many had one); leader_changes:
    elections that began in it (a partition led by another broker than the one that led it last;
    a leaderless time between the two counts once)."""
    produce = schemas.check(produce, schemas.PRODUCE, "produce ledger")
    keys = ["run_id", "procedure_id", "step"]
    window = steps.select(*keys, F.col("start_ns").alias("_s"), F.col("end_ns").alias("_e"))
    in_step = lambda c: (F.col(c) >= F.col("_s")) & (F.col(c) < F.col("_e"))  # noqa: E731
    latency = (F.col("ack_ns") - F.col("intended_ns")) / 1e6
    sends = (produce.select("run_id", "intended_ns", "ack_ns", "outcome")
             .join(F.broadcast(window), on="run_id", how="inner").filter(in_step("intended_ns"))
             .groupBy(*keys).agg(F.count("*").alias("sent"), sum_if(F.col("outcome") == "failed").alias("failed"),
                                 sum_if(F.col("outcome") == "indeterminate").alias("indeterminate"),
                                 F.percentile_approx(F.when(F.col("outcome") == "acked", latency), 0.99, 10_000)
                                 .alias("latency_p99_ms")))
    first = steps.groupBy("run_id", "procedure_id").agg(F.min("start_ns").alias("_first_ns"))
    measured = bounds.select("run_id", "measured_from_ns")
    steady = (produce.filter(F.col("outcome") == "acked").select("run_id", "intended_ns", "ack_ns")
              .join(F.broadcast(first), on="run_id", how="inner")
              .join(F.broadcast(measured), on="run_id", how="inner")
              .filter((F.col("intended_ns") >= F.col("measured_from_ns")) & (F.col("intended_ns") < F.col("_first_ns")))
              .groupBy("run_id", "procedure_id").agg(F.percentile_approx(latency, 0.99, 10_000).alias("steady_p99_ms")))
    clipped = (F.least(F.col("end_ns"), F.col("_e")) - F.greatest(F.col("start_ns"), F.col("_s"))) / 1e9
    gaps = (unavailable.select("run_id", "partition", "start_ns", "end_ns")
            .join(F.broadcast(window), on="run_id", how="inner")
            .filter((F.col("start_ns") < F.col("_e")) & (F.col("end_ns") > F.col("_s")))
            .groupBy(*keys).agg(F.max(clipped).alias("unavailable_s"),
                                F.countDistinct("partition").alias("unavailable_partitions")))
    previous = F.lag("leader").over(Window.partitionBy("run_id", "partition").orderBy("start_ns"))
    changes = (segments.filter(F.col("leader").isNotNull()).withColumn("_previous", previous)
               .filter(F.col("_previous").isNotNull() & (F.col("leader") != F.col("_previous")))
               .select("run_id", "start_ns").withColumnRenamed("start_ns", "_changed_ns")
               .join(F.broadcast(window), on="run_id", how="inner").filter(in_step("_changed_ns"))
               .groupBy(*keys).agg(F.count("*").alias("leader_changes")))
    return (steps.join(sends, on=keys, how="left").join(steady, on=["run_id", "procedure_id"], how="left")
            .join(gaps, on=keys, how="left").join(changes, on=keys, how="left")
            .fillna(0, subset=["sent", "failed", "indeterminate", "unavailable_partitions", "leader_changes"])
            .fillna(0.0, subset=["unavailable_s"])
            .select(*STEP_COLUMNS).orderBy("run_id", "procedure_id", "step"))
