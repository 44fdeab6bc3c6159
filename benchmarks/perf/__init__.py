"""Performance measurements of the harness itself (scripts, not tests)."""

from __future__ import annotations

import argparse
import collections
import json
import resource
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.core import paths

T = TypeVar("T")


def save_figures(name: str, figures: Any) -> Path:
    """Write a measurement's figures as benchmarks/results/perf-NAME-<time>.json; its path."""
    out = paths.PROJECT_ROOT / "benchmarks" / "results" / f"perf-{name}-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2))
    return out


def proc_stat(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command name: [0] state, [11] utime and [12] stime
    (clock ticks), [19] start time."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()


def cpu_ticks(fields: list[str]) -> int:
    """User and system CPU, in clock ticks, of a process's `proc_stat` fields."""
    return int(fields[11]) + int(fields[12])


def children_cpu_s() -> float:
    """User and system CPU of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sum_by(items: Iterable[T], key: Callable[[T], str], seconds: Callable[[T], float]) -> list[tuple[float, int, str]]:
    """The items' seconds summed per key: (total, how many, key), the largest total first."""
    totals: dict[str, list[float]] = collections.defaultdict(list)
    for item in items:
        totals[key(item)].append(seconds(item))
    return sorted(((sum(v), len(v), k) for k, v in totals.items()), reverse=True)


def with_and_without(rounds: int, measure: Callable[[bool], dict[str, float]]) -> dict[str, list[dict[str, float]]]:
    """`rounds` pairs of measurements with an archive of classes (True) and without (False), each
    pair in alternating order so the machine's drift hits both alike."""
    rows: dict[str, list[dict[str, float]]] = {"archive": [], "no_archive": []}
    for round_ in range(rounds):
        for archive in ((True, False) if round_ % 2 == 0 else (False, True)):
            rows["archive" if archive else "no_archive"].append(measure(archive))
    return rows


def archive_figures(rows: dict[str, list[dict[str, float]]]) -> tuple[dict[str, float], dict[str, float], str]:
    """The medians of CPU and wall time with and without the archive, their ratios, and both said."""
    m = {f"{name}_{field}": statistics.median(r[field] for r in runs) for name, runs in rows.items()
         for field in ("cpu_s", "wall_s")}
    ratios = {"cpu_archive_over_none": m["archive_cpu_s"] / m["no_archive_cpu_s"],
              "wall_archive_over_none": m["archive_wall_s"] / m["no_archive_wall_s"]}
    said = (f"  CPU : {m['archive_cpu_s']:.2f} s with the archive, {m['no_archive_cpu_s']:.2f} s without "
            f"(ratio {ratios['cpu_archive_over_none']:.2f})\n"
            f"  wall: {m['archive_wall_s']:.2f} s with the archive, {m['no_archive_wall_s']:.2f} s without "
            f"(ratio {ratios['wall_archive_over_none']:.2f})")
    return m, ratios, said


def ab_arguments(doc: str | None, rounds: int, what: str) -> argparse.Namespace:
    """The command line of a with-and-without measurement on a deployed cluster: --inventory and
    --rounds (pairs of `what`)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inventory", type=Path, default=paths.DEFAULT_INVENTORY)
    parser.add_argument("--rounds", type=int, default=rounds, help=f"pairs of {what}, each pair in alternating order")
    return parser.parse_args()
