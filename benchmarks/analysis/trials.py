"""Repeated trials of one configuration, summed up: how often it lost acknowledged writes, with
a 95% Wilson score interval, and the spread of its losses, unavailability and failovers.

A **configuration** is a scenario (a sweep point is a scenario of its own) on one metadata mode
and Kafka release; its **trials** are its valid runs (an invalid run is counted apart, never as
evidence either way). A trial **lost** when any acknowledged write was lost or unseen (the
checker's two kinds of acknowledged loss). The interval is Wilson's score interval for the
share of trials that lose: with 0 losses in n trials its upper bound is z²/(n+z²) (6.0% for 60
trials, 27.8% for 10), with n of n its lower bound n/(n+z²).

A run with a recurring fault (`recurring`) is also counted per **injection**: each lost
acknowledged write is charged to the injection in force when it was acknowledged (the latest,
if several were), else to the first injected after its ack (a leader killed with writes it alone
held), else to the run's last injection; an injection **lost** when any write is charged to it.
The injections' interval treats them as independent trials, which repeated faults on one
cluster only approximate (waiting for a recovered cluster before each, `wait_recovered_s`,
brings them closer): the runs' interval is the stricter evidence.

A configuration that is a **negative control** (`expect_loss`: built to lose acknowledged
writes) shows that the harness can see loss; it is **blind** when it lost in fewer than
BLIND_SHARE of its valid trials (9 of 10), or had none.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from benchmarks.core.codes import BLIND_SHARE
from benchmarks.record import run_events

# The two-sided 95% normal quantile.
Z95 = 1.959963984540054
CONFIGURATION = ("scenario", "metadata_mode", "kafka_version", "security")
# What each run row of the summary gains of its configuration's trials.
PER_RUN = ("trials", "trials_with_loss", "loss_ci_low", "loss_ci_high")
TRIALS_COLUMNS = (
    *CONFIGURATION, "acks", "replication_factor", "min_insync_replicas", "unclean_leader_election", "fault",
    "expect_loss", "blind", "recurring", "trials", "trials_invalid", "trials_with_loss", "loss_ci_low", "loss_ci_high",
    "lost_median", "lost_max",
    "unavailable_median_s", "unavailable_p90_s", "unavailable_max_s", "new_leader_median_s", "new_leader_p90_s",
    "new_leader_max_s", "duplicates", "faults_injected", "injections_with_loss", "injection_loss_ci_low",
    "injection_loss_ci_high")


def wilson(successes: Column, n: Column, z: float = Z95) -> tuple[Column, Column]:
    """(low, high) of the Wilson score interval for `successes` of `n` (null when n is 0);
    exactly 0 below when there are none, exactly 1 above when all are."""
    k, total = successes.cast("double"), F.nullif(n, F.lit(0)).cast("double")
    p, z2 = k / total, z * z
    centre = (p + F.lit(z2) / (2 * total)) / (1 + F.lit(z2) / total)
    half = F.lit(z) * F.sqrt(p * (1 - p) / total + F.lit(z2) / (4 * total * total)) / (1 + F.lit(z2) / total)
    low = F.when(k == 0, F.lit(0.0)).otherwise(F.greatest(F.lit(0.0), centre - half))
    high = F.when(k == total, F.lit(1.0)).otherwise(F.least(F.lit(1.0), centre + half))
    return F.when(total.isNotNull(), low), F.when(total.isNotNull(), high)


def _spread(column: str, name: str) -> list[Column]:
    """Median, p90 and maximum of a per-run figure over the valid trials (exact percentiles)."""
    of_valid = F.when(F.col("valid"), F.col(column))
    return [F.percentile(of_valid, 0.5).alias(f"{name}_median_s"), F.percentile(of_valid, 0.9).alias(f"{name}_p90_s"),
            F.max(of_valid).alias(f"{name}_max_s")]


def trials(summary: DataFrame) -> DataFrame:
    """One row per configuration (TRIALS_COLUMNS) from the per-run summary: its valid trials,
    those that lost an acknowledged write with the 95% interval of that share, the acknowledged
    writes lost per trial (median, max), the worst partition's seconds without acks and the
    slowest leader change per trial (median, p90, max), duplicates and fault injections (sums)."""
    valid = F.col("valid")
    loss = F.when(valid, F.col("lost") + F.col("unseen"))
    grouped = summary.groupBy(*CONFIGURATION).agg(
        F.first("acks").alias("acks"), F.first("replication_factor").alias("replication_factor"),
        F.first("min_insync_replicas").alias("min_insync_replicas"),
        F.first("unclean_leader_election").alias("unclean_leader_election"), F.first("fault").alias("fault"),
        F.max("expect_loss").alias("expect_loss"),
        F.max(F.exists("fault_schedule", lambda f: f["every_s"].isNotNull())).alias("recurring"),
        F.count(F.when(valid, 1)).alias("trials"), F.count(F.when(~valid, 1)).alias("trials_invalid"),
        F.count(F.when(loss > 0, 1)).alias("trials_with_loss"),
        F.percentile(loss, 0.5).alias("lost_median"), F.max(loss).alias("lost_max"),
        *_spread("unavailable_s", "unavailable"), *_spread("new_leader_s", "new_leader"),
        F.sum(F.when(valid, F.col("duplicates"))).alias("duplicates"),
        F.sum(F.when(valid, F.col("faults_injected"))).alias("faults_injected"),
        F.sum(F.when(valid, F.col("injections_with_loss"))).alias("injections_with_loss"))
    low, high = wilson(F.col("trials_with_loss"), F.col("trials"))
    injection_low, injection_high = wilson(F.col("injections_with_loss"), F.col("faults_injected"))
    needed = F.ceil(F.col("trials") * F.lit(BLIND_SHARE))
    blind = F.col("expect_loss") & ((F.col("trials") == 0) | (F.col("trials_with_loss") < needed))
    return (grouped.withColumn("loss_ci_low", low).withColumn("loss_ci_high", high).withColumn("blind", blind)
            .withColumn("injection_loss_ci_low", injection_low).withColumn("injection_loss_ci_high", injection_high)
            .select(*TRIALS_COLUMNS).orderBy(*CONFIGURATION))


def injection_losses(lost: DataFrame, produce: DataFrame, events: DataFrame) -> DataFrame:
    """(run_id, fault_id, lost): the acknowledged writes lost or unseen charged to each injection
    that any is charged to (the rule in the module's words). `lost` is `lost_messages`' frame."""
    injected = (events.filter(F.col("event") == run_events.FAULT_INJECTED)
                .select("run_id", "fault_id", F.col("at_ns").alias("injected_ns")))
    healed = (events.filter(F.col("event") == run_events.FAULT_HEALED)
              .select("run_id", "fault_id", F.col("at_ns").alias("healed_ns")))
    faults = injected.join(healed, on=["run_id", "fault_id"], how="left")
    acks = (produce.select("run_id", "producer", "seq", "ack_ns")
            .join(F.broadcast(lost.select("run_id", "producer", "seq")), on=["run_id", "producer", "seq"], how="inner"))
    ack, at = F.col("ack_ns"), F.col("injected_ns")
    in_force = (at <= ack) & (ack <= F.coalesce(F.col("healed_ns"), F.lit(2**62)))
    preference = F.when(in_force, 0).when(at > ack, 1).otherwise(2)
    # In force: the latest injected; after the ack: the first; before it (none after): the last.
    order = F.when(preference == 1, at).otherwise(-at)
    charged = (acks.join(F.broadcast(faults), on="run_id", how="inner")
               .withColumn("_rank", F.row_number().over(Window.partitionBy("run_id", "producer", "seq")
                                                        .orderBy(preference, order)))
               .filter(F.col("_rank") == 1))
    return charged.groupBy("run_id", "fault_id").agg(F.count("*").alias("lost"))


def with_trials(summary: DataFrame, per_configuration: DataFrame) -> DataFrame:
    """Each run row of `summary` with its configuration's PER_RUN figures (null-safe on the
    configuration: runs of older versions have no metadata mode or release)."""
    right = per_configuration.select(*[F.col(c).alias(f"_{c}") for c in CONFIGURATION], *PER_RUN)
    same = [summary[c].eqNullSafe(right[f"_{c}"]) for c in CONFIGURATION]
    return summary.join(right, on=same, how="left").drop(*[f"_{c}" for c in CONFIGURATION])
