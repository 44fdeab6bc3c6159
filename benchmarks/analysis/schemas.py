"""What every analysis job expects of its inputs, checked at entry.

The ledgers' Spark schemas are derived from the Parquet schemas the runner writes
(`benchmarks.record.ledger`, `benchmarks.harness.timeline`), the runs' and events' from the records the
runner writes (`benchmarks.record.records`, `benchmarks.record.run_events`): neither can drift apart from its writer."""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

import pyarrow as pa
from pydantic import BaseModel
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from benchmarks.analysis.contract import SchemaError
from benchmarks.record import ledger, records, run_events, timeline_schema

_ARROW_TO_SPARK = {
    pa.string(): T.StringType(), pa.int32(): T.IntegerType(), pa.int64(): T.LongType(),
    pa.bool_(): T.BooleanType(), pa.float64(): T.DoubleType(),
}


def from_arrow(schema: pa.Schema) -> T.StructType:
    return T.StructType([T.StructField(f.name, _ARROW_TO_SPARK[f.type], True) for f in schema])


PRODUCE = from_arrow(ledger.PRODUCE_SCHEMA)
CONSUME = from_arrow(ledger.CONSUME_SCHEMA)
# The timeline's columns the analysis reads. Those of KRaft clusters and the high watermark are
# absent from runs of older versions: the input edge adds them as nulls (`TIMELINE_NEWER`).
TIMELINE = from_arrow(timeline_schema.TIMELINE_SCHEMA)
TIMELINE_NEWER = tuple(f.name for f in timeline_schema.TIMELINE_KRAFT_FIELDS + timeline_schema.TIMELINE_HW_FIELDS
                       + timeline_schema.TIMELINE_TXN_FIELDS)
# Consumer-group members' assignment changes (ledger/group; absent from runs of older versions).
GROUP = from_arrow(ledger.GROUP_SCHEMA)
# A transactional run's transactions (ledger/txn); no such file in other runs.
TXN = from_arrow(ledger.TXN_SCHEMA)

_PYTHON_TO_SPARK = {str: T.StringType(), int: T.LongType(), float: T.DoubleType(), bool: T.BooleanType()}


def _spark_type(annotation: Any) -> T.DataType:
    """The Spark type of a records field: scalars, optional scalars, lists of scalars or records."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    origin = get_origin(annotation)
    if origin is Literal:  # an event's name
        return _PYTHON_TO_SPARK[type(args[0])]
    if origin is list:
        return T.ArrayType(_spark_type(args[0]))
    if args and origin is not dict:  # X | None
        return _spark_type(args[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return from_model(annotation, list(annotation.model_fields))
    return _PYTHON_TO_SPARK[annotation]


def from_model(model: type[BaseModel], names: list[str]) -> T.StructType:
    """The Spark schema of the named fields of a record model (`benchmarks.record.records`, `benchmarks.record.run_events`)."""
    return T.StructType([T.StructField(n, _spark_type(model.model_fields[n].annotation), True) for n in names])


def from_events(names: list[str]) -> T.StructType:
    """The named fields over every kind of event (a field an event lacks is null in its row)."""
    fields: dict[str, Any] = {}
    for model in get_args(get_args(run_events.AnyEvent)[0]):
        for name, info in model.model_fields.items():
            fields.setdefault(name, info.annotation)
    return T.StructType([T.StructField(n, _spark_type(fields[n]), True) for n in names])


# One row per run: what summary.json records of the run's settings and load window.
RUNS = from_model(records.RunSummary, [
    "run_id", "scenario", "description", "metadata_mode", "kafka_version", "eligible_leader_replicas", "security",
    "acks", "replication_factor", "min_insync_replicas", "unclean_leader_election",
    "partitions", "message_size", "fault", "fault_schedule", "load_start_ns", "measured_from_ns", "warm_p50_ms",
    "load_end_ns", "valid", "invalid_reasons", "trial", "expect_loss", "transactions", "broker_cpu_s", "sweep_of",
    "sweep_point", "checked"])

# The fields every summary.json must hold with a type Spark can infer: not the lists, and not
# those absent from runs of older versions: warm_p50_ms (also null for an unthrottled load; the
# steadiness is then judged without the level test), metadata_mode, kafka_version and
# eligible_leader_replicas (also null on ZooKeeper), trial (the analysis counts such a run as one),
# expect_loss (no such run is a negative control), transactions (null but in exactly-once runs),
# security (a run before client profiles: plaintext), broker_cpu_s (also null where the brokers'
# processes cannot be read), sweep_of (also null for a run of no sweep), checked (a run before failed
# runs were summarized: checked).
NEWER_RUN_FIELDS = ("warm_p50_ms", "metadata_mode", "kafka_version", "eligible_leader_replicas", "trial",
                    "expect_loss", "transactions", "security", "broker_cpu_s", "sweep_of", "checked")
RUNS_SCALARS = T.StructType([f for f in RUNS.fields
                             if not isinstance(f.dataType, T.ArrayType) and f.name not in NEWER_RUN_FIELDS])

# events.jsonl: the fields the analysis uses; other fields of an event are ignored.
EVENTS = from_events(["run_id", "t_ns", "event", "fault_id", "kind", "broker", "reason", "at_ns",
                      "procedure_id", "procedure", "play", "host", "play_id", "ok", "step", "scheduled_ns", "made_up_by"])


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
