"""The per-message ledger: every produced message's outcome and every consumed record.

Rows are buffered and written as Parquet "parts" at least once a second (and whenever the
buffer fills). Each part is written to a temporary name and renamed, so a crash of the
writer loses at most the last second and never leaves a half-written file; parts are never
rewritten, so nothing of another run or another writer is ever overwritten.

When the run is over, `compact` merges each writer's parts into one file: an hour's run leaves
~20,000 parts of a few kilobytes, and every reader pays for each file it opens (the analysis of
a 66-minute run took half the time on the merged files). Readers take the files `current_files`
names: a writer's parts, or the one file merged from them once it is in place.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import queue
import re
import struct
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.core.codes import OUTCOMES

PRODUCE_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("producer", pa.int32()),
    ("seq", pa.int64()),
    ("key", pa.int32()),            # -1 when the message has no key
    ("intended_ns", pa.int64()),    # when the open-loop schedule meant to send it (wall clock); unthrottled: sent_ns
    ("sent_ns", pa.int64()),        # when produce() accepted it; null only without any delivery report
    ("ack_ns", pa.int64()),         # delivery report time; null when none came
    ("outcome", pa.string()),       # acked | failed | indeterminate
    ("partition", pa.int32()),      # null unless acked
    ("offset", pa.int64()),         # null unless acked
    ("error", pa.string()),         # librdkafka error name for failed / indeterminate
    ("cause", pa.string()),         # the last produce error of its partition behind a failed / indeterminate one
])

CONSUME_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("group", pa.string()),
    ("consumer", pa.string()),
    ("producer", pa.int32()),
    ("seq", pa.int64()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("sent_ns", pa.int64()),        # the producer's send time carried in the message
    ("consumed_ns", pa.int64()),
])

# One row per partition a consumer-group member was given or gave up (its rebalance callbacks):
# event assigned | revoked | lost (lost: taken away without a chance to commit, e.g. a session
# that expired). Under the classic eager protocol a rebalance revokes every partition of every
# member and assigns them again; under cooperative-sticky and the consumer protocol (KIP-848)
# only the partitions that move.
GROUP_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("group", pa.string()),
    ("consumer", pa.string()),
    ("t_ns", pa.int64()),
    ("event", pa.string()),
    ("partition", pa.int32()),
])

# One row per transaction of a transactional producer: its messages are seq first_seq to
# first_seq + messages - 1 of that producer (a transaction's messages are consecutive).
TXN_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("producer", pa.int32()),
    ("txn", pa.int64()),            # 0-based, per producer
    ("first_seq", pa.int64()),
    ("messages", pa.int64()),
    ("intent", pa.string()),        # commit | abort: what the seeded ratio chose
    ("fate", pa.string()),          # committed | aborted | unknown (benchmarks.core.codes.TXN_FATES)
    ("begin_ns", pa.int64()),       # its first message sent (wall clock)
    ("end_ns", pa.int64()),         # commit_transaction / abort_transaction returned or gave up
    ("error", pa.string()),         # why it did not end as intended (librdkafka error name: text)
])

# Outcome of a delivery report error, by librdkafka error name. Errors after which the write
# may still have reached the log are indeterminate: never counted as acked, never as failed.
INDETERMINATE_ERRORS = frozenset({
    "_MSG_TIMED_OUT", "_TIMED_OUT", "REQUEST_TIMED_OUT", "_TRANSPORT", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "_PURGE_INFLIGHT", "NETWORK_EXCEPTION",
})


def outcome_of(error_name: str | None) -> str:
    if error_name is None:
        return "acked"
    return "indeterminate" if error_name in INDETERMINATE_ERRORS else "failed"


def _encodings(schema: pa.Schema) -> dict[str, Any]:
    """How a ledger's Parquet files are written. Strings (few distinct values) as dictionaries;
    integers (sequence numbers, offsets, nanosecond times: close to their neighbours) as deltas.
    Against zstd alone, on a second of one producer's rows: about 40% less time to write, 44%
    fewer bytes. The Arrow schema is not stored: a reader sees plain strings and integers,
    whether a column arrived as a dictionary or not."""
    return {"compression": "zstd", "store_schema": False,
            "use_dictionary": [f.name for f in schema if pa.types.is_string(f.type)],
            "column_encoding": {f.name: "DELTA_BINARY_PACKED" for f in schema if pa.types.is_integer(f.type)}}


class LedgerWriter:
    """Buffers rows of one schema and writes Parquet parts under `directory/prefix-NNNNN.parquet`.

    With `background=True` a flush only hands the buffered rows to a writer thread, so the
    caller (a producer on its send schedule) does not stall while a part is encoded and
    compressed; parts keep their order and `close()` waits for all of them."""

    def __init__(self, directory: Path, prefix: str, schema: pa.Schema, flush_interval_s: float = 1.0,
                 max_rows: int = 200_000, clock: Callable[[], float] = time.monotonic, enabled: bool = True,
                 background: bool = False) -> None:
        self.directory = Path(directory)
        self.prefix = prefix
        self.schema = schema
        self.flush_interval_s = flush_interval_s
        self.max_rows = max_rows
        self.clock = clock
        self.enabled = enabled
        # Rows are kept as tuples in one list (one C-level append per row on the hot path); they
        # are turned into columns when a part is written, off the producer's thread if background.
        # (ProduceLedgerWriter keeps packed binary rows in a bytearray instead: hence Any.)
        self.buffer: Any = []
        self.written = 0
        self._parts = itertools.count()
        self._last_flush = clock()
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        if enabled:
            self.directory.mkdir(parents=True, exist_ok=True)
        if enabled and background:
            self._queue = queue.Queue()
            self._thread = threading.Thread(target=self._drain, name=f"ledger-{prefix}", daemon=True)
            self._thread.start()

    @property
    def rows(self) -> int:
        """Rows buffered, not yet handed to a part."""
        return len(self.buffer)

    def append(self, *values: Any) -> None:
        """Append one row, values in schema order."""
        if self.enabled:
            self.buffer.append(values)
            if self.rows >= self.max_rows:
                self.flush()

    def maybe_flush(self) -> None:
        if self.buffer and (self.rows >= self.max_rows or self.clock() - self._last_flush >= self.flush_interval_s):
            self.flush()

    def flush(self) -> None:
        self._last_flush = self.clock()
        if self._error is not None:
            raise RuntimeError(f"ledger {self.directory}/{self.prefix}: writing a part failed") from self._error
        if not self.buffer:
            return
        while True:
            final = self.directory / f"{self.prefix}-{next(self._parts):05d}.parquet"
            if not final.exists():
                break
        payload, rows = self._take()
        self.written += rows
        if self._queue is not None:
            self._queue.put((payload, final))
        else:
            self._write(payload, final)

    def _take(self) -> tuple[Any, int]:
        """The buffered rows (and how many), leaving the buffer empty but the same object."""
        rows = self.buffer[:]
        self.buffer.clear()
        return rows, len(rows)

    def _table(self, rows: Any) -> pa.Table:
        """A part's rows (what `_take` returned) as an Arrow table of the schema."""
        columns = zip(*rows)
        return pa.table({name: pa.array(column, type=field.type)
                         for name, field, column in zip(self.schema.names, self.schema, columns)}, schema=self.schema)

    def _write(self, payload: Any, final: Path) -> None:
        tmp = final.with_suffix(".parquet.tmp")
        pq.write_table(self._table(payload), tmp, **_encodings(self.schema))
        os.replace(tmp, final)

    def _drain(self) -> None:
        assert self._queue is not None  # started only with a queue
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                self._write(*item)
            except BaseException as exc:  # reported by the next flush or by close
                self._error = exc

    def close(self) -> None:
        self.flush()
        if self._thread is not None and self._queue is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
            if self._error is not None:
                raise RuntimeError(f"ledger {self.directory}/{self.prefix}: writing a part failed") from self._error




class ProduceLedgerWriter(LedgerWriter):
    """The produce ledger on the producer's hot path: a delivery report becomes one packed
    binary row (struct.pack, a single C call) appended to a bytearray; the background thread
    turns a part's rows into Arrow columns with numpy, without a Python step per value.

    Nulls travel as sentinels: ack_ns 0, partition -1, offset -1, error and cause code -1;
    outcomes and error names as small integer codes (`OUTCOMES`, `error_code`; one table for
    errors and causes)."""

    ROW = struct.Struct("<qiqqqiqbhh")  # seq, key, intended, sent, ack, partition, offset, outcome, error, cause
    FIELDS = ("seq", "key", "intended_ns", "sent_ns", "ack_ns", "partition", "offset", "outcome", "error", "cause")

    def __init__(self, directory: Path, prefix: str, run_id: str, producer: int, **options: Any) -> None:
        super().__init__(directory, prefix, PRODUCE_SCHEMA, background=True, **options)
        self.buffer = bytearray()
        self.run_id, self.producer = run_id, producer
        self.error_names: list[str] = []
        self._error_codes: dict[str, int] = {}

    @property
    def rows(self) -> int:
        return len(self.buffer) // self.ROW.size

    def row_sink(self) -> Callable[[bytes], None]:
        """The hot path: extends the buffer with one packed row, `sink(ROW.pack(...))`. No size
        check, so call maybe_flush() every few dozen rows."""
        return self.buffer.extend if self.enabled else (lambda row: None)

    def error_code(self, name: str) -> int:
        code = self._error_codes.get(name)
        if code is None:
            code = self._error_codes[name] = len(self.error_names)
            self.error_names.append(name)
        return code

    def append(self, *values: Any) -> None:
        """A row in schema order (the slow path, for the rare row without a delivery report)."""
        run_id, producer, seq, key, intended, sent, ack, outcome, partition, offset, error, cause = values
        if self.enabled:
            self.buffer.extend(self.ROW.pack(seq, key, intended or 0, sent or 0, ack or 0,
                                             -1 if partition is None else partition, -1 if offset is None else offset,
                                             OUTCOMES.index(outcome), -1 if error is None else self.error_code(error),
                                             -1 if cause is None else self.error_code(cause)))
            if self.rows >= self.max_rows:
                self.flush()

    def _take(self) -> tuple[Any, int]:
        data = bytes(self.buffer)
        self.buffer.clear()
        return (data, list(self.error_names)), len(data) // self.ROW.size

    def _table(self, payload: tuple[bytes, list[str]]) -> pa.Table:
        import numpy as np

        data, error_names = payload
        codes = ("<i8", "<i4", "<i8", "<i8", "<i8", "<i4", "<i8", "i1", "<i2", "<i2")
        dtype = np.dtype(list(zip(self.FIELDS, codes)))
        rows = np.frombuffer(data, dtype=dtype)
        n = len(rows)

        def column(name: str, null: int | None = None) -> pa.Array:
            values = np.ascontiguousarray(rows[name])
            return pa.array(values, mask=None if null is None else values == null)

        def lookup(names: list[str], codes: np.ndarray) -> pa.Array:
            # A dictionary column: the writer takes it as is, without hashing a string per row.
            codes = np.ascontiguousarray(codes)
            return pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), pa.array(names, pa.string()))

        return pa.table({  # not cast to PRODUCE_SCHEMA: its strings are these dictionaries
            "run_id": lookup([self.run_id], np.zeros(n, np.int8)), "producer": pa.array(np.full(n, self.producer, np.int32)),
            "seq": column("seq"), "key": column("key"), "intended_ns": column("intended_ns", 0),
            "sent_ns": column("sent_ns", 0), "ack_ns": column("ack_ns", 0), "outcome": lookup(list(OUTCOMES), rows["outcome"]),
            "partition": column("partition", -1), "offset": column("offset", -1),
            "error": lookup(error_names or [""], rows["error"]), "cause": lookup(error_names or [""], rows["cause"]),
        })


# A writer's part: `<prefix>-NNNNN.parquet`; the file merged from a writer's parts: `<prefix>.parquet`.
_PART = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5,})\.parquet$")
SUFFIX = ".parquet"


def current_files(names: Iterable[str]) -> list[str]:
    """Of the file names in a ledger directory, those a reader takes, sorted: every writer's
    parts, or the one file merged from them once it is in place (then parts of that writer left
    by a compaction cut short are not taken twice). Temporary files are never taken."""
    names = [n for n in names if n.endswith(SUFFIX)]
    merged = {n[:-len(SUFFIX)] for n in names if not _PART.match(n)}
    return sorted(n for n in names if not ((m := _PART.match(n)) and m["prefix"] in merged))


def read(directory: Path, schema: pa.Schema) -> pa.Table:
    """A ledger directory's rows (`current_files`)."""
    files = current_files(p.name for p in Path(directory).glob(f"*{SUFFIX}"))
    if not files:
        return schema.empty_table()
    return pa.concat_tables(pq.read_table(Path(directory) / f, schema=schema) for f in files)


@dataclasses.dataclass
class Compaction:
    """What `compact` did to a run directory's ledgers."""

    parts: int = 0          # parts merged (and removed)
    files: int = 0          # files written, one per writer
    bytes_before: int = 0   # the parts' size
    bytes_after: int = 0    # the merged files' size
    problems: list[str] = dataclasses.field(default_factory=list)  # writers left as parts, and why


def compact(root: Path, row_group_rows: int = 1 << 20) -> Compaction:
    """Merge every writer's parts under `root` (a run directory) into one file per writer,
    `<prefix>.parquet`, its rows in the parts' order. Safe to cut short and to run again: the
    merged file is written under a temporary name, checked (as many rows as its parts), and
    renamed into place in one step, from which on readers take it instead of the parts; only
    then are the parts removed. A writer whose merge fails keeps its parts (the reason is in
    `problems`): nothing is lost, its readers are only slower."""
    done = Compaction()
    writers: dict[tuple[Path, str], list[tuple[int, str]]] = {}  # (directory, prefix): (index, part name)
    for path in Path(root).rglob(f"*{SUFFIX}"):
        if m := _PART.match(path.name):
            writers.setdefault((path.parent, m["prefix"]), []).append((int(m["index"]), path.name))
    for (directory, prefix), indexed in sorted(writers.items()):
        parts = [name for _, name in sorted(indexed)]
        final = directory / f"{prefix}{SUFFIX}"
        try:
            if not final.exists():  # else a compaction cut short had put it in place: only its parts are left
                _merge(directory, parts, final, row_group_rows)
                done.files += 1
                done.bytes_after += final.stat().st_size
            for name in parts:
                done.bytes_before += (directory / name).stat().st_size
                (directory / name).unlink()
            done.parts += len(parts)
        except (OSError, pa.ArrowException) as exc:
            final.with_suffix(".parquet.tmp").unlink(missing_ok=True)
            done.problems.append(f"{directory / prefix}: {len(parts)} parts left as they are: {exc}")
    return done


def _merge(directory: Path, parts: list[str], final: Path, row_group_rows: int) -> None:
    """`parts` of one writer (in order) into `final`, through a temporary file; the merged rows
    are counted against the parts' before the rename."""
    tmp = final.with_suffix(".parquet.tmp")
    schema = pq.read_schema(directory / parts[0])
    expected = pending_rows = 0  # rows read from the parts; of them, not yet written
    pending: list[pa.Table] = []  # parts not yet written: at most about a row group's rows
    with pq.ParquetWriter(tmp, schema, **_encodings(schema)) as out:
        for name in parts:
            pending.append(pq.read_table(directory / name, schema=schema))
            expected += pending[-1].num_rows
            pending_rows += pending[-1].num_rows
            if pending_rows >= row_group_rows or name == parts[-1]:
                out.write_table(pa.concat_tables(pending), row_group_size=row_group_rows)
                pending, pending_rows = [], 0
    rows = pq.read_metadata(tmp).num_rows
    if rows != expected:
        raise OSError(f"{tmp}: {rows} rows written, {expected} in the parts")
    os.replace(tmp, final)
