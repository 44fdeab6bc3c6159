"""Running an operations suite scenario (a procedure under load) on a cluster of this machine, as
the integration tests of the procedures do: the run, its analysis, and what it cost, printed."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from benchmarks.analysis.rows import RunRow
from benchmarks.harness import runner as runner_lib
from benchmarks.hosts import inventory
from benchmarks.hosts.ansible import AnsibleRunner
from benchmarks.report import outputs
from benchmarks.spec import scenario as scenario_lib


@dataclasses.dataclass
class ProcedureRun:
    summary: RunRow              # the analysed run's summary row
    steps: list[dict[str, Any]]  # per step of the procedure: play, duration, p99, unavailability, ...
    html: str                    # the report
    out: Path                    # the run's results directory

    @property
    def plays(self) -> list[str]:
        return [step["play"] for step in self.steps]


def run_procedure_scenario(path: Path, inventory_path: Path, runner: AnsibleRunner, out: Path,
                           keep_topic: bool = False) -> ProcedureRun:
    """Run the scenario file's one run on the inventory's cluster and analyse it; the run must be
    valid and lose no acknowledged write, every step of its procedure must succeed. `keep_topic`:
    leave the run's topic on the cluster (a run deletes it at its end), for a test that looks at
    what the procedure made of it."""
    [run] = scenario_lib.load(path)
    assert run.scenario is not None
    summary = runner_lib.execute(run.scenario, inventory.load(inventory_path), inventory_path, runner, out, seed=5,
                                 keep_topic=keep_topic)
    assert summary.valid, summary.invalid_reasons
    report = outputs.build(str(out))
    [analysed] = report.data.runs
    s = analysed.summary
    print(f"\n{run.scenario.name} under {run.scenario.workload.rate:.0f} msg/s acks=all: {s.sent} sent, "
          f"{s.acked} acked, {s.failed} failed, {s.indeterminate} unconfirmed, {s.lost} lost, "
          f"{s.unseen} unseen, {s.duplicates} duplicates, worst unavailability {s.unavailable_s:.2f} s, "
          f"p99 {s.latency_p99_ms:.1f} ms")
    for step in analysed.steps:
        print(f"  {step['step']:>2} {step['duration_s']:6.1f} s  p99 {step['latency_p99_ms'] or 0:7.1f} ms "
              f"(steady {step['steady_p99_ms'] or 0:.1f})  without acks {step['unavailable_s']:.2f} s  "
              f"elections {step['leader_changes']}  failed {step['failed']}  {step['play']}"
              + (f" ({step['node']})" if step["node"] else ""))
    assert s.lost == s.unseen == 0 and summary.acked_lost == 0
    assert all(step["ok"] for step in analysed.steps)
    return ProcedureRun(s, list(analysed.steps), report.html.read_text(), out)
