"""Where a playbook's wall time goes, read from the events ansible-runner kept of it.

Every playbook kafka-bench runs leaves its events under `.runner/<time>-<playbook>-<id>/`
(benchmarks.hosts.ansible.AnsibleRunner). This reads them and says how the wall time divides:
per task (from its start to the next task's), per role, per module, the tasks every host
skipped (pure overhead: templating the condition and forking nothing), and the time outside
any task (plays starting, includes loading, argument specs validated).

    python -m benchmarks.perf.ansible_time .runner/20261128T184408-site-c0f1b1 [--top 25]

Several directories: their tasks are summed by name, so a rolling procedure's repeated steps
add up.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
from collections.abc import Sequence
from pathlib import Path

from benchmarks.perf import sum_by

# The events that mark where one task's time ends: the next task, the next play, the end.
_BOUNDARIES = frozenset({"playbook_on_task_start", "playbook_on_play_start", "playbook_on_stats"})


@dataclasses.dataclass(frozen=True)
class TaskTime:
    """One task of one playbook: its wall time and how its hosts ended (ok, changed, skipped...)."""

    name: str
    action: str
    role: str
    path: str
    wall_s: float
    outcomes: dict[str, int]

    @property
    def all_skipped(self) -> bool:
        return bool(self.outcomes) and set(self.outcomes) <= {"skipped"}


@dataclasses.dataclass(frozen=True)
class PlaybookTime:
    """A playbook's wall time, its tasks', and the part spent outside any task."""

    playbook: str
    wall_s: float
    tasks: list[TaskTime]

    @property
    def outside_tasks_s(self) -> float:
        return self.wall_s - sum(t.wall_s for t in self.tasks)


def _when(event: dict) -> float:
    return datetime.datetime.fromisoformat(event["created"]).timestamp()


def _role(task_path: str) -> str:
    parts = Path(task_path.split(":")[0]).parts
    return parts[parts.index("roles") + 1] if "roles" in parts[:-1] else "(playbook)"


def read(directory: Path) -> PlaybookTime:
    """The time of the one playbook whose events are under `directory`."""
    files = sorted(directory.glob("**/job_events/*.json"))
    if not files:
        raise SystemExit(f"{directory}: no job_events/*.json under it (an ansible-runner artifact directory?)")
    events = sorted((json.loads(f.read_text()) for f in files), key=lambda e: e["counter"])
    outcomes: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for event in events:
        kind = event["event"]
        if kind.startswith("runner_on_") and kind not in ("runner_on_start", "runner_on_file_diff"):
            outcomes[event["event_data"].get("task_uuid", "")][kind.removeprefix("runner_on_")] += 1
    marks = [e for e in events if e["event"] in _BOUNDARIES] + [events[-1]]
    tasks = []
    for start, end in zip(marks, marks[1:]):
        if start["event"] != "playbook_on_task_start":
            continue
        data = start["event_data"]
        path = data.get("task_path", "")
        tasks.append(TaskTime(data.get("task", ""), data.get("task_action", ""), _role(path), path,
                              _when(end) - _when(start), dict(outcomes[data.get("task_uuid", "")])))
    # The first event may carry no event_data (a verbose line ansible-runner kept): the playbook is
    # named by the first one that does.
    named = (e["event_data"]["playbook"] for e in events if "playbook" in e.get("event_data", {}))
    playbook = Path(next(named, directory.name)).name
    return PlaybookTime(playbook, _when(events[-1]) - _when(events[0]), tasks)


def _wall_s(task: TaskTime) -> float:
    return task.wall_s


def render(playbooks: Sequence[PlaybookTime], top: int = 25) -> str:
    tasks = [t for p in playbooks for t in p.tasks]
    wall = sum(p.wall_s for p in playbooks)
    skipped = [t for t in tasks if t.all_skipped]
    lines = [f"{len(playbooks)} playbook run(s) ({', '.join(sorted({p.playbook for p in playbooks}))}): "
             f"{wall:.1f} s wall, {len(tasks)} tasks",
             f"  outside any task: {sum(p.outside_tasks_s for p in playbooks):.1f} s",
             f"  tasks every host skipped: {len(skipped)}, {sum(t.wall_s for t in skipped):.1f} s",
             f"  mean per task: {sum(t.wall_s for t in tasks) / max(1, len(tasks)):.2f} s", ""]
    for title, key in (("role", lambda t: t.role), ("module", lambda t: t.action)):
        lines.append(f"by {title}:")
        lines += [f"  {s:7.1f} s {n:4d}x  {k}" for s, n, k in sum_by(tasks, key, _wall_s)[:12]]
        lines.append("")
    lines.append(f"the {top} slowest tasks (summed by name over the runs):")
    lines += [f"  {s:7.1f} s {n:4d}x  {k}" for s, n, k in sum_by(tasks, lambda t: f"{t.role}: {t.name}", _wall_s)[:top]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf.ansible_time", description=__doc__.split("\n")[0])
    parser.add_argument("directories", nargs="+", type=Path, help="ansible-runner artifact directories (.runner/...)")
    parser.add_argument("--top", type=int, default=25, help="how many of the slowest tasks to list")
    args = parser.parse_args(argv)
    print(render([read(d) for d in args.directories], args.top))


if __name__ == "__main__":
    main()
