"""Is the steady phase steady? (The phase before the first fault, or the whole measured phase
of a run without one.) A run whose cluster was still settling reads as the cost of its
settings: acks=all with seconds of p99 on a quiet cluster, say. So the phase is tested, and a
run that fails is flagged in its verdict and in summary.csv, never "good":

Latency here is what the phase itself saw: from the intended send to the ack, or to the first
fault's injection for a message still unacknowledged then (its wait after that is the fault's,
not the phase's: the sends in flight when a leader is killed wait out its election). A message
still in flight at the fault is the fault's outcome too, acknowledged or not: the acked share
counts only the messages whose delivery report came before the fault (seed 002 kills both
replicas of its partition, and the sends of the last ~30 ms before the first kill time out later).

- **trend**: the p99 latency (from the intended send) of the messages intended in the phase's
  first third is at most `TREND_FACTOR` times that of its last third, or within `TREND_FLOOR_MS`
  of it (a few milliseconds of jitter at low latency are no trend): a transient draining;
- **level**: the phase's p50 is at most `LEVEL_FACTOR` times the p50 of the warmed produce
  path measured just before the load (`warm_p50_ms`, same topic, settings and keys), or within
  `LEVEL_FLOOR_MS` of it: a backlog that builds and drains inside the phase has no trend from
  end to end, but its p50 sits far above the warmed path's (on the local cluster: 1.8 s
  against 5 ms). Within `LEVEL_FLOOR_MS` of the warmed path is a level, not a backlog: the load
  runs beside its consumers and the timeline sampler, which the warm-up does not (the leader
  kill as measured on 2 cores: p50 82-90 ms in every third against 13 ms warmed). Not judged
  for unthrottled loads, which queue by design;
- **acked vs offered**: at least `ACKED_SHARE` of the messages intended in the phase and
  answered before the fault were acknowledged (without a fault, an open-loop load that is not
  acknowledged is not steady).

A phase shorter than `MIN_STEADY_S` is not judged (steady is null).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from benchmarks.analysis.percentiles import percentiles
from benchmarks.analysis.phases import steady_end

TREND_FACTOR = 3.0
TREND_FLOOR_MS = 50.0
LEVEL_FACTOR = 5.0
LEVEL_FLOOR_MS = 250.0
ACKED_SHARE = 0.99
MIN_STEADY_S = 3.0

# (warm_p50_ms, the level the phase is held to, is the runs' own column.)
COLUMNS = ("run_id", "steady_s", "steady_acked_share", "steady_p99_first_ms", "steady_p99_last_ms", "steady_p50_ms",
           "steady")


def steadiness(produce: DataFrame, bounds: DataFrame) -> DataFrame:
    """One row per run with COLUMNS. `bounds` as metrics.phase_bounds gives them."""
    phase = bounds.select("run_id", F.col("measured_from_ns").alias("_from"), steady_end().alias("_to"),
                          F.col("fault_start_ns").alias("_fault_ns"), "warm_p50_ms")
    third = (F.col("_to") - F.col("_from")) / 3
    inside = (produce.join(F.broadcast(phase.drop("warm_p50_ms")), on="run_id", how="inner")
              .filter((F.col("intended_ns") >= F.col("_from")) & (F.col("intended_ns") < F.col("_to")))
              .withColumn("_third", F.floor((F.col("intended_ns") - F.col("_from")) / third).cast("int")))
    # In flight at the fault: its delivery report came after it, or never (without a fault, nothing is in flight).
    in_flight = F.col("_fault_ns").isNotNull() & (F.col("ack_ns").isNull() | (F.col("ack_ns") >= F.col("_fault_ns")))
    shares = inside.filter(~in_flight).groupBy("run_id").agg(
        (F.sum(F.when(F.col("outcome") == "acked", 1).otherwise(0)) / F.count("*")).alias("steady_acked_share"))
    waited = (inside.filter((F.col("outcome") == "acked") | in_flight)
             .withColumn("_lat", (F.least(F.col("ack_ns"), F.col("_fault_ns")) - F.col("intended_ns")) / 1e6))
    p99 = (percentiles(waited.filter(F.col("_third").isin(0, 2)), ["run_id", "_third"], "_lat", "lat").groupBy("run_id")
           .agg(F.max(F.when(F.col("_third") == 0, F.col("lat_p99_ms"))).alias("steady_p99_first_ms"),
                F.max(F.when(F.col("_third") == 2, F.col("lat_p99_ms"))).alias("steady_p99_last_ms")))
    p50 = percentiles(waited, ["run_id"], "_lat", "lat").select("run_id", F.col("lat_p50_ms").alias("steady_p50_ms"))
    first, last = F.col("steady_p99_first_ms"), F.col("steady_p99_last_ms")
    no_trend = (first <= TREND_FACTOR * last) | (first <= last + TREND_FLOOR_MS)
    level, warm = F.col("steady_p50_ms"), F.col("warm_p50_ms")
    at_level = warm.isNull() | (level <= LEVEL_FACTOR * warm) | (level <= warm + LEVEL_FLOOR_MS)
    judged = F.col("steady_s") >= MIN_STEADY_S
    return (phase.drop("_fault_ns").withColumn("steady_s", (F.col("_to") - F.col("_from")) / 1e9)
            .join(shares, on="run_id", how="left").join(p99, on="run_id", how="left").join(p50, on="run_id", how="left")
            .withColumn("steady", F.when(judged, F.coalesce(no_trend & at_level & (F.col("steady_acked_share") >= ACKED_SHARE),
                                                            F.lit(False))))
            .select(*COLUMNS))
