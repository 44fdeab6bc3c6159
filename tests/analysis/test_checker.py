"""One definition of lost, unseen, duplicate and reordered: the single-run checker (numpy, used
by the runner and `cluster smoke`) and the Spark jobs agree on the same ledgers."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks.analysis import inputs, metrics
from benchmarks.check import checker
from benchmarks.perf import ledger_synth
from benchmarks.record import ledger
from tests.analysis import ledgers

pytestmark = pytest.mark.spark

COMPARED = ("sent", "acked", "failed", "indeterminate", "lost", "unseen", "duplicates", "failed_delivered",
            "indeterminate_delivered", "unledgered")


def spark_counts(produce, consume) -> dict[str, int]:
    codes = metrics.status_codes(produce, consume)
    keys = metrics.run_keys(produce)
    [row] = metrics.counts(codes, keys).collect()
    [reordered] = metrics.reordered(codes, keys).collect()
    return {**{c: row[c] for c in COMPARED}, "reordered": reordered["reordered"]}


def checked(produce: pa.Table, consume: pa.Table) -> dict[str, int]:
    verdict, _ = checker.check_run(produce, consume)
    return {c: getattr(verdict, c) for c in (*COMPARED, "reordered")}


def test_the_hand_built_run(spark):
    _, _, produce, consume, _ = ledgers.frames(spark)
    expected = spark_counts(produce, consume)
    assert expected == {"sent": 16, "acked": 13, "failed": 2, "indeterminate": 1, "lost": 1, "unseen": 1,
                        "duplicates": 1, "failed_delivered": 1, "indeterminate_delivered": 1, "unledgered": 0,
                        "reordered": 1}
    got = checked(pa.Table.from_pylist([r.asDict() for r in produce.collect()], ledger.PRODUCE_SCHEMA),
                  pa.Table.from_pylist([r.asDict() for r in consume.collect()], ledger.CONSUME_SCHEMA))
    assert got == expected
    verdict, groups = checker.check_run(
        pa.Table.from_pylist([r.asDict() for r in produce.collect()], ledger.PRODUCE_SCHEMA),
        pa.Table.from_pylist([r.asDict() for r in consume.collect()], ledger.CONSUME_SCHEMA))
    assert verdict.missing_ids == ["0:3", "0:13"] and verdict.acked_lost == 2
    assert groups == {"g": 3}


def test_a_synthetic_run_with_loss_duplicates_and_reordering(spark, tmp_path):
    run_dir = ledger_synth.generate(tmp_path, 100_000, seed=3)
    data = inputs.read(spark, str(run_dir))
    expected = spark_counts(data.produce, data.consume)
    assert expected["lost"] > 0 and expected["duplicates"] > 0 and expected["indeterminate_delivered"] > 0
    got = checked(ledger.read(run_dir / "ledger" / "produce", ledger.PRODUCE_SCHEMA),
                  ledger.read(run_dir / "ledger" / "consume", ledger.CONSUME_SCHEMA))
    assert got == expected


def test_merged_ledgers_are_read_once_even_beside_parts_a_compaction_cut_short_left(spark, tmp_path):
    run_dir = ledger_synth.generate(tmp_path, 20_000, seed=5)
    for sub in ("produce", "consume"):  # in parts of 3,000 rows, as a writer would leave them
        directory = run_dir / "ledger" / sub
        table = ledger.read(directory, ledger.PRODUCE_SCHEMA if sub == "produce" else ledger.CONSUME_SCHEMA)
        for part in directory.glob("*.parquet"):
            part.unlink()
        for index, start in enumerate(range(0, table.num_rows, 3_000)):
            pq.write_table(table.slice(start, 3_000), directory / f"{sub}-{index:05d}.parquet")
    data = inputs.read(spark, str(run_dir))
    before = spark_counts(data.produce, data.consume)
    leftover = (run_dir / "ledger" / "produce" / "produce-00002.parquet").read_bytes()
    assert ledger.compact(run_dir).files == 3  # produce, consume and the timeline
    (run_dir / "ledger" / "produce" / "produce-00002.parquet").write_bytes(leftover)  # cut short before its removal
    data = inputs.read(spark, str(run_dir))
    assert data.produce.count() == 20_000 and spark_counts(data.produce, data.consume) == before


def test_an_ack_without_an_offset_is_unseen_not_lost():
    """acks=0: the client learns no offset; a later read offset proves nothing about it."""
    produce = pa.Table.from_pylist([
        {"run_id": "r", "producer": 0, "seq": 0, "outcome": "acked", "partition": 0, "offset": None},
        {"run_id": "r", "producer": 0, "seq": 1, "outcome": "acked", "partition": 0, "offset": 5}], ledger.PRODUCE_SCHEMA)
    final = pa.Table.from_pylist([{"run_id": "r", "group": "final-read", "producer": 0, "seq": 1, "partition": 0,
                                   "offset": 5}], ledger.CONSUME_SCHEMA)
    verdict = checker.check(produce, final)
    assert (verdict.lost, verdict.unseen, verdict.final_read) == (0, 1, 1)
