"""The per-message ledger: every produced message's outcome and every consumed record.

Rows are buffered and written as Parquet "parts" at least once a second (and whenever the
buffer fills). Each part is written to a temporary name and renamed, so a crash of the
writer loses at most the last second and never leaves a half-written file; parts are never
rewritten, so nothing of another run or another writer is ever overwritten.
"""

from __future__ import annotations

import itertools
import os
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
    """Buffers rows of one schema and writes Parquet parts under `directory/prefix-NNNNN.parquet`."""

    def __init__(self, directory: Path, prefix: str, schema: pa.Schema, flush_interval_s: float = 1.0,
                 max_rows: int = 200_000, clock: Callable[[], float] = time.monotonic, enabled: bool = True) -> None:
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
        if enabled:
            self.directory.mkdir(parents=True, exist_ok=True)

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
        if not self.rows:
            return
        table = pa.table(self.columns, schema=self.schema)
        while True:
            final = self.directory / f"{self.prefix}-{next(self._parts):05d}.parquet"
            if not final.exists():
                break
        tmp = final.with_suffix(".parquet.tmp")
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, final)
        self.written += self.rows
        self.columns = {name: [] for name in self.schema.names}
        self.rows = 0

    def close(self) -> None:
        self.flush()


def read(directory: Path, schema: pa.Schema) -> pa.Table:
    """All parts of a ledger directory (ignoring temporary files of a crashed writer)."""
    parts = sorted(Path(directory).glob("*.parquet"))
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(pq.read_table(p, schema=schema) for p in parts)
