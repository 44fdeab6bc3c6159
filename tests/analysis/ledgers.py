"""A hand-built run whose every metric is known: one run of 10 s, two partitions, RF 3,
min ISR 2, broker 1 (leader of partition 0) killed at 4 s and back at 7 s.

Timestamps are seconds after T0 (converted to ns exactly). What the ledgers hold:
- producer 0 seq 3 acked at p0/2, never read while p0/3 was: lost;
- producer 0 seq 13 acked at p0/6, the last offset, not read: unseen;
- producer 1 seq 3 acked and read (same seq as the lost one: ids are (producer, seq));
- producer 0 seq 5 in the log twice (p1/2 and p1/3): one duplicate;
- producer 0 seq 12 at p1/6 before seq 11 at p1/7: one reordered;
- seq 6 failed, not in the log; seq 8 failed but in the log; seq 7 timed out but in the log;
- no ack to p0 from 3.01 s to 7.5 s and to p1 from 3.4 s to 8.01 s;
- p1's ISR below min ISR from 5 to 8 s, its high watermark standing still from 5 to 7 s."""

from __future__ import annotations

from benchmarks.analysis import schemas

T0 = 1_000_000_000_000_000_000
RUN = "r1"


def ns(seconds: float | None) -> int | None:
    return None if seconds is None else T0 + round(seconds * 1e9)


# (producer, seq, intended, sent, ack, outcome, partition, offset, error)
PRODUCED = [
    (0, 0, 0.5, 0.5, 0.51, "acked", 0, 0, None),
    (1, 0, 0.6, 0.6, 0.62, "acked", 1, 0, None),
    (0, 1, 1.5, 1.5, 1.52, "acked", 0, 1, None),
    (0, 2, 2.0, 2.0, 2.03, "acked", 1, 1, None),
    (0, 3, 2.5, 2.5, 2.6, "acked", 0, 2, None),
    (0, 4, 3.0, 3.0, 3.01, "acked", 0, 3, None),
    (0, 5, 3.35, 3.35, 3.4, "acked", 1, 2, None),
    (0, 6, 4.5, 4.5, 6.5, "failed", None, None, "NOT_ENOUGH_REPLICAS"),
    (0, 7, 5.0, 5.0, None, "indeterminate", None, None, "_MSG_TIMED_OUT"),
    (0, 8, 5.5, 5.5, 6.6, "failed", None, None, "NOT_ENOUGH_REPLICAS"),
    (0, 9, 6.0, 6.0, 7.5, "acked", 0, 5, None),
    (0, 10, 8.0, 8.0, 8.01, "acked", 1, 5, None),
    (0, 11, 8.5, 8.5, 8.6, "acked", 1, 7, None),
    (0, 12, 8.52, 8.52, 8.55, "acked", 1, 6, None),
    (0, 13, 9.0, 9.0, 9.02, "acked", 0, 6, None),
    (1, 3, 9.5, 9.5, 9.51, "acked", 1, 8, None),
]

# The broker error behind a message the client gave up on: (producer, seq) -> cause
CAUSES = {(0, 7): "NOT_ENOUGH_REPLICAS"}

# The final read: (producer, seq, partition, offset)
FINAL_READ = [
    (0, 0, 0, 0), (0, 1, 0, 1), (0, 4, 0, 3), (0, 8, 0, 4), (0, 9, 0, 5),
    (1, 0, 1, 0), (0, 2, 1, 1), (0, 5, 1, 2), (0, 5, 1, 3), (0, 7, 1, 4), (0, 10, 1, 5), (0, 12, 1, 6),
    (0, 11, 1, 7), (1, 3, 1, 8),
]
# A consumer group: (producer, seq, partition, offset, sent, consumed)
CONSUMED = [(0, 1, 0, 1, 1.5, 1.6), (0, 4, 0, 3, 3.0, 3.05), (0, 9, 0, 5, 6.0, 7.6)]


def _isr_p0(t: int) -> tuple[int | None, str]:
    if t <= 4:
        return 1, "1,2,3"
    if t == 5:
        return None, "2,3"
    return 2, ("2,3" if t < 8 else "2,3,1")


def _isr_p1(t: int) -> tuple[int | None, str]:
    return 2, ("2" if 5 <= t <= 7 else "2,3,1")


def _hw(partition: int, t: int) -> int | None:
    """Partition 1's high watermark stands at 3 while its ISR is below min ISR (5 to 7 s), then
    jumps to 9; partition 0's is unknown (its leader never answered ListOffsets)."""
    return None if partition == 0 else (3 if t <= 7 else 9)


def event(t_ns: int, name: str, **fields) -> tuple:
    """A row of events.jsonl as the analysis reads it (schemas.EVENTS), of the hand-built run."""
    row = {"run_id": RUN, "t_ns": t_ns, "event": name, **fields}
    unknown = set(row) - set(schemas.EVENTS.names)
    assert not unknown, f"not in schemas.EVENTS: {sorted(unknown)}"
    return tuple(row.get(field) for field in schemas.EVENTS.names)


def frames(spark):
    """(runs, events, produce, consume, timeline) DataFrames of the run."""
    runs = spark.createDataFrame([(RUN, "hand-built", "a hand-built run", "kraft", "4.3.1", True, "plaintext", "all", 3, 2,
                                   False, 2, 100,
                                   "broker-kill (leader of 0) at 3 s",
                                   [{"kind": "broker-kill", "target": "leader of 0", "at_s": 3.0, "heal_at_s": None}],
                                   ns(0), ns(1), 10.0, ns(10), True, [], 1, False, None, 0.9, None, [], True)], schemas.RUNS)
    events = spark.createDataFrame([
        event(ns(0), "run-start"),
        event(ns(3.9), "fault-intent", fault_id="f1", kind="broker-kill", broker=1, reason="leader of 0",
              scheduled_ns=ns(3)),
        event(ns(4.2), "fault-injected", fault_id="f1", at_ns=ns(4)),
        event(ns(7.1), "fault-healed", fault_id="f1", at_ns=ns(7)),
    ], schemas.EVENTS)
    produce = spark.createDataFrame(
        [(RUN, p, s, -1, ns(i), ns(se), ns(a), o, part, off, e, CAUSES.get((p, s)))
         for p, s, i, se, a, o, part, off, e in PRODUCED],
        schemas.PRODUCE)
    consume = spark.createDataFrame(
        [(RUN, "final-read", "final", p, s, part, off, None, ns(11)) for p, s, part, off in FINAL_READ]
        + [(RUN, "g", "c0", p, s, part, off, ns(se), ns(c)) for p, s, part, off, se, c in CONSUMED],
        schemas.CONSUME)
    samples = []
    for t in range(11):
        for partition, state, replicas in ((0, _isr_p0(t), "1,2,3"), (1, _isr_p1(t), "2,3,1")):
            samples.append((RUN, ns(t), 2, "1,2,3", partition, state[0], replicas, state[1], None, 7, "", "", None,
                            _hw(partition, t), None))
    timeline = spark.createDataFrame(samples, schemas.TIMELINE)
    return runs, events, produce, consume, timeline


# The acknowledged writes the run loses (lost, unseen): (producer, seq)
LOST = ((0, 3), (0, 13))


def write_run_dir(spark, directory, run_id: str = RUN, trial: int = 1, loses: bool = True,
                  expect_loss: bool = False) -> None:
    """The hand-built run as `kafka-bench run` lays it out on disk; as run `run_id`, the
    configuration's `trial`, without its two lost writes (never sent) unless `loses`, and as a
    negative control with `expect_loss`."""
    import json

    from pyspark.sql import functions as F

    runs, events, produce, consume, timeline = (df.withColumn("run_id", F.lit(run_id)) for df in frames(spark))
    runs = runs.withColumn("trial", F.lit(trial)).withColumn("expect_loss", F.lit(expect_loss))
    if not loses:
        for producer, seq in LOST:
            produce = produce.filter((F.col("producer") != producer) | (F.col("seq") != seq))
    directory.mkdir(parents=True)
    (directory / "summary.json").write_text(json.dumps(runs.first().asDict()))
    with open(directory / "events.jsonl", "w", encoding="utf-8") as handle:
        for row in events.collect():
            handle.write(json.dumps({k: v for k, v in row.asDict().items() if v is not None}) + "\n")
    produce.coalesce(1).write.parquet(str(directory / "ledger" / "produce"))
    consume.coalesce(1).write.parquet(str(directory / "ledger" / "consume"))
    timeline.coalesce(1).write.parquet(str(directory / "timeline"))
