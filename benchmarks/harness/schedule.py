"""A run's scheduled steps, carried out on the load's clock by one controller.

Steps are faults injected and healed, consumers killed, and operational procedures (playbooks
run under the load, benchmarks/spec/procedures.py) with each of their plays recorded as an event. The controller owns each fault's
whole life: resolve its target on the cluster as it is when the fault is due, journal the
intent, record it as an event, inject it, schedule its heal from the moment it acted, heal it.
A fault may first wait for a recovered cluster (`wait_recovered_s`), and an injection
beyond `max_brokers_down` or (of a recurring fault) without a target is skipped and recorded;
one whose target's role had moved before it acted (a kill of a partition's leader that a
preferred-leader election had just moved) is recorded as missed; either is made up for if its
recurring fault has a `count`.
Steps run one at a time in the order of their times: a step resolves its target only once
the step before it has acted, so two faults never pick the same broker and a `leader_of`
target sees what earlier faults did. The check that a fault hit the role it was aimed at (the
cluster read just after it acted) runs beside the steps, not as one: with every broker down or
paused that read waits out its timeouts, and a heal due meanwhile must not wait with it. A
fault's playbook starts `lead_s` before its time and the host waits for the moment itself
(Ansible's start-up would otherwise delay it). A step or check that fails invalidates the run
with the reason instead of ending its thread unseen.

Clock, injector, cluster view and thread factory are injected, so the sequencing is tested
without a cluster (tests/unit/test_schedule.py).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from benchmarks.harness.faults import FaultRecord
from benchmarks.hosts.ansible import PlaybookResult, ProgressCallback, ProgressEvent, summarize_failures
from benchmarks.record import records, run_events
from benchmarks.spec.fault_spec import FaultSpec, Injection
from benchmarks.spec.fault_targets import FaultError, Resolved, Situation
from benchmarks.spec.procedures import Procedure

# Fault playbooks start this long before their scheduled time and the host waits for the
# moment itself: Ansible's start-up (seconds on a loaded machine) would otherwise delay them.
FAULT_LEAD_S = 10.0

INJECT, HEAL, KILL_CONSUMER, PROCEDURE = "inject", "heal", "kill-consumer", "procedure"
# An injection waiting for a recovered cluster looks again this often (a step of its own, so
# that heals and other steps due meanwhile are not held up by the wait).
RECHECK, RECHECK_S = "recheck", 0.5
# The check, just after a fault aimed at a role acted, that it hit that role: beside the steps.
CHECK = "check"


@dataclasses.dataclass(frozen=True, order=True)
class Step:
    at_s: float  # seconds after the load's start (warm-up included)
    action: str  # INJECT, HEAL, KILL_CONSUMER or PROCEDURE
    what: int | str = dataclasses.field(compare=False)  # the fault's or procedure's index, or the consumer group


@dataclasses.dataclass(frozen=True)
class Tally:
    """Where a run's injections stand: acted (a missed one included), skipped, missed, and those to
    come (make-ups included)."""

    acted: int = 0
    skipped: int = 0
    missed: int = 0
    to_come: int = 0

    def __str__(self) -> str:
        parts = [f"{self.acted} acted", f"{self.skipped} skipped" if self.skipped else "",
                 f"{self.missed} missed" if self.missed else "", f"{self.to_come} to come" if self.to_come else ""]
        return ", ".join(p for p in parts if p)


class Injector(Protocol):
    """What the controller needs of faults.AnsibleFaultInjector."""

    def new_record(self, kind: str, hosts: Iterable[str], broker_id: int | None, reason: str,
                   extravars: dict[str, Any] | None = None) -> FaultRecord: ...

    def inject(self, record: FaultRecord, not_before_ns: int | None = None) -> float: ...

    def revert(self, record: FaultRecord, not_before_ns: int | None = None) -> float: ...


class Events(Protocol):
    def write(self, event: run_events.Event) -> Any: ...


class PlaybookCall(Protocol):
    """Runs one playbook of the repository on the run's inventory, reporting its progress."""

    def __call__(self, playbook: str, progress: ProgressCallback, extravars: Mapping[str, Any]) -> PlaybookResult: ...


class ProcedureError(RuntimeError):
    """A procedure's playbook failed."""


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a run's steps are, and how the scenario's seconds fall on the load's clock: each step
    is due `warmup_s + at_s * factor` seconds after `start_ns`. `consumer_kills`: (group, seconds
    into the measured phase); `topic`: the run's, for the procedures; `max_brokers_down`: an
    injection due while as many brokers are under a fault is skipped (None: no bound)."""

    faults: Sequence[FaultSpec | Injection]
    warmup_s: float
    factor: float
    start_ns: int
    consumer_kills: Sequence[tuple[str, float]] = ()
    procedures: Sequence[Procedure] = ()
    topic: str = ""
    max_brokers_down: int | None = None


@dataclasses.dataclass(frozen=True)
class Hands:
    """What the steps act through and read. `situation(fault, busy)` gives what a fault resolves
    its target against (`busy`: brokers already under a fault; after an act, its target too);
    `kill_consumer(group)` stops one member of a group and returns its pid (None: none left);
    `run_playbook` runs a procedure's playbook (needed when there are procedures);
    `recovery_problems()` says what keeps the cluster from having recovered (nothing: it has)."""

    injector: Injector
    events: Events
    situation: Callable[[FaultSpec, frozenset[int]], Situation]
    kill_consumer: Callable[[str], int | None]
    run_playbook: PlaybookCall | None = None
    recovery_problems: Callable[[], list[str]] = list


class Controller:
    """The steps of one run: `plan` says what and when, `hands` what they act through. `lead_s`,
    `spawn` and `clock` are seams for the tests: how early a fault's playbook starts ahead of its
    time, how a step's thread is made, and the wall clock in ns."""

    def __init__(self, plan: Plan, hands: Hands, lead_s: float = FAULT_LEAD_S,
                 spawn: Callable[..., threading.Thread] = threading.Thread, clock: Callable[[], int] = time.time_ns) -> None:
        self.injections = [f if isinstance(f, Injection) else Injection(f, f"faults[{i}]") for i, f in enumerate(plan.faults)]
        self.faults, self.factor, self.start_ns = [i.fault for i in self.injections], plan.factor, plan.start_ns
        self.max_brokers_down = plan.max_brokers_down
        self.recovery_problems = hands.recovery_problems
        self.clock = clock
        self._gates: dict[int, tuple[int, float]] = {}  # injection waiting for recovery -> (due_ns, give up at s)
        self.injector, self.events, self.situation = hands.injector, hands.events, hands.situation
        self.kill_consumer = hands.kill_consumer
        self.lead_s, self.spawn = lead_s, spawn
        self.procedures, self.run_playbook, self.topic = list(plan.procedures), hands.run_playbook, plan.topic
        if self.procedures and self.run_playbook is None:
            raise ValueError("procedures need run_playbook")
        self.warmup_s = warmup_s = plan.warmup_s
        factor = plan.factor
        self.steps = sorted([Step(warmup_s + f.first_s * factor, INJECT, i) for i, f in enumerate(self.faults)]
                            + [Step(warmup_s + at_s * factor, KILL_CONSUMER, group) for group, at_s in plan.consumer_kills]
                            + [Step(warmup_s + p.at_s * factor, PROCEDURE, i) for i, p in enumerate(self.procedures)])
        self.records: dict[int, FaultRecord] = {}
        self.active: dict[str, FaultRecord] = {}  # acted, not yet healed
        self.playing: dict[str, str] = {}  # procedure id -> "name: the play it is in", while it runs
        self.zookeeper_retired = False  # a procedure that stops ZooKeeper for good succeeded
        self.fault_log: list[records.AppliedFault] = []
        self._skipped = self._missed = 0
        self.invalid: list[str] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []  # the steps, one at a time
        self._checks: list[threading.Thread] = []  # the aim checks, beside the steps

    # ------------------------------------------------------------------ the loop's side

    def under_way(self) -> bool:
        """A step is running (the next waits for it)."""
        return any(t.is_alive() for t in self._threads)

    def pending(self) -> bool:
        """Steps to come or under way, or an aim check under way (it may make up for a miss): the
        load must go on."""
        with self._lock:
            return bool(self.steps) or self.under_way() or any(t.is_alive() for t in self._checks)

    def start_due(self, now_ns: int) -> Step | None:
        """Start the next step if it is due (fault playbooks `lead_s` early) and none is under way."""
        elapsed = (now_ns - self.start_ns) / 1e9
        with self._lock:
            if not self.steps or self.under_way():
                return None
            step = self.steps[0]
            if elapsed < step.at_s - (self.lead_s if step.action in (INJECT, HEAL) else 0.0):
                return None
            self.steps.pop(0)
        thread = self.spawn(target=self.run_step, args=(step,), name=f"step-{step.action}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return step

    def join(self, timeout_s: float | None = None) -> None:
        for thread in [*self._threads, *self._checks]:
            thread.join(timeout_s)

    def tally(self) -> Tally:
        with self._lock:
            due = len(self.injections)
        acted = len(self.fault_log)  # one entry for each injection that acted
        return Tally(acted, self._skipped, self._missed, due - acted - self._skipped)

    def active_names(self) -> list[str]:
        return [f"{r.kind} {r.reason}" for r in list(self.active.values())]

    def procedure_plays(self) -> list[str]:
        """The procedures running now, each with the play it is in."""
        return list(dict(self.playing).values())

    # ------------------------------------------------------------------ a step

    def run_step(self, step: Step) -> None:
        """Carry out one step; a failure invalidates the run with the reason."""
        due_ns = self.start_ns + int(step.at_s * 1e9)
        try:
            if step.action in (INJECT, RECHECK):
                self._inject(int(step.what), due_ns)
            elif step.action == HEAL:
                self._heal(int(step.what), due_ns)
            elif step.action == PROCEDURE:
                self._procedure(int(step.what), due_ns)
            else:
                pid = self.kill_consumer(str(step.what))
                if pid is not None:
                    self.events.write(run_events.ConsumerKilled(group=str(step.what), pid=pid))
        except Exception as exc:  # whatever failed, the run must say it
            name = (f"{self.injections[int(step.what)].name} ({self.faults[int(step.what)].kind})"
                    if step.action in (INJECT, RECHECK, HEAL)
                    else f"procedures[{step.what}] ({self.procedures[int(step.what)].name})"
                    if step.action == PROCEDURE else f"{KILL_CONSUMER} ({step.what})")
            self._failed(step.action, name, exc)

    def _failed(self, action: str, name: str, exc: Exception) -> None:
        """A step or check that failed: the run is invalid, with the reason, and the events say so."""
        self.invalid.append(f"{name} {action} failed: {exc}")
        self.events.write(run_events.ScheduleStepFailed(action=action, step=name, error=str(exc)))

    def _inject(self, index: int, due_ns: int) -> None:
        injection = self.injections[index]
        fault = injection.fault
        if fault.wait_recovered_s is not None:
            due_ns, give_up_s = self._gates.setdefault(index, (due_ns, self._give_up_s(injection, due_ns)))
            if not self._recovered(index, injection, due_ns, give_up_s):
                return
        busy = frozenset(r.broker_id for r in self.active.values() if r.broker_id is not None)
        if self.max_brokers_down is not None and len(busy) >= self.max_brokers_down:
            self._skip(injection, due_ns, f"{len(busy)} broker(s) already under a fault "
                       f"({', '.join(map(str, sorted(busy)))}); max_brokers_down is {self.max_brokers_down}")
            return
        try:
            to = fault.resolve(self.situation(fault, busy))
        except FaultError as exc:  # one of many: the cluster as earlier injections left it has no such target
            if not injection.recurring:
                raise
            self._skip(injection, due_ns, f"no target: {exc}")
            return
        record = self.injector.new_record(fault.kind, to.hosts, to.broker_id, to.reason, fault.extravars())
        self.records[index] = record
        self.events.write(run_events.FaultIntent(fault_id=record.fault_id, kind=fault.kind, hosts=list(to.hosts),
                                                 broker=to.broker_id, reason=to.reason, scheduled_ns=due_ns))
        at = self.injector.inject(record, not_before_ns=due_ns)
        self.active[record.fault_id] = record  # from when it acted (its playbook may have waited for its time)
        self.events.write(run_events.FaultInjected(fault_id=record.fault_id, at_ns=int(at * 1e9)))
        self.fault_log.append(records.AppliedFault(fault_id=record.fault_id, kind=fault.kind, target=to.reason,
                                                   hosts=list(to.hosts)))
        if fault.heal_at_s is not None:  # the fault lasts as planned from when it acted, however late
            heal_at_s = (int(at * 1e9) - self.start_ns) / 1e9 + (fault.heal_at_s - fault.first_s) * self.factor
            self._add(Step(heal_at_s, HEAL, index))
        if fault.can_miss:  # a role that may have moved: check beside the steps (module docstring)
            check = self.spawn(target=self._check_aim, args=(injection, record, to, busy),
                               name="check-aim", daemon=True)
            with self._lock:
                self._checks.append(check)
            check.start()

    def _check_aim(self, injection: Injection, record: FaultRecord, to: Resolved, busy: frozenset[int]) -> None:
        """A fault whose target's role (the leader of a partition, the controller) had moved to
        another broker between the resolution and the act, as the cluster read just after it
        shows, missed: recorded, and made up for if its fault has a count. The playbook's start-up
        leaves seconds for that (a preferred-leader election, say); the cluster notices a kill or a
        pause only when the broker's session expires, so that read still shows who held the role.
        Runs in a thread of its own; a failure invalidates the run as a step's would."""
        try:
            self._check_moved(injection, record, to, busy)
        except Exception as exc:  # whatever failed, the run must say it
            self._failed(CHECK, f"{injection.name} ({injection.fault.kind})", exc)

    def _check_moved(self, injection: Injection, record: FaultRecord, to: Resolved, busy: frozenset[int]) -> None:
        fault = injection.fault
        try:
            now_busy = busy if to.broker_id is None else busy | {to.broker_id}  # the target is under the fault now
            why = fault.moved(self.situation(fault, now_busy), to)
        except RuntimeError:  # the cluster could not be read (ClusterUnreachable): nothing to tell
            return
        if why is not None:
            self._missed += 1
            made_up = self._make_up(injection)
            self.events.write(run_events.FaultMissed(fault_id=record.fault_id, step=injection.name, reason=why,
                                                     made_up_by=made_up.name if made_up else None))

    def _add(self, step: Step) -> None:
        """A step scheduled while the run goes on (a heal, a recheck), in its place by time."""
        with self._lock:
            self.steps = sorted([*self.steps, step])

    def _recovered(self, index: int, injection: Injection, due_ns: int, give_up_s: float) -> bool:
        """Whether the cluster has recovered for an injection that waits for it; if not, the
        injection looks again RECHECK_S later, or is skipped once it is time to give up."""
        problems = self.recovery_problems()
        now_s = (self.clock() - self.start_ns) / 1e9
        if problems and now_s < give_up_s:
            self._add(Step(now_s + RECHECK_S, RECHECK, index))
        elif problems:
            self._skip(injection, due_ns, f"the cluster had not recovered {now_s - (due_ns - self.start_ns) / 1e9:.0f} s "
                       "after the injection was due: " + "; ".join(problems))
        return not problems

    def _give_up_s(self, injection: Injection, due_ns: int) -> float:
        """When an injection waiting for a recovered cluster is skipped (seconds after the load's
        start): its wait_recovered_s after it was due, and never past when the next injection
        of its fault is due."""
        due_s = (due_ns - self.start_ns) / 1e9
        wait = injection.fault.wait_recovered_s or 0.0
        return due_s + min(wait, injection.every_s) * self.factor if injection.every_s else due_s + wait * self.factor

    def _skip(self, injection: Injection, due_ns: int, reason: str) -> None:
        self._skipped += 1
        made_up = self._make_up(injection)
        self.events.write(run_events.FaultSkipped(kind=injection.fault.kind, step=injection.name, scheduled_ns=due_ns,
                                                  reason=reason, made_up_by=made_up.name if made_up else None))

    def _make_up(self, skipped: Injection) -> Injection | None:
        """For an injection of a recurring fault with a count, skipped or missed: one more of that
        fault, due a period after its last, while it has make-ups left (its count: at most twice as
        many due)."""
        recurring = skipped.counted
        if recurring is None or recurring.every_s is None or recurring.count is None:
            return None
        with self._lock:
            same = [i for i in self.injections if i.entry == skipped.entry]
            if len(same) >= 2 * recurring.count:  # count due, and as many made up for already
                return None
            at_s = round(max(i.fault.first_s for i in same) + recurring.every_s, 9)
            made_up = dataclasses.replace(skipped, fault=recurring.once(at_s), name=f"{skipped.entry} #{len(same) + 1}")
            self.injections.append(made_up)
            self.faults.append(made_up.fault)
            index = len(self.injections) - 1
        self._add(Step(self.warmup_s + at_s * self.factor, INJECT, index))
        return made_up

    def _heal(self, index: int, due_ns: int) -> None:
        record = self.records[index]
        self.events.write(run_events.FaultHealStart(fault_id=record.fault_id, scheduled_ns=due_ns))
        at = self.injector.revert(record, not_before_ns=due_ns)
        self.active.pop(record.fault_id, None)
        self.events.write(run_events.FaultHealed(fault_id=record.fault_id, at_ns=int(at * 1e9)))

    def _procedure(self, index: int, due_ns: int) -> None:
        """Run the procedure's playbook; each play it begins is an event, at the time it began (a play
        with `serial` begins again for each batch of hosts: one event a batch, a step a node)."""
        procedure, procedure_id = self.procedures[index], f"procedure-{index}"
        assert self.run_playbook is not None
        extravars = procedure.extravars(self.topic)
        self.events.write(run_events.ProcedureStart(procedure_id=procedure_id, procedure=procedure.name,
                                                    playbook=procedure.playbook_file, scheduled_ns=due_ns,
                                                    extravars=extravars))
        begun: list[int] = []

        def progress(event: ProgressEvent) -> None:
            if event.play and (not begun or begun[-1] != event.play_number):
                begun.append(event.play_number)
                self.playing[procedure_id] = f"{procedure.name}: {event.play}"
                self.events.write(run_events.ProcedurePlay(procedure_id=procedure_id, play=event.play, host=event.host,
                                                          play_id=event.play_id))

        try:
            result = self.run_playbook(procedure.playbook_file, progress, extravars)
        finally:
            self.playing.pop(procedure_id, None)
        self.events.write(run_events.ProcedureEnd(
            procedure_id=procedure_id, ok=result.ok, elapsed_s=result.elapsed_s, changed=result.count("changed"),
            failures=[f"{f.host}: {f.task}: {f.message}" for f in result.failures]))
        self.zookeeper_retired |= result.ok and procedure.retires_zookeeper
        if not result.ok:
            raise ProcedureError(f"{procedure.playbook_file} failed:\n{summarize_failures(result.failures)}")
