"""What became of every message (`benchmarks.core.codes.STATUSES`), per message and per run."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from benchmarks.analysis import schemas
from benchmarks.analysis.exprs import UNBOUNDED, sum_if
from benchmarks.core.codes import FINAL_READ, OUTCOMES, STATUSES

_OUTCOME = {name: code for code, name in enumerate(OUTCOMES, start=1)}  # the 1-based codes of `_outcome`


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
    w = Window.partitionBy("_run", "read_partition", "producer").orderBy("read_offset").rowsBetween(UNBOUNDED, -1)
    read = codes.filter(F.col("copies") > 0)
    flagged = read.withColumn("_later_before", F.max("seq").over(w))
    return _per_run(flagged.groupBy("_run").agg(sum_if(F.col("seq") < F.col("_later_before")).alias("reordered")),
                    keys)


def counts(codes: DataFrame, keys: DataFrame) -> DataFrame:
    """Per run: sent, acked, failed, indeterminate, lost, unseen, duplicates, failed_delivered,
    indeterminate_delivered, unledgered. From `status_codes`."""
    s, o = F.col("_status"), F.col("_outcome")
    is_ = lambda name: s == STATUSES.index(name)  # noqa: E731
    return _per_run(codes.groupBy("_run").agg(
        sum_if(o.isNotNull()).alias("sent"), sum_if(o == _OUTCOME["acked"]).alias("acked"),
        sum_if(o == _OUTCOME["failed"]).alias("failed"), sum_if(o == _OUTCOME["indeterminate"]).alias("indeterminate"),
        sum_if(is_("lost")).alias("lost"), sum_if(is_("unseen")).alias("unseen"),
        F.sum(F.greatest(F.col("copies") - 1, F.lit(0))).cast("long").alias("duplicates"),
        sum_if(is_("failed-delivered")).alias("failed_delivered"),
        sum_if(is_("indeterminate-delivered")).alias("indeterminate_delivered"),
        sum_if(is_("unledgered")).alias("unledgered")), keys)


def lost_messages(codes: DataFrame, keys: DataFrame) -> DataFrame:
    """The acknowledged messages the log does not hold: run_id, status (lost / unseen),
    producer, seq, partition and offset of the ack. From `status_codes`."""
    missing = codes.filter(F.col("_status").isin(STATUSES.index("lost"), STATUSES.index("unseen")))
    return (decode_status(missing, keys)
            .select("run_id", "status", "producer", "seq", F.col("ack_partition").alias("partition"),
                    F.col("ack_offset").alias("offset")))
