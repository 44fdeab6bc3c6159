"""One run under way (`Run`): what the runner's steps share, how a step that raises fails only
its run, and what the progress display is shown (`Snapshot`)."""

from __future__ import annotations

import dataclasses
import functools
import random
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.core.connection import Connection
from benchmarks.harness import faults, retry, schedule
from benchmarks.harness.workers import LoadProcesses
from benchmarks.hosts import clocks, ssh
from benchmarks.hosts.ansible import PlaybookRunner
from benchmarks.hosts.inventory import ClusterInventory
from benchmarks.record import records, run_events
from benchmarks.record.event_log import EventLog
from benchmarks.spec.scenario import Scenario


@dataclasses.dataclass
class Snapshot:
    """What the progress display shows, twice a second."""

    run_id: str
    phase: str
    elapsed_s: float
    total_s: float
    sent: int
    acked: int
    failed: int
    indeterminate: int
    consumed: dict[str, int]
    active_faults: list[str]
    procedures: list[str] = dataclasses.field(default_factory=list)  # running, with the play each is in
    injections: schedule.Tally | None = None  # the run's fault injections so far (None: it has none)


@dataclasses.dataclass
class Run:
    """One run under way: what its phases share."""

    scenario: Scenario
    inventory: ClusterInventory
    inventory_path: Path
    runner: PlaybookRunner
    run_id: str
    run_dir: Path
    topic: str
    events: EventLog
    rng: random.Random
    warmup_s: float
    duration_s: float
    factor: float  # fault times are scaled by it (--quick)
    progress: Callable[[Snapshot], None] | None
    workers: LoadProcesses
    conn: Connection  # how the run's clients reach the cluster (secrets inside: never written out)
    steps: schedule.Controller | None = None
    journal: faults.Journal = dataclasses.field(default_factory=faults.Journal)
    invalid: list[str] = dataclasses.field(default_factory=list)
    start_ns: int = 0
    warm_p50_ms: float | None = None
    eligible_leader_replicas: bool | None = None  # as the brokers reported it before the load
    offsets: dict[str, clocks.Offset] = dataclasses.field(default_factory=dict)  # host clocks against ours
    trial: int = 1
    sweep: tuple[str, dict[str, Any]] | None = None  # (the scenario swept, this run's point)
    broker_cpu_s: float | None = None  # CPU the brokers spent during the load (/proc here, or over SSH)
    retrier: retry.Retrier = dataclasses.field(default_factory=retry.Retrier)  # its calls to Kafka
    step: str = "start"  # the step under way, as a failure names it
    failed: list[str] = dataclasses.field(default_factory=list)  # the steps that raised, in order
    checked: bool = False  # the final read reached the end offsets: the ledgers can be checked

    @functools.cached_property
    def remote(self) -> Callable[[str, str], str | None] | None:
        """Shell commands on the inventory's hosts over SSH, as Ansible reaches them (the brokers'
        CPU, the services' states): one reader for the run; None for a cluster known only by its
        bootstrap address."""
        return ssh.ssh_reader(self.inventory_path) if self.inventory.given is None else None

    def stage(self, step: str, body: Callable[[Run], Any]) -> bool:
        """`body(self)` as the step named; an exception fails the run (not the suite): False."""
        self.step = step
        try:
            body(self)
        except Exception as exc:
            self.fail(exc)
            return False
        return True

    def fail(self, exc: Exception) -> None:
        """The run is invalid: the step and the error named in its reasons and a run-failed event,
        the traceback appended to error.txt in its directory."""
        error = f"{type(exc).__name__}: {exc}".strip()
        self.failed.append(self.step)
        self.invalid.append(f"{self.step} failed: {error}")
        with open(self.run_dir / "error.txt", "a", encoding="utf-8") as handle:
            handle.write(f"--- {self.step}\n{traceback.format_exc()}\n")
        self.events.write(run_events.RunFailed(step=self.step, error=error))

    @property
    def fault_log(self) -> list[records.AppliedFault]:
        """The faults the schedule applied (none before the load)."""
        return self.steps.fault_log if self.steps else []

    def show(self, phase: str, elapsed: float = 0.0) -> None:
        if self.progress:
            end = self.workers.end_ns
            total_s = max(self.warmup_s + self.duration_s, (end - self.start_ns) / 1e9 if end else 0.0)
            self.progress(Snapshot(self.run_id, phase, elapsed, total_s, *self.workers.totals(), self.workers.consumed(),
                                   self.steps.active_names() if self.steps else [],
                                   self.steps.procedure_plays() if self.steps else [],
                                   self.steps.tally() if self.steps and self.steps.injections else None))
