"""The profile of a playbook's wall time, from the events ansible-runner keeps (benchmarks/perf/ansible_time.py)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.perf import ansible_time


def _events(directory: Path, rows: list[tuple[str, float, dict]]) -> Path:
    """Write job events (kind, seconds after 12:00:00, event_data) as ansible-runner does."""
    events = directory / "artifacts" / "0f" / "job_events"
    events.mkdir(parents=True)
    for counter, (kind, at_s, data) in enumerate(rows, start=1):
        created = f"2026-11-28T12:00:{at_s:09.6f}+00:00"
        (events / f"{counter}-{kind}.json").write_text(json.dumps(
            {"counter": counter, "event": kind, "created": created, "event_data": data}))
    return directory


def test_each_task_lasts_until_the_next_and_a_task_every_host_skipped_is_counted_apart(tmp_path):
    play = {"playbook": "/repo/playbooks/site.yml"}
    write = {"task": "Write server.properties", "task_action": "ansible.builtin.template", "task_uuid": "a",
             "task_path": "/repo/roles/kafka/tasks/configure.yml:2"}
    check = {"task": "Refuse a bad port", "task_action": "ansible.builtin.assert", "task_uuid": "b",
             "task_path": "/repo/playbooks/site.yml:9"}
    directory = _events(tmp_path / "run", [
        ("playbook_on_start", 0.0, play),
        ("playbook_on_play_start", 0.5, play),
        ("playbook_on_task_start", 1.0, write),
        ("runner_on_start", 1.0, write), ("runner_on_ok", 2.0, write), ("runner_on_ok", 3.0, write),
        ("playbook_on_task_start", 3.5, check),
        ("runner_on_skipped", 3.6, check), ("runner_on_skipped", 3.7, check),
        ("playbook_on_stats", 4.0, play),
    ])
    profile = ansible_time.read(directory)
    assert (profile.playbook, profile.wall_s) == ("site.yml", 4.0)
    assert [(t.name, t.role, t.wall_s, t.outcomes, t.all_skipped) for t in profile.tasks] == [
        ("Write server.properties", "kafka", 2.5, {"ok": 2}, False),
        ("Refuse a bad port", "(playbook)", 0.5, {"skipped": 2}, True)]
    assert profile.outside_tasks_s == 1.0
    text = ansible_time.render([profile, profile], top=1)
    assert "2 playbook run(s) (site.yml): 8.0 s wall, 4 tasks" in text
    assert "tasks every host skipped: 2, 1.0 s" in text
    assert text.endswith("5.0 s    2x  kafka: Write server.properties")
