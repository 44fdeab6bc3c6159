"""The I/O edge of the analysis: a run directory, or a directory of runs (a sweep, a suite),
read into the DataFrames `metrics.analyse` takes. Paths are whatever Spark reads: local
directories, hdfs://, s3a://, ...; the files are found with Hadoop's file system API."""

from __future__ import annotations

import dataclasses

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.analysis.contract import InputError
from benchmarks.record import ledger


@dataclasses.dataclass
class Inputs:
    run_dirs: list[str]
    runs: DataFrame
    events: DataFrame
    produce: DataFrame
    consume: DataFrame
    timeline: DataFrame
    txns: DataFrame  # transactional runs' transactions (empty when none is)
    changes: DataFrame  # consumer-group members' assignment changes


def _glob(spark: SparkSession, pattern: str) -> list[str]:
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has its gateway
    path = jvm.org.apache.hadoop.fs.Path(pattern)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    found = fs.globStatus(path)
    return sorted(str(status.getPath().toString()) for status in found) if found else []


def run_directories(spark: SparkSession, root: str) -> list[str]:
    """`root` itself when it is a run directory (it has summary.json), else the run
    directories directly under it."""
    root = root.rstrip("/")
    summaries = _glob(spark, f"{root}/summary.json") or _glob(spark, f"{root}/*/summary.json")
    if not summaries:
        raise InputError(f"{root}: no run here: expected {root}/summary.json, or run directories "
                         f"{root}/*/summary.json (as `kafka-bench run` writes them)")
    return [s.rsplit("/", 1)[0] for s in summaries]


def _parquet(spark: SparkSession, run_dirs: list[str], sub: str, expected, name: str,
             newer: tuple[str, ...] = ()) -> DataFrame:
    """The Parquet files of every run; columns named in `newer` (absent from files older versions
    wrote) are read across files of both kinds and are null where a file lacks them."""
    patterns = []
    for d in run_dirs:
        found = _glob(spark, f"{d}/{sub}/*.parquet")
        if not found:
            continue
        current = ledger.current_files(path.rsplit("/", 1)[1] for path in found)
        # Its glob (one path for Spark to list, however many parts), unless parts that a
        # compaction cut short left beside their merged file (benchmarks.record.ledger.compact) are
        # to be left out: then the files themselves.
        patterns += [f"{d}/{sub}/*.parquet"] if len(current) == len(found) else [f"{d}/{sub}/{f}" for f in current]
    if not patterns:
        return spark.createDataFrame([], expected)
    df = spark.read.option("mergeSchema", bool(newer)).parquet(*patterns)
    for field in expected.fields:
        if field.name in newer and field.name not in df.columns:
            df = df.withColumn(field.name, F.lit(None).cast(field.dataType))
    return schemas.check(df, expected, f"{name} ({sub}/*.parquet)")


def read(spark: SparkSession, root: str) -> Inputs:
    run_dirs = run_directories(spark, root)
    files = [f"{d}/summary.json" for d in run_dirs]
    # Every scalar field present and of its type; then read with the whole schema, lists included
    # (an empty list or a null has no type of its own to infer).
    schemas.check(spark.read.option("multiLine", True).json(files), schemas.RUNS_SCALARS, f"{root}: summary.json")
    runs = spark.read.schema(schemas.RUNS).option("multiLine", True).json(files)
    stale = runs.filter(F.col("load_start_ns").isNull() | F.col("run_id").isNull()).select("run_id").collect()
    if stale:
        raise InputError(f"{root}: summary.json of run(s) {', '.join(str(r.run_id) for r in stale)} lacks the load "
                         f"window (written by an older kafka-bench); re-run the scenario")
    events = spark.read.schema(schemas.EVENTS).json([f"{d}/events.jsonl" for d in run_dirs])
    if events.filter(F.col("run_id").isNull()).limit(1).count():
        raise InputError(f"{root}: events.jsonl lines without run_id (written by an older kafka-bench)")
    return Inputs(
        run_dirs=run_dirs, runs=runs, events=events,
        produce=_parquet(spark, run_dirs, "ledger/produce", schemas.PRODUCE, "produce ledger"),
        consume=_parquet(spark, run_dirs, "ledger/consume", schemas.CONSUME, "consume ledger"),
        timeline=_parquet(spark, run_dirs, "timeline", schemas.TIMELINE, "timeline", schemas.TIMELINE_NEWER),
        txns=_parquet(spark, run_dirs, "ledger/txn", schemas.TXN, "transaction ledger"),
        changes=_parquet(spark, run_dirs, "ledger/group", schemas.GROUP, "group ledger"),
    )
