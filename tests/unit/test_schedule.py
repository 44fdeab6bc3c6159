"""The scheduled steps of a run, sequenced with fakes: no cluster, no threads of their own, no clock."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from benchmarks.core.connection import Connection
from benchmarks.harness import faults, run_end, run_state, runner, schedule
from benchmarks.hosts import inventory
from benchmarks.hosts.ansible import PlaybookResult, ProgressEvent, TaskFailure
from benchmarks.kafka.cluster import BrokerState, ClusterStatus, PartitionState
from benchmarks.spec.fault_kinds import Fault
from benchmarks.spec.fault_targets import FaultError, Resolved, Situation
from benchmarks.spec.procedures import Procedure
from benchmarks.spec.scenario import Scenario
from tests.conftest import LOCAL_INVENTORY

PROCEDURE = TypeAdapter(Procedure)

INV = inventory.load(LOCAL_INVENTORY)
FAULT: TypeAdapter = TypeAdapter(Fault)
S = 1_000_000_000  # ns
START = 1_000 * S


def status() -> ClusterStatus:
    return ClusterStatus("c", 1, tuple(BrokerState(b.broker_id, b.host, b.port, b.name, True) for b in INV.brokers),
                         (PartitionState("t", 0, 2, (2, 0, 1), (2, 0, 1)),), ())


class StepThread:
    """A thread the test finishes by hand: `spawn` for the controller."""

    def __init__(self, target, args, name, daemon):
        self.target, self.args, self.started, self.done = target, args, False, False

    def start(self):
        self.started = True

    def is_alive(self):
        return self.started and not self.done

    def finish(self):
        self.target(*self.args)
        self.done = True

    def join(self, timeout=None):
        pass


class FakeInjector:
    """Acts `delay_s` after the time it is given; fails for the kinds in `fail`."""

    def __init__(self, delay_s=0.0, fail=()):
        self.delay_s, self.fail, self.calls = delay_s, set(fail), []

    def new_record(self, kind, hosts, broker_id, reason, extravars=None):
        return faults.FaultRecord(f"f{len(self.calls)}", kind, tuple(hosts), broker_id, "inv", reason, dict(extravars or {}))

    def inject(self, record, not_before_ns=None):
        self.calls.append(("inject", record.kind, record.broker_id, not_before_ns))
        if record.kind in self.fail:
            raise FaultError(f"injecting {record.kind} failed: the host did not answer")
        return not_before_ns / 1e9 + self.delay_s

    def revert(self, record, not_before_ns=None):
        self.calls.append(("revert", record.kind, record.broker_id, not_before_ns))
        return not_before_ns / 1e9


class Events:
    def __init__(self):
        self.lines = []

    def write(self, event):
        self.lines.append(event.model_dump())

    def named(self, event):
        return [line for line in self.lines if line["event"] == event]


def controller(fault_docs, injector=None, kills=(), spawned=None, lead_s=10.0):
    events = Events()
    spawned = [] if spawned is None else spawned

    def spawn(**kwargs):
        spawned.append(StepThread(**kwargs))
        return spawned[-1]

    plan = schedule.Plan([FAULT.validate_python(doc) for doc in fault_docs], 2.0, 1.0, START, consumer_kills=list(kills))
    hands = schedule.Hands(injector or FakeInjector(), events,
                           lambda fault, busy: Situation(INV, status(), "t", random.Random(1), busy), lambda group: 4242)
    steps = schedule.Controller(plan, hands, lead_s=lead_s, spawn=spawn)
    return steps, events, spawned


def test_steps_run_one_at_a_time_so_two_faults_never_pick_the_same_broker():
    pauses = [{"kind": "broker-pause", "at_s": 1, "target": {"follower_of": 0}},
              {"kind": "broker-pause", "at_s": 1.5, "target": {"follower_of": 0}},
              {"kind": "broker-kill", "at_s": 6, "target": {"leader_of": 0}}]
    injector = FakeInjector()
    steps, events, spawned = controller(pauses, injector)
    assert steps.start_due(START).action == "inject"  # due at 3 s, started 10 s early
    assert steps.start_due(START) is None, "a second step while the first is under way"
    spawned[0].finish()
    assert steps.start_due(START) is not None
    spawned[1].finish()
    steps.start_due(START)
    spawned[2].finish()
    assert [c[2] for c in injector.calls] == [0, 1, 2]  # followers 0 then 1 (0 was busy), then the leader
    assert [c[3] for c in injector.calls] == [START + 3 * S, START + int(3.5 * S), START + 8 * S]
    assert [e["scheduled_ns"] for e in events.named("fault-intent")] == [c[3] for c in injector.calls]
    assert spawned[3].is_alive() and steps.pending(), "the kill's aim check keeps the load going"
    spawned[3].finish()
    assert not steps.invalid and not steps.pending()


def test_a_heal_is_timed_from_when_its_fault_acted():
    injector = FakeInjector(delay_s=2.5)  # the fault acts 2.5 s late
    steps, events, spawned = controller([{"kind": "broker-stop", "at_s": 1, "heal_at_s": 4, "target": {"broker": 1}}],
                                        injector, lead_s=5.0)
    steps.start_due(START)
    spawned[0].finish()
    assert steps.steps == [schedule.Step(2.0 + 1 + 2.5 + 3, "heal", 0)]  # acted at 5.5 s; lasts 3 s
    assert steps.active_names() == ["broker-stop broker 1"]
    assert steps.start_due(START + int(3.4 * S)) is None, "a heal starts at most lead_s before its time"
    assert steps.start_due(START + int(3.6 * S)) is not None
    spawned[1].finish()
    assert injector.calls[-1] == ("revert", "broker-stop", 1, START + int(8.5 * S))
    assert [e["at_ns"] for e in events.named("fault-healed")] == [START + int(8.5 * S)]
    assert steps.active_names() == []


def test_a_fault_that_fails_invalidates_the_run_and_the_next_step_still_runs():
    injector = FakeInjector(fail={"broker-pause"})
    steps, events, spawned = controller([{"kind": "broker-pause", "at_s": 1, "heal_at_s": 2},
                                         {"kind": "broker-kill", "at_s": 3, "target": {"broker": 0}}], injector)
    steps.start_due(START)
    spawned[0].finish()
    assert steps.invalid == ["faults[0] (broker-pause) inject failed: injecting broker-pause failed: the host did not "
                             "answer"]
    assert [e["step"] for e in events.named("schedule-step-failed")] == ["faults[0] (broker-pause)"]
    assert all(s.action != "heal" for s in steps.steps), "no heal for a fault that never acted"
    steps.start_due(START)
    spawned[1].finish()
    assert [c[1] for c in injector.calls] == ["broker-pause", "broker-kill"]
    assert len(steps.fault_log) == 1


def test_a_target_that_cannot_be_resolved_invalidates_the_run_before_anything_is_injected():
    injector = FakeInjector()
    steps, _, spawned = controller([{"kind": "broker-kill", "at_s": 1, "target": {"leader_of": 1}}], injector)
    steps.start_due(START)
    spawned[0].finish()
    assert steps.invalid == ["faults[0] (broker-kill) inject failed: partition t-1 has no leader to target"]
    assert injector.calls == []


def test_a_heal_due_while_a_kill_is_checked_does_not_wait_for_the_check():
    """The read that checks a kill hit the leader waits out its timeouts when every broker is down
    or paused (seen on KRaft: the heals of two paused followers acted 5.4 s late). It runs beside
    the steps: the heal starts in time; what the check finds is recorded when it ends."""
    steps, events, spawned = controller([
        {"kind": "broker-pause", "at_s": 1, "heal_at_s": 9, "target": {"broker": 0}},
        {"kind": "broker-kill", "at_s": 6, "target": {"leader_of": 0}}])
    steps.start_due(START)
    spawned[0].finish()  # the pause acted at 3 s; its heal is due at 11 s
    steps.start_due(START)
    spawned[1].finish()  # the kill acted at 8 s
    check = spawned[2]
    assert check.is_alive() and check.target == steps._check_aim
    assert steps.start_due(START + 1 * S).action == "heal", "the heal starts lead_s early, check or not"
    spawned[3].finish()
    assert events.named("fault-healed") and steps.pending()
    check.finish()
    assert not steps.pending() and not steps.invalid and not events.named("fault-missed")


def test_a_check_that_fails_invalidates_the_run():
    calls = []

    def situation(fault, busy):
        calls.append(busy)
        if len(calls) > 1:
            raise ValueError("no metadata")
        return Situation(INV, status(), "t", random.Random(1), busy)

    steps, _, events, spawned = scenario_controller(
        nemesis([{"kind": "broker-kill", "at_s": 1, "target": {"leader_of": 0}}]), situation=situation)
    run_every_step(steps, spawned)  # the kill, then its check
    assert steps.invalid == ["faults[0] (broker-kill) check failed: no metadata"]
    assert [(e["action"], e["error"]) for e in events.named("schedule-step-failed")] == [("check", "no metadata")]
    assert len(steps.fault_log) == 1 and not steps.pending()


def test_a_consumer_kill_is_not_started_early():
    steps, events, spawned = controller([], kills=[("g", 5.0)])
    assert steps.start_due(START + int(6.9 * S)) is None
    assert steps.start_due(START + 7 * S).action == "kill-consumer"
    spawned[0].finish()
    assert events.named("consumer-killed") == [{"t_ns": 0, "run_id": "", "event": "consumer-killed", "group": "g",
                                                "pid": 4242}]


class RecordingRunner:
    def __init__(self):
        self.calls = []

    def run(self, playbook, inventory, extravars=None, limit=None, check=False, progress=None):
        self.calls.append((playbook, (extravars or {}).get("fault_phase"), limit))
        return PlaybookResult(playbook, 0, "successful", {"changed": {}}, [], 0.1)


class InterruptedLoad:
    """Load processes whose producers are interrupted (Ctrl-C) once the fault has been injected."""

    start_lead_s = 3.0

    def __init__(self, steps_of):
        self.steps_of, self.end_ns, self.consumers, self.killed = steps_of, 0, [], False

    def start_producers(self, start_ns, end_ns):
        self.end_ns = end_ns

    def producing(self):
        steps = self.steps_of()
        if steps.active:
            raise KeyboardInterrupt
        return True

    def extend_load(self, until_ns):
        self.end_ns = max(self.end_ns, until_ns)

    def totals(self):
        return 0, 0, 0, 0

    def consumed(self):
        return {}

    def kill_one_consumer(self, group):
        return None

    def kill_producers(self):
        self.killed = True


def test_ctrl_c_mid_fault_heals_it(tmp_path, monkeypatch):
    """The load is interrupted while a broker is stopped: the fault is reverted from the journal
    and the producers are killed, whatever else happens."""
    monkeypatch.setattr(runner.cluster, "describe", lambda *args, **kwargs: status())
    monkeypatch.setattr(run_end, "HEAL_GRACE_S", 0.0)  # no process seen here: start.yml at once
    scenario = Scenario.model_validate({"name": "ctrl-c", "workload": {"warmup_s": 0, "duration_s": 30},
                                        "faults": [{"kind": "broker-stop", "at_s": 0, "target": {"broker": 2}}]})
    playbooks = RecordingRunner()
    journal = faults.Journal(tmp_path / "journal.jsonl")
    run: run_state.Run
    load = InterruptedLoad(lambda: run.steps)
    run = run_state.Run(scenario, INV, Path(LOCAL_INVENTORY), playbooks, "r1", tmp_path, "t", Events(),  # type: ignore[arg-type]
                        random.Random(1), 0.0, 30.0, 1.0, None, load, Connection.plaintext("127.0.0.1:9092"),
                        journal=journal)
    with pytest.raises(KeyboardInterrupt):
        try:
            runner._drive(run)
        finally:
            run_end.heal_after(run)
    assert [c[:2] for c in playbooks.calls] == [("faults/broker-stop.yml", "inject"), ("faults/broker-stop.yml", "revert"),
                                                ("start.yml", None)]
    assert load.killed and journal.outstanding(str(Path(LOCAL_INVENTORY).resolve())) == []



class FakePlaybooks:
    """Reports the plays it is given as progress (a play, or (play, its hosts): a batch of a serial
    play), then returns `ok`."""

    def __init__(self, plays, ok=True):
        self.plays, self.ok, self.calls = plays, ok, []

    def __call__(self, playbook, progress, extravars):
        self.calls.append((playbook, extravars))
        for number, entry in enumerate(self.plays, start=1):
            play, hosts = entry if isinstance(entry, tuple) else (entry, ("broker0", "broker1"))
            for host in hosts:  # several hosts and tasks per play: one event per play begun
                progress(ProgressEvent(play, "a task", host, "ok", number, play_id=f"id-{play}"))
        failures = [] if self.ok else [TaskFailure("broker1", "Restart the broker", "did not come back")]
        return PlaybookResult(playbook, 0 if self.ok else 2, "successful" if self.ok else "failed",
                              {"changed": {"broker0": 3, "broker1": 2}}, failures, 42.0)


def procedure_controller(playbooks, procedure_docs):
    events, spawned = Events(), []

    def spawn(**kwargs):
        spawned.append(StepThread(**kwargs))
        return spawned[-1]

    plan = schedule.Plan([], 2.0, 1.0, START, procedures=[PROCEDURE.validate_python(d) for d in procedure_docs],
                         topic="kb-demo")
    hands = schedule.Hands(FakeInjector(), events, lambda fault, busy: Situation(INV, status(), "t", random.Random(1), busy),
                           lambda group: 4242, run_playbook=playbooks)
    steps = schedule.Controller(plan, hands, spawn=spawn)
    return steps, events, spawned


def test_a_procedure_runs_its_playbook_at_its_time_and_records_each_play():
    # The roll is a play with `serial: 1`: it begins again for each broker, a step each, with its node.
    playbooks = FakePlaybooks(["Validate", ("Roll the brokers", ["broker1"]), ("Roll the brokers", ["broker2"]), "Finalize"])
    steps, events, spawned = procedure_controller(playbooks, [{"playbook": "migrate-to-kraft", "at_s": 5}])
    assert steps.start_due(START + int(6.9 * S)) is None, "a procedure starts at its time, not early"
    assert steps.start_due(START + 7 * S).action == "procedure"
    assert steps.pending(), "the load goes on while the procedure runs"
    spawned[0].finish()
    assert playbooks.calls == [("migrate-to-kraft.yml", {})]
    assert [e["event"] for e in events.lines] == ["procedure-start"] + ["procedure-play"] * 4 + ["procedure-end"]
    assert events.named("procedure-start")[0]["scheduled_ns"] == START + 7 * S
    assert [e["play"] for e in events.named("procedure-play")] == ["Validate", "Roll the brokers", "Roll the brokers",
                                                                   "Finalize"]
    assert [e["host"] for e in events.named("procedure-play")] == ["broker0", "broker1", "broker2", "broker0"]
    assert [e["play_id"] for e in events.named("procedure-play")] == ["id-Validate", "id-Roll the brokers",
                                                                      "id-Roll the brokers", "id-Finalize"]
    assert events.named("procedure-end")[0] | {"t_ns": 0} == {
        "event": "procedure-end", "procedure_id": "procedure-0", "ok": True, "elapsed_s": 42.0, "changed": 5,
        "failures": [], "t_ns": 0, "run_id": ""}
    assert not steps.invalid and not steps.pending()


@pytest.mark.parametrize(("playbook", "ok", "retired"), [("migrate-to-kraft", True, True), ("migrate-to-kraft", False, False),
                                                        ("rolling-restart", True, False)])
def test_only_a_finalized_migration_retires_zookeeper(playbook, ok, retired):
    steps, _, spawned = procedure_controller(FakePlaybooks(["Finalize"], ok=ok), [{"playbook": playbook, "at_s": 1}])
    steps.start_due(START + 3 * S)
    spawned[0].finish()
    assert steps.zookeeper_retired is retired


def test_a_procedure_that_fails_invalidates_the_run_naming_the_task():
    steps, events, spawned = procedure_controller(FakePlaybooks(["Roll the brokers"], ok=False),
                                                  [{"playbook": "rolling-restart", "at_s": 1}])
    steps.start_due(START + 3 * S)
    spawned[0].finish()
    assert events.named("procedure-end")[0]["failures"] == ["broker1: Restart the broker: did not come back"]
    assert len(steps.invalid) == 1
    assert steps.invalid[0].startswith("procedures[0] (rolling-restart) procedure failed: rolling-restart.yml failed")
    assert "did not come back" in steps.invalid[0]


def test_a_procedure_gives_its_playbook_its_parameters_and_the_run_records_them():
    playbooks = FakePlaybooks(["Reassign"])
    steps, events, spawned = procedure_controller(playbooks, [
        {"playbook": "reassign-partitions", "at_s": 1, "brokers": [1, 0], "throttle_bytes": 500_000},
        {"playbook": "upgrade", "at_s": 2, "to_version": "4.3.1", "finalize": False}])
    for second in (3, 4):
        steps.start_due(START + second * S)
        spawned[-1].finish()
    reassign = {"reassign_topic": "kb-demo", "reassign_brokers": [1, 0], "reassign_throttle_bytes": 500_000}
    upgrade = {"kafka_upgrade_version": "4.3.1", "kafka_upgrade_finalize": False}
    assert playbooks.calls == [("reassign-partitions.yml", reassign), ("upgrade.yml", upgrade)]
    assert [e["extravars"] for e in events.named("procedure-start")] == [reassign, upgrade]
    assert [e["procedure"] for e in events.named("procedure-start")] == ["reassign-partitions", "upgrade"]
    assert not steps.invalid


def test_the_progress_line_names_the_play_a_running_procedure_is_in():
    seen = []

    class Watching(FakePlaybooks):
        def __call__(self, playbook, progress, extravars):
            def watched(event):
                progress(event)
                seen.append(steps.procedure_plays())
            return super().__call__(playbook, watched, extravars)

    steps, _, spawned = procedure_controller(Watching(["Validate", "Roll the brokers"]),
                                             [{"playbook": "rolling-restart", "at_s": 0}])
    steps.start_due(START + 2 * S)
    spawned[0].finish()
    assert seen[0] == ["rolling-restart: Validate"] and seen[-1] == ["rolling-restart: Roll the brokers"]
    assert steps.procedure_plays() == [] and steps.active_names() == [], "a procedure that ended is no longer shown"


def nemesis(faults, duration_s=9.0, **over) -> Scenario:
    return Scenario.model_validate({"name": "n", "workload": {"duration_s": duration_s}, "faults": faults, **over})


def scenario_controller(s: Scenario, injector=None, **options):
    """The controller of a scenario's injections over fakes: (controller, injector, events, threads)."""
    injector, events, spawned = injector or FakeInjector(), Events(), []

    def spawn(**kwargs):
        spawned.append(StepThread(**kwargs))
        return spawned[-1]

    situation = options.pop("situation", lambda fault, busy: Situation(INV, status(), "t", random.Random(1), busy))
    plan = schedule.Plan(s.injections(), 2.0, 1.0, START, max_brokers_down=s.max_brokers_down)
    hands = schedule.Hands(injector, events, situation, lambda group: None,
                           recovery_problems=options.pop("recovery_problems", list))
    steps = schedule.Controller(plan, hands, lead_s=0.0, spawn=spawn, **options)
    return steps, injector, events, spawned


def run_every_step(steps, spawned) -> None:
    """Start and finish each step, as if every one were due, and each aim check a step started
    before the next step."""
    while steps.pending():
        started = [t for t in spawned if t.is_alive()]
        if started:
            started[0].finish()
        else:
            assert steps.start_due(START + 100 * S) is not None


def test_a_recurring_fault_is_an_injection_every_period_each_healed_after_its_duration():
    s = nemesis([{"kind": "broker-kill", "every_s": 10, "duration_s": 4, "target": {"leader_of": 0}},
                 {"kind": "broker-pause", "at_s": 5, "every_s": 20, "until_s": 30, "duration_s": 2},
                 {"kind": "broker-stop", "at_s": 12, "heal_at_s": 13}], duration_s=45)
    got = [(i.name, i.fault.kind, i.fault.at_s, i.fault.heal_at_s) for i in s.injections()]
    assert got == [("faults[1] #1", "broker-pause", 5, 7), ("faults[0] #1", "broker-kill", 10, 14),
                   ("faults[2]", "broker-stop", 12, 13), ("faults[0] #2", "broker-kill", 20, 24),
                   ("faults[1] #2", "broker-pause", 25, 27), ("faults[0] #3", "broker-kill", 30, 34),
                   ("faults[0] #4", "broker-kill", 40, 44)]
    assert all(i.fault.every_s is None for i in s.injections())
    assert [i.recurring for i in s.injections()] == [True, True, False, True, True, True, True]
    assert s.faults[0].label == "broker-kill (leader of 0) every 10 s from 10 s, 4 s each"
    assert s.faults[1].schedule_entry() == {"kind": "broker-pause", "target": "random broker", "at_s": 5,
                                            "heal_at_s": None, "every_s": 20, "duration_s": 2, "until_s": 30,
                                            "count": None}


@pytest.mark.parametrize(("fault", "message"), [
    ({"kind": "broker-kill", "every_s": 10}, "duration_s is required with every_s"),
    ({"kind": "broker-kill", "every_s": 10, "duration_s": 2, "heal_at_s": 30}, "heal_at_s is for a one-off fault"),
    ({"kind": "broker-kill", "at_s": 1, "duration_s": 2}, "duration_s belong to a recurring fault"),
    ({"kind": "broker-kill"}, "at_s is required (or every_s, for a recurring fault)"),
    ({"kind": "broker-kill", "every_s": 5, "duration_s": 2, "until_s": 5}, "until_s (5) must come after the first"),
    ({"kind": "broker-kill", "every_s": 5, "duration_s": 2, "until_s": 50}, "until_s (50) must not pass workload.duration_s"),
    ({"kind": "broker-kill", "every_s": 60, "duration_s": 2}, "faults[0].every_s (60): the first injection must fall"),
    ({"kind": "broker-kill", "at_s": 1, "count": 3}, "count belong to a recurring fault"),
    ({"kind": "broker-kill", "every_s": 5, "duration_s": 2, "until_s": 15, "count": 3}, "count and until_s both end"),
    ({"kind": "broker-kill", "every_s": 5, "duration_s": 2, "count": 0}, "greater than or equal to 1"),
])
def test_a_recurring_fault_is_validated(fault, message):
    from benchmarks.spec import scenario as sc

    with pytest.raises(sc.ScenarioError) as info:
        sc.parse({"scenario": {"name": "n", "workload": {"duration_s": 20}, "faults": [fault]}}, "n.yml")
    assert message in str(info.value)


def test_an_injection_due_while_max_brokers_down_are_down_is_skipped_and_recorded():
    """A kill every 2 s lasting 3 s, at most one broker down: every other injection is skipped."""
    steps, injector, events, spawned = scenario_controller(
        nemesis([{"kind": "broker-kill", "every_s": 2, "duration_s": 3}], max_brokers_down=1))
    run_every_step(steps, spawned)
    assert [(c[0], c[3]) for c in injector.calls] == [("inject", START + 4 * S), ("revert", START + 7 * S),
                                                       ("inject", START + 8 * S), ("revert", START + 11 * S)]
    skipped = events.named("fault-skipped")
    assert [(e["step"], e["scheduled_ns"]) for e in skipped] == [("faults[0] #2", START + 6 * S),
                                                                 ("faults[0] #4", START + 10 * S)]
    assert skipped[0]["reason"].endswith("max_brokers_down is 1") and not steps.invalid


def test_a_recurring_fault_with_a_count_makes_up_for_each_injection_skipped_at_the_end_of_its_schedule():
    """A kill every 2 s lasting 3 s, three to act, at most one broker down: the second and the
    fourth are skipped, each made up for by one more a period after the last one due, so that
    three act, past the workload's duration (the load goes on while steps are pending)."""
    s = nemesis([{"kind": "broker-kill", "every_s": 2, "duration_s": 3, "count": 3}], duration_s=5, max_brokers_down=1)
    assert [(i.name, i.fault.at_s, i.fault.heal_at_s) for i in s.injections()] == [
        ("faults[0] #1", 2, 5), ("faults[0] #2", 4, 7), ("faults[0] #3", 6, 9)]
    assert s.faults[0].label == "broker-kill (random broker) every 2 s from 2 s, 3 s each, 3 to act"
    assert s.faults[0].schedule_entry()["count"] == 3
    steps, injector, events, spawned = scenario_controller(s)
    assert steps.tally() == schedule.Tally(acted=0, skipped=0, missed=0, to_come=3)
    run_every_step(steps, spawned)
    assert [(c[0], c[3]) for c in injector.calls] == [
        ("inject", START + 4 * S), ("revert", START + 7 * S), ("inject", START + 8 * S), ("revert", START + 11 * S),
        ("inject", START + 12 * S), ("revert", START + 15 * S)]
    assert [(e["step"], e["scheduled_ns"], e["made_up_by"]) for e in events.named("fault-skipped")] == [
        ("faults[0] #2", START + 6 * S, "faults[0] #4"), ("faults[0] #4", START + 10 * S, "faults[0] #5")]
    assert len(events.named("fault-injected")) == 3 and not steps.invalid
    assert steps.tally() == schedule.Tally(acted=3, skipped=2, missed=0, to_come=0)


def test_a_recurring_fault_with_a_count_makes_up_for_at_most_count_skipped():
    """A broker stopped from 1 s to 20 s, and two kills to act every 2 s with at most one broker
    down: both are skipped, both made up for, and the make-ups skipped too are not made up for."""
    s = nemesis([{"kind": "broker-stop", "at_s": 1, "heal_at_s": 20},
                 {"kind": "broker-kill", "every_s": 2, "duration_s": 1, "count": 2}], duration_s=30, max_brokers_down=1)
    steps, injector, events, spawned = scenario_controller(s)
    run_every_step(steps, spawned)
    assert [c[:2] for c in injector.calls] == [("inject", "broker-stop"), ("revert", "broker-stop")]
    assert [(e["step"], e["made_up_by"]) for e in events.named("fault-skipped")] == [
        ("faults[1] #1", "faults[1] #3"), ("faults[1] #2", "faults[1] #4"), ("faults[1] #3", None),
        ("faults[1] #4", None)]


def test_an_injection_of_a_recurring_fault_without_a_target_is_skipped_a_one_off_fails_the_run():
    """Partition 1 has no leader (the status shows only partition 0): the recurring fault's
    injections are skipped and recorded, the one-off fault's step fails and invalidates the run."""
    steps, injector, events, spawned = scenario_controller(
        nemesis([{"kind": "broker-kill", "every_s": 4, "duration_s": 1, "target": {"leader_of": 1}},
                 {"kind": "broker-kill", "at_s": 6, "target": {"leader_of": 1}}], duration_s=9))
    run_every_step(steps, spawned)
    assert injector.calls == []
    assert [(e["step"], e["reason"]) for e in events.named("fault-skipped")] == [
        ("faults[0] #1", "no target: partition t-1 has no leader to target"),
        ("faults[0] #2", "no target: partition t-1 has no leader to target")]
    assert steps.invalid == ["faults[1] (broker-kill) inject failed: partition t-1 has no leader to target"]


def test_an_injection_waits_for_a_recovered_cluster_without_holding_up_heals_and_gives_up_in_time():
    """A kill every 4 s lasting 3 s (due at 6, 10 and 14 s), each waiting up to 5 s for a
    recovered cluster. The first finds it recovered; the second waits until 12 s and acts; the
    third never sees it recovered: it looks again every RECHECK_S, each time a step of its own, so
    the second kill's heal (due at 15 s) is not held up, and it is skipped at 18 s, when the next
    would be due (its period is shorter than its wait)."""
    s = nemesis([{"kind": "broker-kill", "every_s": 4, "duration_s": 3, "wait_recovered_s": 5}], duration_s=15)
    now = [START]

    class ClockedInjector(FakeInjector):
        def inject(self, record, not_before_ns=None):
            super().inject(record, not_before_ns)
            return max(now[0], not_before_ns) / 1e9

    injector, order = ClockedInjector(), []

    def problems():
        injected = len([c for c in injector.calls if c[0] == "inject"])
        return [] if injected == 0 or (injected == 1 and now[0] >= START + 12 * S) else ["broker 1 is fenced"]

    steps, _, events, spawned = scenario_controller(s, injector, recovery_problems=problems, clock=lambda: now[0])
    while steps.pending():
        step = steps.start_due(now[0])
        if step is None:
            now[0] += S // 10
            continue
        order.append((step.action, round(step.at_s, 1)))
        spawned[-1].finish()
    assert [(c[0], c[3]) for c in injector.calls] == [("inject", START + 6 * S), ("revert", START + 9 * S),
                                                       ("inject", START + 10 * S), ("revert", START + 15 * S)]
    rechecks = [at for action, at in order if action == "recheck"]
    assert rechecks[0] == 10.5 and 14.5 in rechecks and rechecks[-1] == 18.0
    assert order.index(("recheck", 14.5)) < order.index(("heal", 15.0)) < order.index(("recheck", 15.5))
    [skipped] = events.named("fault-skipped")
    assert (skipped["step"], skipped["reason"]) == (
        "faults[0] #3", "the cluster had not recovered 4 s after the injection was due: broker 1 is fenced")


def led_by(*leaders, asked=None):
    """A situation callable whose every call shows partition t-0 led by the next of `leaders`
    (and appends the brokers it is told are busy to `asked`)."""
    shown = iter(leaders)

    def situation(fault, busy):
        leader = next(shown)
        if asked is not None:
            asked.append(set(busy))
        part = PartitionState("t", 0, leader, (0, 1, 2), (0, 1, 2))
        return Situation(INV, dataclasses.replace(status(), partitions=(part,)), "t", random.Random(1), busy)
    return situation


def test_a_kill_whose_leader_moved_before_it_acted_is_recorded_as_missed_and_made_up_for():
    """Two kills of partition 0's leader to act. The first is resolved to broker 2, but the cluster
    read just after it acted shows broker 0 leading (a preferred-leader election between the
    two): it missed, and one more is due a period after the last. The cluster is read twice for
    each kill: to resolve its target, then to check it, the target then told busy (on KRaft its
    node is asked last: a killed or paused node holds a request until it times out)."""
    s = nemesis([{"kind": "broker-kill", "every_s": 2, "duration_s": 1, "count": 2, "target": {"leader_of": 0}}],
                duration_s=5)
    asked: list[set[int]] = []
    steps, injector, events, spawned = scenario_controller(s, situation=led_by(2, 0, 0, 0, 1, 1, asked=asked))
    run_every_step(steps, spawned)
    assert asked == [set(), {2}, set(), {0}, set(), {1}]
    assert [(c[0], c[2]) for c in injector.calls if c[0] == "inject"] == [("inject", 2), ("inject", 0), ("inject", 1)]
    [missed] = events.named("fault-missed")
    assert (missed["fault_id"], missed["step"], missed["reason"], missed["made_up_by"]) == (
        "f0", "faults[0] #1", "the leader of t-0 was broker 0, not broker 2", "faults[0] #3")
    assert len(events.named("fault-injected")) == 3 and not events.named("fault-skipped") and not steps.invalid
    assert steps.tally() == schedule.Tally(acted=3, skipped=0, missed=1, to_come=0)


@pytest.mark.parametrize(("fault", "holder", "why"), [
    ({"kind": "broker-kill", "at_s": 1, "target": {"leader_of": 0}}, 0, "the leader of t-0 was broker 0, not broker 2"),
    ({"kind": "broker-pause", "at_s": 1, "target": {"leader_of": 0}}, 1, "the leader of t-0 was broker 1, not broker 2"),
    ({"kind": "broker-kill", "at_s": 1, "target": {"leader_of": 0}}, 2, None),
    ({"kind": "broker-kill", "at_s": 1, "target": {"leader_of": 0}}, None, None),  # leaderless: nothing to tell
    # A controlled shutdown hands leadership over as it acts: whoever leads after it tells nothing.
    ({"kind": "broker-stop", "at_s": 1, "target": {"leader_of": 0}}, 0, None),
    ({"kind": "broker-kill", "at_s": 1, "target": {"broker": 2}}, 0, None),
    ({"kind": "broker-kill", "at_s": 1, "target": {"follower_of": 0}}, 0, None),
])
def test_a_fault_misses_when_the_role_its_target_was_chosen_for_moved(fault, holder, why):
    situation = led_by(holder)(None, frozenset())
    assert FAULT.validate_python(fault).moved(situation, Resolved(("broker2",), 2, "leader of t-0: broker 2")) == why


def test_a_kill_whose_target_names_no_role_reads_the_cluster_once():
    """A random broker killed: nothing could have moved, so the cluster is read to resolve the
    target and not again after the act (`led_by` has one status to show)."""
    s = nemesis([{"kind": "broker-kill", "at_s": 1, "heal_at_s": 2, "target": {"random": True}}], duration_s=5)
    steps, injector, events, spawned = scenario_controller(s, situation=led_by(2))
    run_every_step(steps, spawned)
    assert [c[0] for c in injector.calls] == ["inject", "revert"] and not steps.invalid
    assert steps.tally() == schedule.Tally(acted=1)


def test_a_kill_of_the_controller_misses_when_another_broker_became_it():
    kill = FAULT.validate_python({"kind": "broker-kill", "at_s": 1, "target": {"controller": True}})
    situation = Situation(INV, status(), "t", random.Random(1))  # broker 1 is the controller
    assert kill.moved(situation, Resolved(("broker1",), 1, "controller: broker 1")) is None
    assert kill.moved(situation, Resolved(("broker0",), 0, "controller: broker 0")) == (
        "the controller was broker 1, not broker 0")
