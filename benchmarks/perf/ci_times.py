"""Where `make test`'s wall time goes, read from the JUnit XML files pytest wrote of its runs.

`make test` writes one per pytest invocation under `.test-times/` (the main one and the lab's).
This prints the time per tier (tests/<tier>/), per module within it, and the slowest tests, each
test's time being its setup, call and teardown (pytest's default `junit_duration_report`).

    python -m benchmarks.perf.ci_times .test-times/*.xml [--top 15]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path

from benchmarks.perf import sum_by


@dataclasses.dataclass(frozen=True)
class CaseTime:
    """One test case: its module's path under tests/, its name, its time and how it ended."""

    module: str  # e.g. "integration/test_kraft.py"
    name: str
    seconds: float
    outcome: str  # passed, failed, error, skipped

    @property
    def tier(self) -> str:
        return self.module.split("/", 1)[0]


def _outcome(case: ET.Element) -> str:
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return "failed" if tag == "failure" else tag
    return "passed"


def read(path: Path) -> list[CaseTime]:
    """The test cases of one JUnit XML file (pytest's: classname `tests.<tier>.<module>[.<class>]`)."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        test_at = [i for i, part in enumerate(parts) if part.startswith("test_")]
        module = "/".join(parts[1:test_at[0] + 1]) + ".py" if test_at else ".".join(parts[1:]) or "?"
        out.append(CaseTime(module, case.get("name", "?"), float(case.get("time") or 0.0), _outcome(case)))
    return out


def report(tests: Sequence[CaseTime], top: int = 15) -> str:
    outcomes = collections.Counter(t.outcome for t in tests)
    lines = [f"{len(tests)} tests, {sum(t.seconds for t in tests):.0f} s in tests "
             f"({', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))})", "", "by tier:"]
    lines += [f"  {s:8.0f} s  tests/{tier}" for s, _, tier in sum_by(tests, lambda t: t.tier, lambda t: t.seconds)]
    lines += ["", "by module:"]
    lines += [f"  {s:8.0f} s  tests/{m}" for s, _, m in sum_by(tests, lambda t: t.module, lambda t: t.seconds) if s >= 1]
    lines += ["", f"the {top} slowest tests:"]
    lines += [f"  {t.seconds:8.0f} s  tests/{t.module}::{t.name}"
              for t in sorted(tests, key=lambda t: -t.seconds)[:top]]
    return "\n".join(lines)


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="JUnit XML files pytest wrote (--junitxml)")
    parser.add_argument("--top", type=int, default=15, help="how many of the slowest tests to list")
    args = parser.parse_args(list(argv) if argv is not None else None)
    print(report([t for path in args.files for t in read(path)], args.top))


if __name__ == "__main__":
    main()
