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
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.analysis.availability import (
    acked_invisible,
    fault_impact,
    health_time,
    leadership_segments,
    partition_states,
    unavailability,
)
from benchmarks.analysis.consumers import (
    CONSUMER_COLUMNS,
    consumer_lag,
    consumer_summary,
    read_anomalies,
    rebalances,
)
from benchmarks.analysis.contract import EXPECTED_ACKS, GAP_THRESHOLD_S
from benchmarks.analysis.costs import security_cost
from benchmarks.analysis.latency import end_to_end, errors, per_second, produce_phases
from benchmarks.analysis.outcomes import (
    counts,
    decode_status,
    lost_messages,
    message_status,
    reordered,
    run_keys,
    status_codes,
)
from benchmarks.analysis.percentiles import FLOOR_MS, PERCENTILE_NAMES, PERCENTILES, PRECISION, percentiles
from benchmarks.analysis.phases import phase_bounds, phase_windows
from benchmarks.analysis.procedures import procedure_steps, step_impact
from benchmarks.analysis.steadiness import steadiness
from benchmarks.analysis.transactions import TXN_COLUMNS, lso_stalls, transaction_counts, transaction_outcomes
from benchmarks.analysis.trials import PER_RUN, injection_losses, trials, with_trials
from benchmarks.core.codes import FINAL_READ, OUTCOMES, STATUSES
from benchmarks.record import run_events

# The analysis API, whichever module of the package defines each job.
__all__ = ["EXPECTED_ACKS", "FINAL_READ", "FLOOR_MS", "GAP_THRESHOLD_S", "OUTCOMES", "PERCENTILES", "PERCENTILE_NAMES",
           "PRECISION", "STATUSES", "Analysis", "acked_invisible", "analyse", "cached", "checkpointed", "counts",
           "decode_status", "end_to_end", "errors",
           "fault_impact", "health_time", "leadership_segments", "lost_messages", "message_status", "partition_states",
           "per_second", "percentiles", "phase_bounds", "phase_windows", "produce_phases", "reordered", "run_keys",
           "status_codes", "steadiness", "summarize", "unavailability"]

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
    steps: DataFrame  # per step of each operational procedure (analysis/procedures.py)
    transactions: DataFrame  # per transaction of transactional runs (analysis/transactions.py)
    lag: DataFrame  # per group, partition and second: consumer lag (analysis/consumers.py)
    rebalances: DataFrame  # per rebalance of each consumer group
    groups: DataFrame  # per consumer group: what it read, skipped, read out of order, twice
    summary: DataFrame  # per run (RUN_COLUMNS)
    trials: DataFrame  # per configuration (analysis/trials.py)
    security_cost: DataFrame  # per client security profile of each compared sweep point (analysis/costs.py)


SUMMARY_COLUMNS = (
    "run_id", "scenario", "description", "metadata_mode", "kafka_version", "eligible_leader_replicas", "security",
    "acks", "replication_factor", "min_insync_replicas", "unclean_leader_election", "fault",
    "fault_schedule",
    "sent", "acked", "failed", "indeterminate", "lost", "unseen", "duplicates", "reordered", "failed_delivered",
    "indeterminate_delivered", "throughput_msgs_s", "throughput_mb_s", "latency_p50_ms", "latency_p99_ms",
    "latency_p999_ms", "latency_max_ms", "send_latency_p99_ms", "e2e_p99_ms", "unavailable_s", "unavailable_in_fault_s",
    "leaderless_partition", "leaderless_s", "under_min_isr_s", "hw_stall_s", "acked_invisible", "new_leader_s",
    "new_leader_from", "steady", "steady_p99_first_ms", "steady_p99_last_ms",
    "steady_p50_ms", "warm_p50_ms", "steady_acked_share", "causes", "faults_injected", "injections_with_loss",
    *TXN_COLUMNS, "txn_client", *CONSUMER_COLUMNS, "broker_cpu_s", "broker_cpu_ms_per_1k", "sweep_of", "sweep_point",
    "trial", "expect_loss", "valid", "invalid_reasons", "checked",
)
# What the final read tells, null for a run that could not be checked (summary.json's `checked`).
UNKNOWN_UNCHECKED = ("lost", "unseen", "duplicates", "reordered", "failed_delivered", "indeterminate_delivered")
# The run rows of summary.csv: the above, and what each gains of its configuration's trials.
RUN_COLUMNS = (*SUMMARY_COLUMNS, *PER_RUN)


@dataclasses.dataclass(frozen=True)
class RunParts:
    """The per-run results the summary row is joined from, each keyed on run_id."""

    runs: DataFrame
    counts: DataFrame
    reordered: DataFrame
    phases: DataFrame
    end_to_end: DataFrame
    unavailable: DataFrame
    impact: DataFrame
    steady: DataFrame
    errors: DataFrame
    health: DataFrame
    invisible: DataFrame
    events: DataFrame
    charged: DataFrame  # injections a lost write is charged to (injection_losses)
    txn_counts: DataFrame
    consumers: DataFrame


def summarize(parts: RunParts) -> DataFrame:
    """One row per run with SUMMARY_COLUMNS: counts over the whole run; throughput and latency
    over the measured phase; unavailable_s is the worst partition's total time without acks
    (unavailable_in_fault_s: of windows overlapping the fault phase); leaderless_s the total of
    the windows in which the timeline saw leaderless_partition without a leader (the most such);
    under_min_isr_s the worst partition's time with fewer in-sync replicas than min ISR (timeline),
    hw_stall_s its time so with the high watermark standing still, acked_invisible the messages
    acknowledged above a stalled high watermark (unreadable until the ISR grew back);
    new_leader_s the slowest leader change after a fault, new_leader_from where the new leaders
    came from ("isr", "elr", "unclean", comma-separated when they differed); causes, per error behind
    a failed or unconfirmed send (`errors`' cause), how many sends it was behind; faults_injected
    the faults the run injected (each injection of a recurring fault counts), injections_with_loss
    those any lost acknowledged write is charged to (`injection_losses`); TXN_COLUMNS, for
    transactional runs only (`transaction_counts`; null in other runs), and txn_client, the
    client that ran their transactions; CONSUMER_COLUMNS for runs with consumer groups
    (`consumer_summary`; null in others)."""
    p = parts
    measured = p.phases.filter(F.col("phase") == "measured").select(
        "run_id", "throughput_msgs_s", "throughput_mb_s", "latency_p50_ms", "latency_p99_ms", "latency_p999_ms",
        "latency_max_ms", "send_latency_p99_ms")
    e2e_measured = p.end_to_end.filter(F.col("phase") == "measured").select("run_id", "e2e_p99_ms")
    worst = (p.unavailable.groupBy("run_id", "partition")
             .agg(F.sum("duration_s").alias("_s"),
                  F.sum(F.when(F.col("during_fault"), F.col("duration_s")).otherwise(0.0)).alias("_f"))
             .groupBy("run_id").agg(F.max("_s").alias("unavailable_s"), F.max("_f").alias("unavailable_in_fault_s")))
    leaders = p.impact.groupBy("run_id").agg(
        F.max("new_leader_s").alias("new_leader_s"),
        F.nullif(F.array_join(F.array_sort(F.collect_set("new_leader_from")), ","), F.lit("")).alias("new_leader_from"))
    under = (p.health.groupBy("run_id").agg(F.max("under_min_isr_s").alias("under_min_isr_s"),
                                          F.max("hw_stall_s").alias("hw_stall_s"))
             .join(p.invisible.groupBy("run_id").agg(F.sum("acked_invisible").alias("acked_invisible")), on="run_id", how="left"))
    leaderless = (p.unavailable.filter(F.col("leaderless")).groupBy("run_id", "partition")
                  .agg(F.sum("duration_s").alias("_l"))
                  .groupBy("run_id").agg(F.max_by("partition", "_l").alias("leaderless_partition"),
                                         F.max("_l").alias("leaderless_s")))
    causes = (p.errors.filter(F.col("cause").isNotNull()).groupBy("run_id", "cause")
              .agg(F.sum("messages").alias("_n"))
              .groupBy("run_id").agg(F.map_from_entries(F.collect_list(F.struct("cause", "_n"))).alias("causes")))
    injected = (p.events.filter(F.col("event") == run_events.FAULT_INJECTED).groupBy("run_id")
                .agg(F.count("*").alias("faults_injected"))
                .join(p.charged.groupBy("run_id").agg(F.count("*").alias("injections_with_loss")), on="run_id", how="left"))
    return (p.runs.join(p.counts, on="run_id", how="left").join(p.reordered, on="run_id", how="left")
            .join(measured, on="run_id", how="left").join(e2e_measured, on="run_id", how="left")
            .join(worst, on="run_id", how="left").join(leaders, on="run_id", how="left")
            .join(leaderless, on="run_id", how="left").join(under, on="run_id", how="left")
            .join(p.steady.drop("steady_s"), on="run_id", how="left")
            .join(causes, on="run_id", how="left").join(injected, on="run_id", how="left")
            .join(p.txn_counts, on="run_id", how="left").join(p.consumers, on="run_id", how="left")
            .withColumn("txn_client", F.col("transactions.client"))
            .withColumn("broker_cpu_ms_per_1k", F.round(F.col("broker_cpu_s") * 1e6 / F.nullif(F.col("acked"), F.lit(0)), 3))
            .withColumn("trial", F.coalesce(F.col("trial"), F.lit(1)))  # runs of older versions: one trial each
            .withColumn("expect_loss", F.coalesce(F.col("expect_loss"), F.lit(False)))
            .fillna(0, subset=["sent", "acked", "failed", "indeterminate", "lost", "unseen", "duplicates", "reordered",
                               "failed_delivered", "indeterminate_delivered", "acked_invisible", "faults_injected",
                               "injections_with_loss"])
            .fillna(0.0, subset=["unavailable_s", "unavailable_in_fault_s"])
            # A run of an older version was checked; of a run that failed before its final read
            # ended, what became of the acknowledged writes is not known.
            .withColumn("checked", F.coalesce(F.col("checked"), F.lit(True)))
            .withColumns({c: F.when(F.col("checked"), F.col(c)) for c in UNKNOWN_UNCHECKED})
            .select(*SUMMARY_COLUMNS).orderBy("scenario", "run_id"))


def cached(df: DataFrame) -> DataFrame:
    """Kept where Spark recomputes it if an executor is lost: for an analysis on a cluster."""
    return df.cache()


def checkpointed(df: DataFrame) -> DataFrame:
    """Computed now and kept on the executors, its plan cut off: what is built on it plans as
    from a table. Otherwise the whole analysis is one deep tree, analysed again as each result
    is built on it (benchmarks/perf/analysis_keep.py measures the two side by side)."""
    return df.localCheckpoint()


def analyse(runs: DataFrame, events: DataFrame, produce: DataFrame, consume: DataFrame, timeline: DataFrame,
            gap_threshold_s: float = GAP_THRESHOLD_S, expected_acks: float = EXPECTED_ACKS,
            txns: DataFrame | None = None, changes: DataFrame | None = None,
            keep: Callable[[DataFrame], DataFrame] = cached) -> Analysis:
    """Every job over the same inputs. The per-message status, the timeline states and the
    small per-run results feed several others and the summary, so they are kept by `keep`:
    `cached` (the default) or `checkpointed` (the only state this module keeps; `release` frees
    what is cached)."""
    runs = schemas.check(runs, schemas.RUNS, "runs")
    events = schemas.check(events, schemas.EVENTS, "events")
    produce = schemas.check(produce, schemas.PRODUCE, "produce ledger")
    consume = schemas.check(consume, schemas.CONSUME, "consume ledger")
    timeline = schemas.check(timeline, schemas.TIMELINE, "timeline")
    if txns is None:  # no transactional run among the inputs
        txns = runs.sparkSession.createDataFrame([], schemas.TXN)
    outcomes = transaction_outcomes(txns, produce, consume).transform(keep)
    if changes is None:  # no consumer-group ledger among the inputs
        changes = runs.sparkSession.createDataFrame([], schemas.GROUP)
    lag = consumer_lag(produce, consume, runs).transform(keep)
    moves = rebalances(changes, runs).transform(keep)
    groups = read_anomalies(consume, changes).transform(keep)
    bounds = phase_bounds(runs, events).transform(keep)
    keys = run_keys(runs).transform(keep)  # every ledger row belongs to one of the runs read
    codes = status_codes(produce, consume).transform(keep)
    # Small results several others (and the summary) are built from: computed once.
    counts_df, reordered_df = counts(codes, keys).transform(keep), reordered(codes, keys).transform(keep)
    phases = produce_phases(produce, bounds, runs).transform(keep)
    e2e = end_to_end(consume, bounds).transform(keep)
    states = partition_states(timeline, runs).transform(keep)
    unavailable = unavailability(produce, runs, states, bounds, gap_threshold_s, expected_acks).transform(keep)
    health = health_time(states).transform(keep)
    impact = fault_impact(events, states, produce, runs).transform(keep)
    errors_df = errors(produce).transform(keep)
    segments = leadership_segments(states)
    steps = step_impact(procedure_steps(events), produce, unavailable, segments, bounds)
    # The acknowledged writes a run's final read did not find; none of a run that could not be checked.
    checked = runs.filter(F.coalesce(F.col("checked"), F.lit(True))).select("run_id")
    lost = lost_messages(codes, keys).join(checked, on="run_id", how="left_semi").transform(keep)
    per_run = summarize(RunParts(
        runs=runs, counts=counts_df, reordered=reordered_df, phases=phases, end_to_end=e2e, unavailable=unavailable,
        impact=impact, steady=steadiness(produce, bounds), errors=errors_df, health=health,
        invisible=acked_invisible(produce, states), events=events, charged=injection_losses(lost, produce, events),
        txn_counts=transaction_counts(outcomes, lso_stalls(timeline)), consumers=consumer_summary(lag, moves, groups),
    )).transform(keep)
    per_configuration = trials(per_run).transform(keep)
    return Analysis(
        runs=runs, bounds=bounds, codes=codes, status=decode_status(codes, keys), counts=counts_df,
        reordered=reordered_df, lost=lost,
        phases=phases, end_to_end=e2e, per_second=per_second(produce, runs), errors=errors_df,
        segments=segments, health=health, unavailability=unavailable, faults=impact, steps=steps, transactions=outcomes,
        lag=lag, rebalances=moves, groups=groups,
        summary=with_trials(per_run, per_configuration).select(*RUN_COLUMNS).orderBy("scenario", "run_id"),
        trials=per_configuration, security_cost=security_cost(per_run))
