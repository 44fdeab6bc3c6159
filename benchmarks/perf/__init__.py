"""Performance measurements of the harness itself (scripts, not tests)."""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Any

from benchmarks.core import paths


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
