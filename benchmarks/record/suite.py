"""A suite's plan and what of it is done.

`kafka-bench run` writes suite.json (records.SuitePlan) in its directory before the first run;
each run that ends writes its summary.json in a directory of its own beside it. From the two,
`kafka-bench report` names the runs missing from a suite that was stopped (a crash, Ctrl-C, a
kill), and `kafka-bench run ... --resume DIR` makes only those, with the options the suite
began with.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from benchmarks.record import records

PLAN = "suite.json"


class SuiteError(ValueError):
    """A directory that cannot be resumed as asked; the message names the file and the field."""


def write_plan(directory: Path, plan: records.SuitePlan) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / PLAN).write_text(plan.model_dump_json(indent=2))


def read_plan(directory: Path) -> records.SuitePlan | None:
    """The plan in `directory` (None: it has none, as a single run's or an older version's has not)."""
    path = directory / PLAN
    if not path.is_file():
        return None
    try:
        return records.SuitePlan.model_validate_json(path.read_text())
    except ValidationError as exc:
        raise SuiteError(f"{path}: not a suite plan kafka-bench wrote: {exc.errors()[0]['msg']}") from None


def key(scenario: str, trial: int) -> tuple[str, int]:
    return scenario, trial


def finished(directory: Path) -> dict[tuple[str, int], records.RunSummary]:
    """The runs directly under `directory` that ended (their summary.json), by scenario and trial."""
    out = {}
    for path in sorted(directory.glob("*/summary.json")):
        summary = records.RunSummary.model_validate_json(path.read_text())
        out[key(summary.scenario, summary.trial)] = summary
    return out


def missing(directory: Path) -> list[records.PlannedRun]:
    """The planned runs of the suite in `directory` that have no summary (none without a plan).
    A summary is known by its scenario and trial alone: the report reads the rest."""
    plan = read_plan(directory)
    if plan is None:
        return []
    done = set()
    for path in directory.glob("*/summary.json"):
        summary = json.loads(path.read_text())
        done.add(key(summary["scenario"], summary.get("trial", 1)))
    return [run for run in plan.runs if key(run.scenario, run.trial) not in done]


def unfinished(directory: Path) -> list[Path]:
    """Run directories a stopped run left without a summary (what it wrote stays for a look)."""
    return sorted(p for p in directory.iterdir() if p.is_dir() and (p / "events.jsonl").exists()
                  and not (p / "summary.json").exists())


def describe(run: records.PlannedRun, total: int) -> str:
    return f"[{run.number}/{total}] {run.scenario}" + (f" trial {run.trial}/{run.trials}" if run.trials > 1 else "")


def check_resumable(directory: Path, plan: records.SuitePlan) -> records.SuitePlan:
    """The plan `directory` began with, when this command's `plan` is the same suite with the same
    options and runs; SuiteError naming the file and the first field that differs otherwise."""
    path = directory / PLAN
    began = read_plan(directory)
    if began is None:
        raise SuiteError(f"{path}: no such file: --resume takes a directory `kafka-bench run` wrote "
                         "(benchmarks/results/<time>-<suite>)")
    for field in ("suite", "inventory", "quick", "seed", "trials", "ledger"):
        was, now = getattr(began, field), getattr(plan, field)
        if was != now:
            raise SuiteError(f"{path}: {field} was {was!r} when the suite began, this command says {now!r}: "
                             "resume with the same suite and options")
    if [(r.scenario, r.trial) for r in began.runs] != [(r.scenario, r.trial) for r in plan.runs]:
        raise SuiteError(f"{path}: runs: the suite's files now make other runs than when it began "
                         f"({len(plan.runs)} against {len(began.runs)}); start it anew instead")
    return began
