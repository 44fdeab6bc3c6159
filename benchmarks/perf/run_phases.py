"""Where a suite's runs spend their wall time, read from the events each run wrote.

Every run directory holds events.jsonl (benchmarks.record.run_events), each event stamped when it
was written. The time from one event to the next is the step the later one ends: the seconds
before `produce-path-warm` are the warm-up, those before `load-end` the load, those before
the second `healed` the heal after the run. This sums them per step over the runs given and
prints each run's own total, so a suite's slow steps (a warm-up waiting out a cold broker,
a heal running start.yml) stand out without reading every run.

    python -m benchmarks.perf.run_phases results/<time>-seeds [more run or suite directories]
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from benchmarks.perf import sum_by
from benchmarks.record.event_log import EventLog

EVENTS = "events.jsonl"


@dataclasses.dataclass(frozen=True)
class Step:
    """The time from one event of a run to the next, named by the event that ends it."""

    run: str
    ends_with: str
    seconds: float


def steps(run_dir: Path) -> list[Step]:
    """The run's steps, in the order it wrote its events."""
    events = EventLog(run_dir / EVENTS).read()
    return [Step(run_dir.name, later.event, (later.t_ns - earlier.t_ns) / 1e9)
            for earlier, later in zip(events, events[1:])]


def run_dirs(paths: Sequence[Path]) -> list[Path]:
    """The run directories given, or found one level under the suite directories given."""
    found: list[Path] = []
    for path in paths:
        if (path / EVENTS).is_file():
            found.append(path)
        else:
            found.extend(sorted(p.parent for p in path.glob(f"*/{EVENTS}")))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="run directories, or suite directories holding them")
    args = parser.parse_args(argv)
    dirs = run_dirs(args.dirs)
    if not dirs:
        parser.error(f"no {EVENTS} in or under {', '.join(map(str, args.dirs))}")
    every = [step for d in dirs for step in steps(d)]
    total = sum(s.seconds for s in every)
    print(f"{len(dirs)} run(s): {total:.0f} s from their first event to their last")
    print("\nby step (the event that ends it):")
    for seconds, count, name in sum_by(every, key=lambda s: s.ends_with, seconds=lambda s: s.seconds):
        print(f"  {seconds:8.1f} s  {count:3d}x  {name:24s} {100 * seconds / total if total else 0:5.1f} %")
    print("\nby run (its slowest step):")
    for d in dirs:
        own = steps(d)
        slowest = max(own, key=lambda s: s.seconds, default=None)
        where = f"  slowest: {slowest.ends_with} {slowest.seconds:.1f} s" if slowest else ""
        print(f"  {sum(s.seconds for s in own):8.1f} s  {d.name}{where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
