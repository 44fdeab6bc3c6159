"""The per-message ledger: every produced message's outcome and every consumed record.

Rows are buffered and written as Parquet "parts" at least once a second (and whenever the
buffer fills). Each part is written to a temporary name and renamed, so a crash of the
writer loses at most the last second and never leaves a half-written file; parts are never
rewritten, so nothing of another run or another writer is ever overwritten.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

PRODUCE_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("producer", pa.int32()),
    ("seq", pa.int64()),
    ("key", pa.int32()),            # -1 when the message has no key
    ("intended_ns", pa.int64()),    # when the open-loop schedule meant to send it (wall clock)
    ("sent_ns", pa.int64()),        # when produce() accepted it
    ("ack_ns", pa.int64()),         # delivery report time; null when none came
    ("outcome", pa.string()),       # acked | failed | indeterminate
    ("partition", pa.int32()),      # null unless acked
    ("offset", pa.int64()),         # null unless acked
    ("error", pa.string()),         # librdkafka error name for failed / indeterminate
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
        self.columns: dict[str, list[Any]] = {name: [] for name in schema.names}
        self.rows = 0
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

    def append(self, *values: Any) -> None:
        """Append one row, values in schema order."""
        if not self.enabled:
            return
        for column, value in zip(self.columns.values(), values):
            column.append(value)
        self.rows += 1
        if self.rows >= self.max_rows:
            self.flush()

    def maybe_flush(self) -> None:
        if self.rows and self.clock() - self._last_flush >= self.flush_interval_s:
            self.flush()

    def flush(self) -> None:
        self._last_flush = self.clock()
        if self._error is not None:
            raise RuntimeError(f"ledger {self.directory}/{self.prefix}: writing a part failed") from self._error
        if not self.rows:
            return
        while True:
            final = self.directory / f"{self.prefix}-{next(self._parts):05d}.parquet"
            if not final.exists():
                break
        columns, self.columns = self.columns, {name: [] for name in self.schema.names}
        self.written += self.rows
        self.rows = 0
        if self._queue is not None:
            self._queue.put((columns, final))
        else:
            self._write(columns, final)

    def _write(self, columns: dict[str, list[Any]], final: Path) -> None:
        table = pa.table(columns, schema=self.schema)
        tmp = final.with_suffix(".parquet.tmp")
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, final)

    def _drain(self) -> None:
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
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
            if self._error is not None:
                raise RuntimeError(f"ledger {self.directory}/{self.prefix}: writing a part failed") from self._error


def read(directory: Path, schema: pa.Schema) -> pa.Table:
    """All parts of a ledger directory (ignoring temporary files of a crashed writer)."""
    parts = sorted(Path(directory).glob("*.parquet"))
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(pq.read_table(p, schema=schema) for p in parts)
