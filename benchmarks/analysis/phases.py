"""The phases of a run by wall clock: warm-up, steady, fault, recovery; "measured" is all but the warm-up."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.record import run_events


def phase_bounds(runs: DataFrame, events: DataFrame) -> DataFrame:
    """One row per run: load_start_ns, measured_from_ns, fault_start_ns, fault_end_ns, load_end_ns
    (fault columns null without a fault or procedure), and warm_p50_ms (the warmed path's level, for steadiness)."""
    runs = schemas.check(runs, schemas.RUNS, "runs")
    events = schemas.check(events, schemas.EVENTS, "events")
    # A procedure run under the load (benchmarks/spec/procedures.py) disturbs it like a fault: from its
    # start to its end.
    started = F.when(F.col("event") == run_events.FAULT_INJECTED, F.col("at_ns")).when(
        F.col("event") == run_events.PROCEDURE_START, F.col("t_ns"))
    ended = F.when(F.col("event") == run_events.FAULT_HEALED, F.col("at_ns")).when(
        F.col("event") == run_events.PROCEDURE_END, F.col("t_ns"))
    injected = (events.filter(started.isNotNull()).groupBy("run_id")
                .agg(F.min(started).alias("fault_start_ns"), F.count("*").alias("_injected")))
    healed = (events.filter(ended.isNotNull()).groupBy("run_id")
              .agg(F.max(ended).alias("_last_heal"), F.count("*").alias("_healed")))
    joined = runs.join(injected, on="run_id", how="left").join(healed, on="run_id", how="left")
    all_healed = (F.col("_healed") == F.col("_injected")) & (F.col("_last_heal") <= F.col("load_end_ns"))
    return joined.select(
        "run_id", "load_start_ns", "measured_from_ns", "fault_start_ns",
        F.when(F.col("fault_start_ns").isNull(), F.lit(None).cast("long"))
         .when(all_healed, F.col("_last_heal")).otherwise(F.col("load_end_ns")).alias("fault_end_ns"),
        "load_end_ns", "warm_p50_ms")


def steady_end() -> Column:
    """When the steady phase ends, from the phase_bounds columns: at the first fault's injection,
    or at the end of the load when there is none (or it came later; `least` skips a null)."""
    return F.least(F.col("fault_start_ns"), F.col("load_end_ns"))


def phase_windows(bounds: DataFrame) -> DataFrame:
    """(run_id, phase, start_ns, end_ns) for warmup, steady, fault, recovery and measured."""
    b = bounds
    rows = F.array(
        F.struct(F.lit("warmup").alias("phase"), b.load_start_ns.alias("start_ns"), b.measured_from_ns.alias("end_ns")),
        F.struct(F.lit("steady").alias("phase"), b.measured_from_ns.alias("start_ns"), steady_end().alias("end_ns")),
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


def with_phases(df: DataFrame, bounds: DataFrame, ts: str) -> DataFrame:
    """`df` with `phase` (by column `ts`), duplicated into phase "measured" when not warm-up."""
    joined = df.join(F.broadcast(bounds), on="run_id", how="inner").withColumn("_phase", _phase_of(F.col(ts)))
    phases = F.array(F.col("_phase"), F.when(F.col("_phase").isin("steady", "fault", "recovery"), F.lit("measured")))
    return (joined.withColumn("phase", F.explode(phases)).filter(F.col("phase").isNotNull())
            .drop("_phase", *[c for c in bounds.columns if c != "run_id"]))
