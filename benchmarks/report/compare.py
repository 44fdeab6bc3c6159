"""The same scenarios from two or more result directories side by side: ZooKeeper against KRaft,
one Kafka version against another, ELR on against off, or any two runs.

Each directory's summary.csv (what `kafka-bench report` writes) is read as it is: the figures
in compare.csv are those of the directories, matched by scenario name; the differences that
matter to an operator (time to a new leader, seconds without acks, lost writes, p99) are named
where they are large enough to be more than this machine's noise."""

from __future__ import annotations

import csv
import dataclasses
import datetime
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from benchmarks.report import svg


class CompareError(ValueError):
    """A directory holds no summary.csv, or the directories share no scenario."""


@dataclasses.dataclass(frozen=True)
class Measure:
    column: str  # of summary.csv
    words: str  # for people
    unit: str
    # A difference is named when the larger value exceeds the smaller by both of these.
    min_delta: float
    min_ratio: float


MEASURES = (
    Measure("new_leader_s", "time to a new leader", "s", 0.5, 1.2),
    Measure("unavailable_s", "seconds without acks (worst partition)", "s", 0.5, 1.2),
    Measure("lost", "acknowledged writes lost", "", 1, 1.0),
    Measure("unseen", "acknowledged writes unseen", "", 1, 1.0),
    Measure("latency_p99_ms", "p99 ack latency", "ms", 5.0, 1.5),
    Measure("throughput_msgs_s", "acked messages per second", "/s", 50.0, 1.1),
)
IDENTITY = ("scenario", "description", "metadata_mode", "kafka_version", "eligible_leader_replicas", "fault", "valid",
            "verdict")


@dataclasses.dataclass(frozen=True)
class Side:
    """One result directory: its label and its rows by scenario."""

    directory: Path
    label: str
    rows: dict[str, dict[str, str]]


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def read_side(directory: Path) -> Side:
    path = Path(directory) / "summary.csv"
    if not path.is_file():
        raise CompareError(f"{directory}: no summary.csv (run `kafka-bench report {directory}` first)")
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise CompareError(f"{path}: no runs")
    modes = {(r.get("metadata_mode") or "", r.get("kafka_version") or "") for r in rows}
    mode, version = next(iter(modes)) if len(modes) == 1 else ("", "")
    name = Path(directory).name
    # Runs written before the mode was recorded ran on ZooKeeper (the only mode then).
    label = f"{mode} {version}".strip() if mode else f"zookeeper ({name})" if "metadata_mode" not in rows[0] else name
    elr = {(r.get("eligible_leader_replicas") or "").lower() for r in rows}
    if mode == "kraft" and len(elr) == 1 and (state := elr.pop()) in ("true", "false"):
        label += f", ELR {'on' if state == 'true' else 'off'}"
    return Side(Path(directory), label, {r["scenario"]: r for r in rows})


def _labels(sides: list[Side]) -> list[str]:
    """Each side's label, with its directory's name where two sides would read alike."""
    labels = [s.label for s in sides]
    return [f"{s.label} ({s.directory.name})" if labels.count(s.label) > 1 else s.label for s in sides]


def differences(values: list[float | None], labels: list[str], measure: Measure) -> list[str]:
    """The measure's difference between the sides in words, when it is more than noise."""
    known = [(v, label) for v, label in zip(values, labels) if v is not None]
    if len(known) < 2:
        return []
    low, high = min(known), max(known)
    if high[0] - low[0] < measure.min_delta or high[0] < low[0] * measure.min_ratio:
        return []
    figures = " vs ".join(f"{v:,.1f}{(' ' + measure.unit) if measure.unit else ''} ({label})" for v, label in known)
    return [f"{measure.words}: {figures}"]


@dataclasses.dataclass(frozen=True)
class Comparison:
    labels: list[str]
    scenarios: list[str]  # in every side
    unmatched: dict[str, list[str]]  # label -> its scenarios not in every side
    rows: list[dict[str, Any]]  # one per scenario: figures per side, and the differences


def compare(directories: list[Path]) -> Comparison:
    if len(directories) < 2:
        raise CompareError("compare needs at least two result directories")
    sides = [read_side(d) for d in directories]
    labels = _labels(sides)
    common = [name for name in sides[0].rows if all(name in s.rows for s in sides[1:])]
    if not common:
        raise CompareError("the directories share no scenario: " + "; ".join(
            f"{label}: {', '.join(s.rows)}" for label, s in zip(labels, sides)))
    rows = []
    for name in common:
        row: dict[str, Any] = {"scenario": name}
        diffs: list[str] = []
        for label, side in zip(labels, sides):
            source = side.rows[name]
            for column in IDENTITY[1:]:
                row[f"{column} [{label}]"] = source.get(column, "")
        for m in MEASURES:
            values = [_number(side.rows[name].get(m.column)) for side in sides]
            for label, value in zip(labels, values):
                row[f"{m.column} [{label}]"] = value
            diffs += differences(values, labels, m)
        row["differences"] = "; ".join(diffs)
        rows.append(row)
    unmatched = {label: [n for n in s.rows if n not in common] for label, s in zip(labels, sides)}
    return Comparison(labels, common, {k: v for k, v in unmatched.items() if v}, rows)


def write_csv(comparison: Comparison, path: Path) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(comparison.rows[0]))
        writer.writeheader()
        writer.writerows(comparison.rows)


_TEMPLATES = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
                                autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def page(comparison: Comparison, directories: list[Path]) -> str:
    charts = []
    for m in MEASURES:
        items = [(name, [(label, row[f"{m.column} [{label}]"] or 0.0) for label in comparison.labels])
                 for name, row in zip(comparison.scenarios, comparison.rows)]
        if any(v for _, values in items for _, v in values):
            charts.append(Markup(svg.bars(items, f"{m.words}{f' ({m.unit})' if m.unit else ''}")))
    return _TEMPLATES.get_template("compare.html.j2").render(
        generated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        sides=list(zip(comparison.labels, directories)), comparison=comparison, measures=MEASURES, charts=charts)


def mode_of(side: Side) -> str:
    """The side's metadata mode; runs written before the mode was recorded ran on ZooKeeper."""
    modes = {r.get("metadata_mode") or "zookeeper" for r in side.rows.values()}
    return modes.pop() if len(modes) == 1 else "mixed"


def newest_by_mode(results_root: Path, name: str) -> dict[str, Path]:
    """The newest analysed results directory `<time>-<name>` of each metadata mode."""
    found: dict[str, Path] = {}
    for directory in sorted(Path(results_root).glob(f"*-{name}"), reverse=True):
        if (directory / "summary.csv").is_file():
            found.setdefault(mode_of(read_side(directory)), directory)
    return found


def write(directories: list[Path], out: Path) -> tuple[Comparison, Path, Path]:
    comparison = compare(directories)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(comparison, out / "compare.csv")
    (out / "compare.html").write_text(page(comparison, directories), encoding="utf-8")
    return comparison, out / "compare.html", out / "compare.csv"
