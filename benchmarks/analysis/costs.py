"""What a client security profile costs: each profile's runs against the plaintext runs of the
same sweep point but for `client.security` (the suite `security-cost` sweeps nothing else).

Runs compare when they are points of one scenario's sweep (`sweep_of`), on one metadata mode
and release, and agree on every swept field but client.security; of each profile's valid runs
the median of the figures is taken (trials repeat a point). The ratios divide a profile's
figure by plaintext's: throughput below 1 is a cost, latency and broker CPU above 1 are.
Broker CPU is per 1,000 acknowledged messages over the whole load (`broker_cpu_ms_per_1k`),
so a profile that gets fewer messages through at an unthrottled rate is not flattered by it.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

SECURITY_PATH = "client.security"
BASELINE = "plaintext"
FIGURES = (("throughput_msgs_s", "throughput_ratio"), ("latency_p50_ms", "p50_ratio"),
           ("latency_p99_ms", "p99_ratio"), ("broker_cpu_ms_per_1k", "cpu_ratio"))
COST_COLUMNS = ("sweep_of", "metadata_mode", "kafka_version", "scenario", "security", "runs",
                *(name for pair in FIGURES for name in pair))
_KEY = ("sweep_of", "metadata_mode", "kafka_version", "_others")


def _median(column: str) -> Column:
    return F.percentile(F.col(column), 0.5).alias(column)


def security_cost(summary: DataFrame) -> DataFrame:
    """One row per profile of each compared sweep point (COST_COLUMNS), plaintext's included
    (its ratios 1.0); no row for a point without a valid plaintext run to compare with."""
    swept = summary.filter(F.col("valid") & F.col("sweep_of").isNotNull()
                           & F.exists("sweep_point", lambda v: v["path"] == SECURITY_PATH))
    keyed = swept.withColumn("_others", F.array_sort(F.filter("sweep_point", lambda v: v["path"] != SECURITY_PATH)))
    per_profile = keyed.groupBy(*_KEY, "security").agg(
        F.min("scenario").alias("scenario"), F.count("*").alias("runs"), *(_median(figure) for figure, _ in FIGURES))
    baseline = per_profile.filter(F.col("security") == BASELINE).select(
        *_KEY, *(F.col(figure).alias(f"_base_{figure}") for figure, _ in FIGURES))
    compared = per_profile.join(baseline, on=list(_KEY), how="inner")
    for figure, ratio in FIGURES:
        compared = compared.withColumn(ratio, F.round(F.col(figure) / F.nullif(F.col(f"_base_{figure}"), F.lit(0.0)), 3))
    order = F.when(F.col("security") == BASELINE, 0).otherwise(1)
    return compared.orderBy("sweep_of", "metadata_mode", "kafka_version", "_others", order, "security").select(*COST_COLUMNS)
