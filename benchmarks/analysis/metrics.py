"""The analysis jobs: pure `DataFrame -> DataFrame` functions over checked inputs.

Inputs (see `schemas`): `runs` (one row per run), `events` (events.jsonl of every run),
`produce` and `consume` (the ledgers), `timeline` (leader / ISR samples). No I/O here, no
Python UDFs: everything is Spark SQL expressions, so the same jobs run on a laptop and on a
cluster.

Definitions (the report repeats them):
- phases of a run, by wall clock: warm-up; steady (until the first fault is injected — the
  moment the control script signalled, not the intent); fault (until the last fault is
  healed, or the end of the load when a fault stays until then); recovery (after the heal);
  "measured" is everything after the warm-up.
- a message is **lost** when it was acknowledged, the final read never saw it, and the final
  read saw a higher offset of the same partition; **unseen** when it was acknowledged, not
  read, and nothing after its offset was read; a **duplicate** is every extra copy of a
  message in the log; **reordered** counts first copies written after a later message of the
  same producer in the same partition; **failed-but-delivered** and
  **indeterminate-but-delivered** are failed / timed-out sends found in the log.
- a partition is **unavailable** during every gap of at least `gap_threshold_s` between two
  successful acks to it (or between the start of the load and its first ack, or its last ack
  and the end of the load), while the producers kept sending on their open-loop schedule.
"""

from __future__ import annotations

import dataclasses

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.analysis.percentiles import FLOOR_MS, PERCENTILE_NAMES, PERCENTILES, PRECISION, percentiles
from benchmarks.analysis.steadiness import steadiness

# Re-exported: part of the analysis API.
__all__ = ["FLOOR_MS", "PERCENTILES", "PERCENTILE_NAMES", "PRECISION", "percentiles", "steadiness"]

GAP_THRESHOLD_S = 1.0
EXPECTED_ACKS = 5.0  # a gap must also be as long as 5 acks take at the partition's average rate
FINAL_READ = "final-read"
OUTCOMES = ("acked", "failed", "indeterminate")
_UNBOUNDED = Window.unboundedPreceding


def _sum_if(condition: Column) -> Column:
    return F.sum(F.when(condition, 1).otherwise(0)).cast("long")


# ---------------------------------------------------------------- phases


def phase_bounds(runs: DataFrame, events: DataFrame) -> DataFrame:
    """One row per run: load_start_ns, measured_from_ns, fault_start_ns, fault_end_ns, load_end_ns
    (fault columns null without a fault)."""
    runs = schemas.check(runs, schemas.RUNS, "runs")
    events = schemas.check(events, schemas.EVENTS, "events")
    injected = (events.filter(F.col("event") == "fault-injected").groupBy("run_id")
                .agg(F.min("at_ns").alias("fault_start_ns"), F.count("*").alias("_injected")))
    healed = (events.filter(F.col("event") == "fault-healed").groupBy("run_id")
              .agg(F.max("at_ns").alias("_last_heal"), F.count("*").alias("_healed")))
    joined = runs.join(injected, on="run_id", how="left").join(healed, on="run_id", how="left")
    all_healed = (F.col("_healed") == F.col("_injected")) & (F.col("_last_heal") <= F.col("load_end_ns"))
    return joined.select(
        "run_id", "load_start_ns", "measured_from_ns", "fault_start_ns",
        F.when(F.col("fault_start_ns").isNull(), F.lit(None).cast("long"))
         .when(all_healed, F.col("_last_heal")).otherwise(F.col("load_end_ns")).alias("fault_end_ns"),
        "load_end_ns")


def phase_windows(bounds: DataFrame) -> DataFrame:
    """(run_id, phase, start_ns, end_ns) for warmup, steady, fault, recovery and measured."""
    b = bounds
    steady_end = F.coalesce(F.least(F.col("fault_start_ns"), F.col("load_end_ns")), F.col("load_end_ns"))
    rows = F.array(
        F.struct(F.lit("warmup").alias("phase"), b.load_start_ns.alias("start_ns"), b.measured_from_ns.alias("end_ns")),
        F.struct(F.lit("steady").alias("phase"), b.measured_from_ns.alias("start_ns"), steady_end.alias("end_ns")),
        F.struct(F.lit("fault").alias("phase"), b.fault_start_ns.alias("start_ns"), b.fault_end_ns.alias("end_ns")),
        F.struct(F.lit("recovery").alias("phase"), b.fault_end_ns.alias("start_ns"), b.load_end_ns.alias("end_ns")),
        F.struct(F.lit("measured").alias("phase"), b.measured_from_ns.alias("start_ns"), b.load_end_ns.alias("end_ns")),
    )
    return (b.select("run_id", F.explode(rows).alias("w")).select("run_id", "w.*")
            .filter(F.col("start_ns").isNotNull() & (F.col("end_ns") > F.col("start_ns"))))


def _phase_of(ts: Column) -> Column:
    """The phase a timestamp falls in, given the phase_bounds columns alongside."""
    return (F.when(ts < F.col("measured_from_ns"), "warmup")
            .when(ts >= F.col("load_end_ns"), "after")
            .when(F.col("fault_start_ns").isNull() | (ts < F.col("fault_start_ns")), "steady")
            .when(ts < F.col("fault_end_ns"), "fault")
            .otherwise("recovery"))


def _with_phases(df: DataFrame, bounds: DataFrame, ts: str) -> DataFrame:
    """`df` with `phase` (by column `ts`), duplicated into phase "measured" when not warm-up."""
    joined = df.join(F.broadcast(bounds), on="run_id", how="inner").withColumn("_phase", _phase_of(F.col(ts)))
    phases = F.array(F.col("_phase"), F.when(F.col("_phase").isin("steady", "fault", "recovery"), F.lit("measured")))
    return (joined.withColumn("phase", F.explode(phases)).filter(F.col("phase").isNotNull())
            .drop("_phase", *[c for c in bounds.columns if c != "run_id"]))


# ---------------------------------------------------------------- per-message outcomes


_OUTCOME = {name: code for code, name in enumerate(OUTCOMES, start=1)}  # the 1-based codes of `_outcome`
STATUSES = ("delivered", "lost", "unseen", "failed", "failed-delivered", "indeterminate", "indeterminate-delivered",
            "unledgered")


def _run_key() -> Column:
    """The run is grouped on by a 64-bit hash of its id, which aggregations, sorts and the cache
    handle far faster than a string (grouping by the string cost about 20% of the per-message
    status at 10M messages); the id is joined back onto the small results. Two run ids of one
    analysis sharing a hash is a ~1e-12 chance even with 10,000 runs."""
    return F.xxhash64("run_id")


def run_keys(*frames: DataFrame) -> DataFrame:
    """(_run, run_id) of every run id in the given frames."""
    ids = frames[0].select("run_id")
    for frame in frames[1:]:
        ids = ids.unionByName(frame.select("run_id"))
    return ids.distinct().select(_run_key().alias("_run"), "run_id")


def status_codes(produce: DataFrame, consume: DataFrame) -> DataFrame:
    """The per-message work of `message_status`, in its compact form: one row per message id
    (_run, producer, seq) with integer codes, `_outcome` (1-based index into OUTCOMES, null when
    unledgered) and `_status` (0-based index into STATUSES). The form the analysis caches."""
    produce = schemas.check(produce, schemas.PRODUCE, "produce ledger")
    consume = schemas.check(consume, schemas.CONSUME, "consume ledger")
    final = consume.filter(F.col("group") == FINAL_READ)
    null_int, null_long = F.lit(None).cast("int"), F.lit(None).cast("long")
    # Outcomes travel through the shuffle as small integers: cheaper to move and compare than strings.
    code = (F.when(F.col("outcome") == "acked", _OUTCOME["acked"]).when(F.col("outcome") == "failed", _OUTCOME["failed"])
            .otherwise(_OUTCOME["indeterminate"]))
    sent = produce.select(_run_key().alias("_run"), "producer", "seq", code.alias("_outcome"),
                          F.col("partition").alias("ack_partition"), F.col("offset").alias("ack_offset"),
                          F.lit(0).alias("copy"), null_int.alias("read_partition"), null_long.alias("read_offset"))
    read = final.select(_run_key().alias("_run"), "producer", "seq", null_int.alias("_outcome"),
                        null_int.alias("ack_partition"), null_long.alias("ack_offset"), F.lit(1).alias("copy"),
                        F.col("partition").alias("read_partition"), F.col("offset").alias("read_offset"))
    # A message's copies all sit in one partition (its key's, or the one its retries went to).
    per_id = (sent.unionByName(read).groupBy("_run", "producer", "seq")
              .agg(F.max("_outcome").alias("_outcome"), F.max("ack_partition").alias("ack_partition"),
                   F.max("ack_offset").alias("ack_offset"), F.sum("copy").cast("long").alias("copies"),
                   F.max("read_partition").alias("read_partition"), F.min("read_offset").alias("read_offset")))
    highest = final.groupBy(_run_key().alias("_run"), F.col("partition").alias("ack_partition")).agg(
        F.max("offset").alias("max_read_offset"))
    o, read_any = F.col("_outcome"), F.col("copies") > 0
    acked = o == _OUTCOME["acked"]
    status = (F.when(o.isNull(), STATUSES.index("unledgered"))
              .when(acked & read_any, STATUSES.index("delivered"))
              .when(acked & (F.col("max_read_offset") > F.col("ack_offset")), STATUSES.index("lost"))
              .when(acked, STATUSES.index("unseen"))
              .when(o == _OUTCOME["failed"],
                    F.when(read_any, STATUSES.index("failed-delivered")).otherwise(STATUSES.index("failed")))
              .otherwise(F.when(read_any, STATUSES.index("indeterminate-delivered"))
                         .otherwise(STATUSES.index("indeterminate"))))
    return (per_id.join(F.broadcast(highest), on=["_run", "ack_partition"], how="left")
            .select("_run", "producer", "seq", "_outcome", "ack_partition", "ack_offset", "copies",
                    "read_partition", "read_offset", status.alias("_status")))


def decode_status(codes: DataFrame, keys: DataFrame) -> DataFrame:
    """`status_codes` rows with the run id, outcome and status spelled out (`message_status`)."""
    name = lambda names, index: F.element_at(F.array(*map(F.lit, names)), index)  # noqa: E731 - 1-based lookup
    return (codes.join(F.broadcast(keys), on="_run", how="left")
            .select("run_id", "producer", "seq", name(OUTCOMES, F.col("_outcome")).alias("outcome"), "ack_partition",
                    "ack_offset", "copies", "read_partition", "read_offset",
                    name(STATUSES, F.col("_status") + 1).alias("status")))


def message_status(produce: DataFrame, consume: DataFrame) -> DataFrame:
    """One row per message id (run_id, producer, seq): its send outcome, where it was acked,
    how many copies the final read found (and the first one's place), and its status:
    delivered, lost, unseen, failed, failed-delivered, indeterminate, indeterminate-delivered,
    or unledgered (read, but absent from the produce ledger)."""
    keys = run_keys(produce, consume.filter(F.col("group") == FINAL_READ))
    return decode_status(status_codes(produce, consume), keys)


def _per_run(per_key: DataFrame, keys: DataFrame) -> DataFrame:
    """A small per-`_run` result with its run id instead of the key."""
    return (per_key.join(F.broadcast(keys), on="_run", how="inner")
            .select("run_id", *[c for c in per_key.columns if c != "_run"]))


def reordered(codes: DataFrame, keys: DataFrame) -> DataFrame:
    """(run_id, reordered): first copies in the log that follow a later message of the same
    producer in the same partition. From `status_codes`."""
    w = Window.partitionBy("_run", "read_partition", "producer").orderBy("read_offset").rowsBetween(_UNBOUNDED, -1)
    read = codes.filter(F.col("copies") > 0)
    flagged = read.withColumn("_later_before", F.max("seq").over(w))
    return _per_run(flagged.groupBy("_run").agg(_sum_if(F.col("seq") < F.col("_later_before")).alias("reordered")),
                    keys)


def counts(codes: DataFrame, keys: DataFrame) -> DataFrame:
    """Per run: sent, acked, failed, indeterminate, lost, unseen, duplicates, failed_delivered,
    indeterminate_delivered, unledgered. From `status_codes`."""
    s, o = F.col("_status"), F.col("_outcome")
    is_ = lambda name: s == STATUSES.index(name)  # noqa: E731
    return _per_run(codes.groupBy("_run").agg(
        _sum_if(o.isNotNull()).alias("sent"), _sum_if(o == _OUTCOME["acked"]).alias("acked"),
        _sum_if(o == _OUTCOME["failed"]).alias("failed"), _sum_if(o == _OUTCOME["indeterminate"]).alias("indeterminate"),
        _sum_if(is_("lost")).alias("lost"), _sum_if(is_("unseen")).alias("unseen"),
        F.sum(F.greatest(F.col("copies") - 1, F.lit(0))).cast("long").alias("duplicates"),
        _sum_if(is_("failed-delivered")).alias("failed_delivered"),
        _sum_if(is_("indeterminate-delivered")).alias("indeterminate_delivered"),
        _sum_if(is_("unledgered")).alias("unledgered")), keys)


def lost_messages(codes: DataFrame, keys: DataFrame) -> DataFrame:
    """The acknowledged messages the log does not hold: run_id, status (lost / unseen),
    producer, seq, partition and offset of the ack. From `status_codes`."""
    missing = codes.filter(F.col("_status").isin(STATUSES.index("lost"), STATUSES.index("unseen")))
    return (decode_status(missing, keys)
            .select("run_id", "status", "producer", "seq", F.col("ack_partition").alias("partition"),
                    F.col("ack_offset").alias("offset")))


# ---------------------------------------------------------------- throughput and latency


def produce_phases(produce: DataFrame, bounds: DataFrame, runs: DataFrame) -> DataFrame:
    """Per (run_id, phase): sent / failed / indeterminate by intended send time; acked
    messages/s and MB/s by ack time; produce latency percentiles from the intended and from
    the actual send time (acked messages intended in the phase)."""
    produce = schemas.check(produce, schemas.PRODUCE, "produce ledger")
    acked = F.col("outcome") == "acked"
    windows = phase_windows(bounds).withColumn("seconds", (F.col("end_ns") - F.col("start_ns")) / 1e9)
    intended = _with_phases(produce, bounds, "intended_ns")
    by_intent = (intended.groupBy("run_id", "phase")
                 .agg(F.count("*").alias("sent"), _sum_if(F.col("outcome") == "failed").alias("failed"),
                      _sum_if(F.col("outcome") == "indeterminate").alias("indeterminate")))
    latencies = intended.filter(acked).select(
        "run_id", "phase", ((F.col("ack_ns") - F.col("intended_ns")) / 1e6).alias("lat_intended"),
        ((F.col("ack_ns") - F.col("sent_ns")) / 1e6).alias("lat_sent"))
    keys = ["run_id", "phase"]
    by_intent = (by_intent.join(percentiles(latencies, keys, "lat_intended", "latency"), on=keys, how="left")
                 .join(percentiles(latencies, keys, "lat_sent", "send_latency"), on=keys, how="left"))
    by_ack = (_with_phases(produce.filter(acked).select("run_id", "ack_ns"), bounds, "ack_ns").groupBy("run_id", "phase")
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
    records = (consume.filter(F.col("group") != FINAL_READ)
               .withColumn("e2e", (F.col("consumed_ns") - F.col("sent_ns")) / 1e6))
    phased = _with_phases(records, bounds, "sent_ns")
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
             .agg(F.count("*").alias("sent"), _sum_if(F.col("outcome") == "failed").alias("failed"),
                  _sum_if(F.col("outcome") == "indeterminate").alias("indeterminate")))
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
    """(run_id, outcome, error, messages): what the producers were told, by error name."""
    return (produce.filter(F.col("outcome") != "acked").groupBy("run_id", "outcome", "error")
            .agg(F.count("*").alias("messages")))


# ---------------------------------------------------------------- cluster timeline


def partition_states(timeline: DataFrame, runs: DataFrame) -> DataFrame:
    """Timeline samples with their successor's time and the partition's health:
    run_id, partition, t_ns, next_t_ns, leader, isr, isr_size, replicas_size, leaderless, under_min_isr."""
    timeline = schemas.check(timeline, schemas.TIMELINE, "timeline")
    w = Window.partitionBy("run_id", "partition").orderBy("t_ns")
    size = lambda c: F.when((F.col(c).isNull()) | (F.col(c) == ""), 0).otherwise(F.size(F.split(F.col(c), ",")))  # noqa: E731
    return (timeline.filter(F.col("partition").isNotNull())
            .join(F.broadcast(runs.select("run_id", "min_insync_replicas")), on="run_id", how="inner")
            .select("run_id", "partition", "t_ns", F.lead("t_ns").over(w).alias("next_t_ns"), "leader", "isr",
                    size("isr").alias("isr_size"), size("replicas").alias("replicas_size"),
                    F.col("leader").isNull().alias("leaderless"),
                    (size("isr") < F.col("min_insync_replicas")).alias("under_min_isr")))


def leadership_segments(states: DataFrame) -> DataFrame:
    """Consecutive samples with the same leader and ISR merged: run_id, partition, start_ns,
    end_ns, leader, isr."""
    w = Window.partitionBy("run_id", "partition").orderBy("t_ns")
    changed = ~(F.col("leader").eqNullSafe(F.lag("leader").over(w)) & F.col("isr").eqNullSafe(F.lag("isr").over(w)))
    segment = F.sum(F.when(changed, 1).otherwise(0)).over(w.rowsBetween(_UNBOUNDED, Window.currentRow))
    return (states.withColumn("_changed", changed).withColumn("_segment", segment)
            .groupBy("run_id", "partition", "_segment")
            .agg(F.min("t_ns").alias("start_ns"), F.max(F.coalesce("next_t_ns", "t_ns")).alias("end_ns"),
                 F.max("leader").alias("leader"), F.max("isr").alias("isr"))
            .drop("_segment"))


def health_time(states: DataFrame) -> DataFrame:
    """Per (run_id, partition): seconds the timeline showed it without a leader, and with
    fewer in-sync replicas than min.insync.replicas."""
    span = (F.coalesce("next_t_ns", "t_ns") - F.col("t_ns")) / 1e9
    return states.groupBy("run_id", "partition").agg(
        F.sum(F.when(F.col("leaderless"), span).otherwise(0.0)).alias("leaderless_s"),
        F.sum(F.when(F.col("under_min_isr"), span).otherwise(0.0)).alias("under_min_isr_s"))


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
                Window.partitionBy("run_id", "partition").rowsBetween(_UNBOUNDED, Window.unboundedFollowing))))
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
    and re-expanding, and to the first successful ack of a message sent after the injection."""
    events = schemas.check(events, schemas.EVENTS, "events")
    runs = schemas.check(runs, schemas.RUNS, "runs")
    intent = events.filter(F.col("event") == "fault-intent").select("run_id", "fault_id", "kind", "broker", "reason")
    injected = events.filter(F.col("event") == "fault-injected").select("run_id", "fault_id", F.col("at_ns").alias("injected_ns"))
    healed = events.filter(F.col("event") == "fault-healed").select("run_id", "fault_id", F.col("at_ns").alias("healed_ns"))
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
    after = (samples.filter(F.col("t_ns") > F.col("injected_ns")).groupBy(*keys)
             .agg(F.min(F.when(F.col("leader").isNotNull() & (F.col("leader") != F.coalesce(target, F.lit(-1)))
                               & (F.col("t_ns") <= F.col("load_end_ns")), F.col("t_ns"))).alias("_new_leader_ns"),
                  F.max_by(F.col("leader"), F.when(F.col("t_ns") <= until, F.col("t_ns"))).alias("leader_after"),
                  F.min(F.when(isr_lost_target, F.col("t_ns"))).alias("_shrink_ns")))
    expand = (samples.join(after.select(*keys, "_shrink_ns"), on=keys, how="inner")
              .filter((F.col("t_ns") > F.col("_shrink_ns")) & (F.col("isr_size") >= F.col("replicas_size")))
              .groupBy(*keys).agg(F.min("t_ns").alias("_expand_ns")))
    first_ack = (produce.filter(F.col("outcome") == "acked").select("run_id", "partition", "sent_ns", "ack_ns")
                 .join(F.broadcast(faults.select("run_id", "fault_id", "injected_ns")), on="run_id", how="inner")
                 .filter(F.col("sent_ns") > F.col("injected_ns"))
                 .groupBy(*keys).agg(F.min("ack_ns").alias("_first_ack_ns")))
    return (faults.join(before, on=["run_id", "fault_id"], how="inner")
            .join(after, on=keys, how="left").join(expand, on=keys, how="left").join(first_ack, on=keys, how="left")
            .select("run_id", "fault_id", "kind", "broker", "reason", "injected_ns", "healed_ns", "partition",
                    "leader_before", "leader_after",
                    F.when(F.col("leader_before") == target, seconds("_new_leader_ns")).alias("new_leader_s"),
                    seconds("_shrink_ns").alias("isr_shrink_s"), seconds("_expand_ns").alias("isr_expand_s"),
                    seconds("_first_ack_ns").alias("first_ack_s")))


# ---------------------------------------------------------------- the whole analysis


@dataclasses.dataclass
class Analysis:
    """Every result of an analysis, as DataFrames (nothing computed until an action runs)."""

    def release(self) -> None:
        """Drop the cached intermediate results."""
        for field in dataclasses.fields(self):
            getattr(self, field.name).unpersist()

    runs: DataFrame
    bounds: DataFrame
    codes: DataFrame  # the per-message status in its compact, cached form (status_codes)
    status: DataFrame
    counts: DataFrame
    reordered: DataFrame
    lost: DataFrame
    phases: DataFrame
    end_to_end: DataFrame
    per_second: DataFrame
    errors: DataFrame
    segments: DataFrame
    health: DataFrame
    unavailability: DataFrame
    faults: DataFrame
    summary: DataFrame


SUMMARY_COLUMNS = (
    "run_id", "scenario", "description", "acks", "replication_factor", "min_insync_replicas", "unclean_leader_election", "fault",
    "fault_schedule",
    "sent", "acked", "failed", "indeterminate", "lost", "unseen", "duplicates", "reordered", "failed_delivered",
    "indeterminate_delivered", "throughput_msgs_s", "throughput_mb_s", "latency_p50_ms", "latency_p99_ms",
    "latency_p999_ms", "latency_max_ms", "send_latency_p99_ms", "e2e_p99_ms", "unavailable_s", "unavailable_in_fault_s",
    "leaderless_partition", "leaderless_s", "new_leader_s", "steady", "steady_p99_first_ms", "steady_p99_last_ms",
    "steady_acked_share", "valid", "invalid_reasons",
)


def summarize(runs: DataFrame, counts_df: DataFrame, reordered_df: DataFrame, phases: DataFrame,
              e2e: DataFrame, unavailable: DataFrame, impact: DataFrame, steady: DataFrame) -> DataFrame:
    """One row per run with SUMMARY_COLUMNS: counts over the whole run; throughput and latency
    over the measured phase; unavailable_s is the worst partition's total time without acks
    (unavailable_in_fault_s: of windows overlapping the fault phase); leaderless_s the total of
    the windows in which the timeline saw leaderless_partition without a leader (the most such);
    new_leader_s the slowest leader change after a fault."""
    measured = phases.filter(F.col("phase") == "measured").select(
        "run_id", "throughput_msgs_s", "throughput_mb_s", "latency_p50_ms", "latency_p99_ms", "latency_p999_ms",
        "latency_max_ms", "send_latency_p99_ms")
    e2e_measured = e2e.filter(F.col("phase") == "measured").select("run_id", "e2e_p99_ms")
    worst = (unavailable.groupBy("run_id", "partition")
             .agg(F.sum("duration_s").alias("_s"),
                  F.sum(F.when(F.col("during_fault"), F.col("duration_s")).otherwise(0.0)).alias("_f"))
             .groupBy("run_id").agg(F.max("_s").alias("unavailable_s"), F.max("_f").alias("unavailable_in_fault_s")))
    leaders = impact.groupBy("run_id").agg(F.max("new_leader_s").alias("new_leader_s"))
    leaderless = (unavailable.filter(F.col("leaderless")).groupBy("run_id", "partition")
                  .agg(F.sum("duration_s").alias("_l"))
                  .groupBy("run_id").agg(F.max_by("partition", "_l").alias("leaderless_partition"),
                                         F.max("_l").alias("leaderless_s")))
    return (runs.join(counts_df, on="run_id", how="left").join(reordered_df, on="run_id", how="left")
            .join(measured, on="run_id", how="left").join(e2e_measured, on="run_id", how="left")
            .join(worst, on="run_id", how="left").join(leaders, on="run_id", how="left")
            .join(leaderless, on="run_id", how="left").join(steady.drop("steady_s"), on="run_id", how="left")
            .fillna(0, subset=["sent", "acked", "failed", "indeterminate", "lost", "unseen", "duplicates", "reordered",
                               "failed_delivered", "indeterminate_delivered"])
            .fillna(0.0, subset=["unavailable_s", "unavailable_in_fault_s"])
            .select(*SUMMARY_COLUMNS).orderBy("scenario", "run_id"))


def analyse(runs: DataFrame, events: DataFrame, produce: DataFrame, consume: DataFrame, timeline: DataFrame,
            gap_threshold_s: float = GAP_THRESHOLD_S, expected_acks: float = EXPECTED_ACKS) -> Analysis:
    """Every job over the same inputs. The per-message status, the timeline states and the
    small per-run results feed several others and the summary, so they are cached (the only
    state this module keeps; `release` frees it)."""
    runs = schemas.check(runs, schemas.RUNS, "runs")
    events = schemas.check(events, schemas.EVENTS, "events")
    produce = schemas.check(produce, schemas.PRODUCE, "produce ledger")
    consume = schemas.check(consume, schemas.CONSUME, "consume ledger")
    timeline = schemas.check(timeline, schemas.TIMELINE, "timeline")
    bounds = phase_bounds(runs, events).cache()
    keys = run_keys(runs).cache()  # every ledger row belongs to one of the runs read
    codes = status_codes(produce, consume).cache()
    # Small results several others (and the summary) are built from: computed once.
    counts_df, reordered_df = counts(codes, keys).cache(), reordered(codes, keys).cache()
    phases = produce_phases(produce, bounds, runs).cache()
    e2e = end_to_end(consume, bounds).cache()
    states = partition_states(timeline, runs).cache()
    unavailable = unavailability(produce, runs, states, bounds, gap_threshold_s, expected_acks).cache()
    impact = fault_impact(events, states, produce, runs).cache()
    return Analysis(
        runs=runs, bounds=bounds, codes=codes, status=decode_status(codes, keys), counts=counts_df,
        reordered=reordered_df, lost=lost_messages(codes, keys),
        phases=phases, end_to_end=e2e, per_second=per_second(produce, runs), errors=errors(produce),
        segments=leadership_segments(states), health=health_time(states), unavailability=unavailable, faults=impact,
        summary=summarize(runs, counts_df, reordered_df, phases, e2e, unavailable, impact,
                          steadiness(produce, bounds)))
