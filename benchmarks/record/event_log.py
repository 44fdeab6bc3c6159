"""events.jsonl of a run: the typed events (`benchmarks.record.run_events`) the runner writes, one a line."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.record import run_events


class EventLog:
    """events.jsonl of a run: one typed event (`benchmarks.record.run_events`) per line, flushed at once,
    each stamped with the time it was written and its run."""

    def __init__(self, path: Path, run_id: str = "", clock: Callable[[], int] = time.time_ns) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.clock = clock
        self._lock = threading.Lock()

    def write(self, event: run_events.Event) -> run_events.Event:
        stamped = event.model_copy(update={"t_ns": self.clock(), "run_id": self.run_id})
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(stamped.model_dump_json() + "\n")
        return stamped

    def read(self) -> list[run_events.AnyEvent]:
        if not self.path.exists():
            return []
        return [run_events.EVENT.validate_json(line) for line in self.path.read_text().splitlines() if line.strip()]
