"""What every analysis job expects of its inputs, checked at entry.

The ledgers' Spark schemas are derived from the Parquet schemas the runner writes
(`benchmarks.ledger`, `benchmarks.timeline`), so the two cannot drift apart."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from benchmarks import ledger, timeline


class SchemaError(ValueError):
    """An input lacks a column or has one of the wrong type; the message names both."""


_ARROW_TO_SPARK = {
    pa.string(): T.StringType(), pa.int32(): T.IntegerType(), pa.int64(): T.LongType(),
    pa.bool_(): T.BooleanType(), pa.float64(): T.DoubleType(),
}


def from_arrow(schema: pa.Schema) -> T.StructType:
    return T.StructType([T.StructField(f.name, _ARROW_TO_SPARK[f.type], True) for f in schema])


PRODUCE = from_arrow(ledger.PRODUCE_SCHEMA)
CONSUME = from_arrow(ledger.CONSUME_SCHEMA)
TIMELINE = from_arrow(timeline.TIMELINE_SCHEMA)

# One row per run: what summary.json records of the run's settings and load window.
RUNS = T.StructType([
    T.StructField("run_id", T.StringType()),
    T.StructField("scenario", T.StringType()),
    T.StructField("description", T.StringType()),
    T.StructField("acks", T.StringType()),
    T.StructField("replication_factor", T.LongType()),
    T.StructField("min_insync_replicas", T.LongType()),
    T.StructField("unclean_leader_election", T.BooleanType()),
    T.StructField("partitions", T.LongType()),
    T.StructField("message_size", T.LongType()),
    T.StructField("fault", T.StringType()),
    T.StructField("fault_schedule", T.ArrayType(T.StructType([
        T.StructField("kind", T.StringType()), T.StructField("target", T.StringType()),
        T.StructField("at_s", T.DoubleType()), T.StructField("heal_at_s", T.DoubleType())]))),
    T.StructField("load_start_ns", T.LongType()),
    T.StructField("measured_from_ns", T.LongType()),
    T.StructField("load_end_ns", T.LongType()),
    T.StructField("valid", T.BooleanType()),
    T.StructField("invalid_reasons", T.ArrayType(T.StringType())),
])

RUNS_SCALARS = T.StructType([f for f in RUNS.fields if not isinstance(f.dataType, T.ArrayType)])

# events.jsonl: the fields the analysis uses; other fields of an event are ignored.
EVENTS = T.StructType([
    T.StructField("run_id", T.StringType()),
    T.StructField("t_ns", T.LongType()),
    T.StructField("event", T.StringType()),
    T.StructField("fault_id", T.StringType()),
    T.StructField("kind", T.StringType()),
    T.StructField("broker", T.LongType()),
    T.StructField("reason", T.StringType()),
    T.StructField("at_ns", T.LongType()),
])


def check(df: DataFrame, expected: T.StructType, name: str) -> DataFrame:
    """`df` with exactly the expected columns, in order; a SchemaError naming every missing
    or mistyped column otherwise. Extra columns are dropped (a newer runner may add some)."""
    actual = {f.name: f.dataType for f in df.schema.fields}
    problems = []
    for field in expected.fields:
        if field.name not in actual:
            problems.append(f"missing column {field.name!r} ({field.dataType.simpleString()})")
        elif actual[field.name] != field.dataType:
            problems.append(f"column {field.name!r} is {actual[field.name].simpleString()}, "
                            f"expected {field.dataType.simpleString()}")
    if problems:
        raise SchemaError(f"{name}: " + "; ".join(problems))
    return df.select(*expected.names)
