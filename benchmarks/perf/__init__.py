"""Performance measurements of the harness itself (scripts, not tests)."""

from __future__ import annotations

import collections
import json
import resource
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
