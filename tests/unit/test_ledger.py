"""The ledger writer's guarantees, with an injected clock."""

from __future__ import annotations

import pyarrow.parquet as pq

from benchmarks.record import ledger


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def row(seq, outcome="acked"):
    return ("run", 0, seq, 3, 10, 11, 12, outcome, 1 if outcome == "acked" else None, seq, None, None)


def test_parts_are_written_at_least_once_a_second(tmp_path):
    clock = Clock()
    writer = ledger.LedgerWriter(tmp_path, "producer-000", ledger.PRODUCE_SCHEMA, clock=clock)
    writer.append(*row(0))
    clock.now = 0.5
    writer.maybe_flush()
    assert list(tmp_path.glob("*.parquet")) == [], "flushed before the interval"
    clock.now = 1.0
    writer.maybe_flush()
    assert [p.name for p in tmp_path.glob("*.parquet")] == ["producer-000-00000.parquet"]
    writer.append(*row(1, "indeterminate"))
    writer.close()
    table = ledger.read(tmp_path, ledger.PRODUCE_SCHEMA)
    assert table.column("seq").to_pylist() == [0, 1]
    assert table.column("outcome").to_pylist() == ["acked", "indeterminate"]
    assert table.column("partition").to_pylist() == [1, None]


def test_a_new_writer_never_overwrites_existing_parts_and_temp_files_are_ignored(tmp_path):
    first = ledger.LedgerWriter(tmp_path, "producer-000", ledger.PRODUCE_SCHEMA)
    first.append(*row(0))
    first.close()
    (tmp_path / "producer-000-00009.parquet.tmp").write_bytes(b"half a file from a crash")
    second = ledger.LedgerWriter(tmp_path, "producer-000", ledger.PRODUCE_SCHEMA)
    second.append(*row(1))
    second.close()
    assert sorted(p.name for p in tmp_path.glob("*.parquet")) == ["producer-000-00000.parquet", "producer-000-00001.parquet"]
    assert sorted(ledger.read(tmp_path, ledger.PRODUCE_SCHEMA).column("seq").to_pylist()) == [0, 1]


def test_background_writer_keeps_part_order_and_waits_on_close(tmp_path):
    writer = ledger.LedgerWriter(tmp_path, "producer-001", ledger.PRODUCE_SCHEMA, background=True, max_rows=10)
    for seq in range(95):
        writer.append(*row(seq))
    writer.close()
    parts = sorted(p.name for p in tmp_path.glob("*.parquet"))
    assert len(parts) == 10 and not list(tmp_path.glob("*.tmp"))
    assert ledger.read(tmp_path, ledger.PRODUCE_SCHEMA).column("seq").to_pylist() == list(range(95))


def test_buffer_limit_forces_a_flush(tmp_path):
    writer = ledger.LedgerWriter(tmp_path, "c", ledger.PRODUCE_SCHEMA, max_rows=3)
    for seq in range(7):
        writer.append(*row(seq))
    assert writer.written == 6 and writer.rows == 1


def test_disabled_writer_writes_nothing(tmp_path):
    writer = ledger.LedgerWriter(tmp_path / "off", "p", ledger.PRODUCE_SCHEMA, enabled=False)
    writer.append(*row(0))
    writer.close()
    assert not (tmp_path / "off").exists()


def test_outcomes_of_delivery_errors():
    assert ledger.outcome_of(None) == "acked"
    assert ledger.outcome_of("_MSG_TIMED_OUT") == "indeterminate"
    assert ledger.outcome_of("NOT_ENOUGH_REPLICAS_AFTER_APPEND") == "indeterminate"
    assert ledger.outcome_of("NOT_ENOUGH_REPLICAS") == "failed"
    assert ledger.outcome_of("_UNKNOWN_PARTITION") == "failed"


def test_packed_produce_rows_read_back_with_their_nulls(tmp_path):
    out = ledger.ProduceLedgerWriter(tmp_path, "producer-000", "run-1", 3)
    sink, pack = out.row_sink(), out.ROW.pack
    sink(pack(0, 5, 100, 101, 150, 2, 7, 0, -1, -1))                                   # acked
    sink(pack(1, 6, 200, 201, 260, -1, -1, 1, out.error_code("NOT_ENOUGH_REPLICAS"), -1))  # failed
    sink(pack(2, 7, 300, 301, 0, -1, -1, 2, out.error_code("_MSG_TIMED_OUT"),          # timed out, no ack time,
              out.error_code("NOT_ENOUGH_REPLICAS")))                                  # the broker's refusal behind it
    out.append("run-1", 3, 3, -1, 400, None, None, "indeterminate", None, None, "_NO_REPORT", None)
    out.close()
    rows = ledger.read(tmp_path, ledger.PRODUCE_SCHEMA).to_pylist()
    assert rows == [
        {"run_id": "run-1", "producer": 3, "seq": 0, "key": 5, "intended_ns": 100, "sent_ns": 101, "ack_ns": 150,
         "outcome": "acked", "partition": 2, "offset": 7, "error": None, "cause": None},
        {"run_id": "run-1", "producer": 3, "seq": 1, "key": 6, "intended_ns": 200, "sent_ns": 201, "ack_ns": 260,
         "outcome": "failed", "partition": None, "offset": None, "error": "NOT_ENOUGH_REPLICAS",
         "cause": None},
        {"run_id": "run-1", "producer": 3, "seq": 2, "key": 7, "intended_ns": 300, "sent_ns": 301, "ack_ns": None,
         "outcome": "indeterminate", "partition": None, "offset": None, "error": "_MSG_TIMED_OUT",
         "cause": "NOT_ENOUGH_REPLICAS"},
        {"run_id": "run-1", "producer": 3, "seq": 3, "key": -1, "intended_ns": 400, "sent_ns": None, "ack_ns": None,
         "outcome": "indeterminate", "partition": None, "offset": None, "error": "_NO_REPORT",
         "cause": None},
    ]


def test_parts_are_plain_parquet_with_compact_encodings(tmp_path):
    """Any reader (Spark, DuckDB, pandas) sees the ledger schema's plain strings and integers,
    stored as dictionaries and deltas."""
    out = ledger.ProduceLedgerWriter(tmp_path, "producer-000", "run-1", 0)
    sink, pack = out.row_sink(), out.ROW.pack
    for seq in range(1000):
        sink(pack(seq, seq % 8, 1_000 + seq, 1_010 + seq, 5_000 + seq, seq % 3, seq // 3, 0, -1, -1))
    out.close()
    [part] = tmp_path.glob("*.parquet")
    assert pq.read_table(part).schema == ledger.PRODUCE_SCHEMA  # no schema given: no dictionary types
    columns = pq.ParquetFile(part).metadata.row_group(0)
    encodings = {columns.column(i).path_in_schema: set(columns.column(i).encodings) for i in range(columns.num_columns)}
    assert "DELTA_BINARY_PACKED" in encodings["sent_ns"] and "DELTA_BINARY_PACKED" in encodings["offset"]
    assert {"RLE_DICTIONARY"} & encodings["run_id"] and {"RLE_DICTIONARY"} & encodings["outcome"]


def write_parts(directory, prefix, seqs, max_rows=10):
    writer = ledger.LedgerWriter(directory, prefix, ledger.PRODUCE_SCHEMA, max_rows=max_rows)
    for seq in seqs:
        writer.append(*row(seq))
    writer.close()


def names(directory):
    return sorted(p.name for p in directory.iterdir())


def test_compaction_merges_each_writers_parts_into_one_file_in_order(tmp_path):
    produce, timeline = tmp_path / "ledger" / "produce", tmp_path / "timeline"
    write_parts(produce, "producer-000", range(95))
    write_parts(produce, "producer-001", range(1000, 1023))
    (produce / "producer-000.json").write_text("{}")
    write_parts(timeline, "timeline", range(5))
    before = ledger.read(produce, ledger.PRODUCE_SCHEMA)
    done = ledger.compact(tmp_path, row_group_rows=40)
    assert names(produce) == ["producer-000.json", "producer-000.parquet", "producer-001.parquet"]
    assert names(timeline) == ["timeline.parquet"]
    assert (done.parts, done.files, done.problems) == (10 + 3 + 1, 3, [])
    assert 0 < done.bytes_after < done.bytes_before
    assert ledger.read(produce, ledger.PRODUCE_SCHEMA).equals(before)
    merged = pq.ParquetFile(produce / "producer-000.parquet")
    assert [merged.metadata.row_group(i).num_rows for i in range(merged.num_row_groups)] == [40, 40, 15]
    assert merged.schema_arrow == ledger.PRODUCE_SCHEMA  # plain strings and integers, as the parts
    again = ledger.compact(tmp_path)
    assert (again.parts, again.files) == (0, 0) and names(produce)[1:] == ["producer-000.parquet", "producer-001.parquet"]


def test_a_compaction_cut_short_is_never_read_twice_and_finishes_when_run_again(tmp_path):
    run, scratch = tmp_path / "run", tmp_path / "scratch"
    write_parts(run, "producer-000", range(30))
    parts = names(run)
    ledger.compact(run)
    merged = (run / "producer-000.parquet").read_bytes()
    # Cut short after the rename: the merged file and (some of) its parts.
    write_parts(scratch, "producer-000", range(30))
    for part in parts[1:]:
        (scratch / part).replace(run / part)
    assert ledger.current_files(names(run)) == ["producer-000.parquet"]
    assert ledger.read(run, ledger.PRODUCE_SCHEMA).column("seq").to_pylist() == list(range(30))
    done = ledger.compact(run)
    assert (done.parts, done.files) == (2, 0) and names(run) == ["producer-000.parquet"]
    assert (run / "producer-000.parquet").read_bytes() == merged
    # Cut short before the rename: a temporary file beside the parts, never read.
    other = tmp_path / "other"
    write_parts(other, "producer-000", range(30))
    (other / "producer-000.parquet.tmp").write_bytes(b"half a merged file")
    assert ledger.read(other, ledger.PRODUCE_SCHEMA).num_rows == 30
    assert ledger.compact(other).files == 1 and names(other) == ["producer-000.parquet"]
    assert ledger.read(other, ledger.PRODUCE_SCHEMA).column("seq").to_pylist() == list(range(30))


def test_a_writer_whose_parts_cannot_be_merged_keeps_them(tmp_path):
    write_parts(tmp_path, "producer-000", range(25))
    write_parts(tmp_path, "producer-001", range(25))
    (tmp_path / "producer-001-00001.parquet").write_bytes(b"not parquet")
    done = ledger.compact(tmp_path)
    assert done.files == 1 and len(done.problems) == 1 and "producer-001: 3 parts left as they are" in done.problems[0]
    assert names(tmp_path) == ["producer-000.parquet", "producer-001-00000.parquet", "producer-001-00001.parquet",
                               "producer-001-00002.parquet"]


def test_current_files_take_a_merged_file_instead_of_its_parts():
    assert ledger.current_files(["a-00000.parquet", "a-00001.parquet", "a.parquet", "b-00000.parquet",
                                 "b-100000.parquet", "c.parquet.tmp", "a.json", "producer-000.parquet"]) == [
        "a.parquet", "b-00000.parquet", "b-100000.parquet", "producer-000.parquet"]
