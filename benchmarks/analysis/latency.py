"""Throughput and latency per phase and per second, and the errors the producers were told."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.analysis.exprs import sum_if
from benchmarks.analysis.percentiles import percentiles
from benchmarks.analysis.phases import phase_windows, with_phases
from benchmarks.core.codes import FINAL_READS


def produce_phases(produce: DataFrame, bounds: DataFrame, runs: DataFrame) -> DataFrame:
    """Per (run_id, phase): sent / failed / indeterminate by intended send time; acked
    messages/s and MB/s by ack time; produce latency percentiles from the intended and from
    the actual send time (acked messages intended in the phase)."""
    produce = schemas.check(produce, schemas.PRODUCE, "produce ledger")
    acked = F.col("outcome") == "acked"
    windows = phase_windows(bounds).withColumn("seconds", (F.col("end_ns") - F.col("start_ns")) / 1e9)
    intended = with_phases(produce, bounds, "intended_ns")
    by_intent = (intended.groupBy("run_id", "phase")
                 .agg(F.count("*").alias("sent"), sum_if(F.col("outcome") == "failed").alias("failed"),
                      sum_if(F.col("outcome") == "indeterminate").alias("indeterminate")))
    latencies = intended.filter(acked).select(
        "run_id", "phase", ((F.col("ack_ns") - F.col("intended_ns")) / 1e6).alias("lat_intended"),
        ((F.col("ack_ns") - F.col("sent_ns")) / 1e6).alias("lat_sent"))
    keys = ["run_id", "phase"]
    by_intent = (by_intent.join(percentiles(latencies, keys, "lat_intended", "latency"), on=keys, how="left")
                 .join(percentiles(latencies, keys, "lat_sent", "send_latency"), on=keys, how="left"))
    by_ack = (with_phases(produce.filter(acked).select("run_id", "ack_ns"), bounds, "ack_ns").groupBy("run_id", "phase")
              .agg(F.count("*").alias("acked")))
    sizes = runs.select("run_id", "message_size")
    return (windows.join(by_intent, on=["run_id", "phase"], how="left")
            .join(by_ack, on=["run_id", "phase"], how="left").join(sizes, on="run_id", how="left")
            .fillna(0, subset=["sent", "failed", "indeterminate", "acked"])
            .withColumn("throughput_msgs_s", F.col("acked") / F.col("seconds"))
            .withColumn("throughput_mb_s", F.col("throughput_msgs_s") * F.col("message_size") / 1e6)
            .drop("message_size"))


def end_to_end(consume: DataFrame, bounds: DataFrame) -> DataFrame:
    """Per (run_id, phase): end-to-end latency percentiles (consumed - sent) over the consumer
    groups' records, by send time; the final read is not a consumer and is left out."""
    consume = schemas.check(consume, schemas.CONSUME, "consume ledger")
    records = (consume.filter(~F.col("group").isin(*FINAL_READS))
               .withColumn("e2e", (F.col("consumed_ns") - F.col("sent_ns")) / 1e6))
    phased = with_phases(records, bounds, "sent_ns")
    keys = ["run_id", "phase"]
    return (phased.groupBy(*keys).agg(F.count("*").alias("consumed"))
            .join(percentiles(phased, keys, "e2e", "e2e"), on=keys, how="left"))


def per_second(produce: DataFrame, runs: DataFrame) -> DataFrame:
    """Per (run_id, second since the load started): messages sent, failed and indeterminate
    (by intended send time), acked (by ack time) and the acked messages' latency from the
    intended send (p50, p99)."""
    produce = schemas.check(produce, schemas.PRODUCE, "produce ledger")
    start = runs.select("run_id", "load_start_ns")
    timed = produce.join(F.broadcast(start), on="run_id", how="inner")
    sends = (timed.withColumn("second", F.floor((F.col("intended_ns") - F.col("load_start_ns")) / 1e9))
             .groupBy("run_id", "second")
             .agg(F.count("*").alias("sent"), sum_if(F.col("outcome") == "failed").alias("failed"),
                  sum_if(F.col("outcome") == "indeterminate").alias("indeterminate")))
    acked = (timed.filter(F.col("outcome") == "acked")
             .withColumn("second", F.floor((F.col("ack_ns") - F.col("load_start_ns")) / 1e9))
             .withColumn("lat", (F.col("ack_ns") - F.col("intended_ns")) / 1e6))
    keys = ["run_id", "second"]
    acks = (acked.groupBy(*keys).agg(F.count("*").alias("acked"))
            .join(percentiles(acked, keys, "lat", "latency").select(*keys, "latency_p50_ms", "latency_p99_ms"),
                  on=keys, how="left"))
    return (sends.join(acks, on=["run_id", "second"], how="full")
            .fillna(0, subset=["sent", "failed", "indeterminate", "acked"]).orderBy("run_id", "second"))


def errors(produce: DataFrame) -> DataFrame:
    """(run_id, outcome, error, cause, messages): what the producers were told, by error name,
    and the broker error behind it where the client retried one until it gave up (cause)."""
    return (produce.filter(F.col("outcome") != "acked").groupBy("run_id", "outcome", "error", "cause")
            .agg(F.count("*").alias("messages")))
