"""Every step of a run under injected errors, with no cluster.

A double of the Kafka client (the calls the run's steps make) and of the playbook runner raise
or return, once, at one step of a run, each error in turn: a "not yet" error of the client (or
a playbook that reached no host) is retried and recorded as a retry-waited event, and the run
stays valid; any other error fails that run only. It is invalid with the step and the error
named, its traceback is in error.txt, its faults are healed, what its load wrote is read back,
its summary.json is written, and `execute` returns, so the suite goes on to the next run.

The steps' bodies that talk to Kafka are replaced by doubles making one call each through the
run's retry policy; the heal, the final read's bracket, the collection of logs and ledgers and
the summary are the runner's own."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from benchmarks.core.connection import Connection
from benchmarks.harness import faults, retry, run_end, run_state
from benchmarks.harness import final_read as final_read_lib
from benchmarks.harness import runner as runner_lib
from benchmarks.hosts import inventory as inventory_lib
from benchmarks.hosts.ansible import PlaybookResult, TaskFailure
from benchmarks.kafka import cluster
from benchmarks.record import records, run_events
from benchmarks.record.event_log import EventLog
from benchmarks.spec import scenario as sc
from tests.conftest import LOCAL_INVENTORY

# The steps of a run in order (runner.execute), and which double each one's errors come from.
KAFKA_STEPS = ("prepare", "timeline", "warm-up", "load", "final read")
PLAYBOOK_STEPS = ("heal", "collect")
STEPS = ("prepare", "timeline", "warm-up", "load", "heal", "final read", "collect")
# "Not yet" answers, and answers that are not, of the Kafka client.
RETRIABLE = (KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
             KafkaError._TIMED_OUT)
FATAL = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.INVALID_REPLICATION_FACTOR)


class KafkaDouble:
    """The Kafka client as the steps see it: each step makes one call, and the call of `step`
    raises `error` once."""

    def __init__(self, step: str | None, error: BaseException | None) -> None:
        self.step, self.error = step, error
        self.calls: list[str] = []

    def call(self, step: str) -> str:
        self.calls.append(step)
        if step == self.step and self.error is not None:
            error, self.error = self.error, None
            raise error
        return "answer"


def playbook_result(playbook: str, ok: bool = True, unreachable: bool = False) -> PlaybookResult:
    failures = [] if ok else [TaskFailure("localhost", "Start the brokers", "it failed", unreachable=unreachable)]
    return PlaybookResult(playbook, 0 if ok else 2, "successful" if ok else "failed", {}, failures, 0.1)


class PlaybookDouble:
    """The playbook runner: start.yml (the heal) and collect-logs.yml (the collection) answer
    `answer` once at the step that fails; every other playbook succeeds."""

    PLAYBOOKS = {"heal": "start.yml", "collect": "collect-logs.yml"}

    def __init__(self, step: str | None, answer: PlaybookResult | BaseException | None) -> None:
        self.failing = self.PLAYBOOKS.get(step or "")
        self.answer = answer
        self.played: list[str] = []

    def run(self, playbook, inventory, extravars=None, limit=None, check=False, progress=None) -> PlaybookResult:
        self.played.append(playbook)
        if playbook == self.failing and self.answer is not None:
            answer, self.answer = self.answer, None
            if isinstance(answer, BaseException):
                raise answer
            return answer
        return playbook_result(playbook)


class Timeline:
    """The timeline sampler: its clients are made through the Kafka double."""

    kafka: KafkaDouble

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.kafka.call("timeline")

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.fixture
def doubles(monkeypatch):
    """Install the doubles for a run failing at `step` with `error`; returns (kafka, playbooks)."""
    monkeypatch.setattr(retry, "FIRST_BACKOFF_S", 0.01)
    monkeypatch.setattr(run_end, "HEAL_GRACE_S", 0.0)
    monkeypatch.setattr(cluster, "nodes_not_up", lambda *a, **k: ["broker 0: down"])  # the heal runs start.yml

    def install(step: str | None, kafka_error: BaseException | None = None,
                playbook_answer: PlaybookResult | BaseException | None = None) -> tuple[KafkaDouble, PlaybookDouble]:
        kafka = KafkaDouble(step, kafka_error)
        playbooks = PlaybookDouble(step, playbook_answer)

        def one_call(run: run_state.Run) -> None:
            run.retrier.call(run.step, f"a call of {run.step}", lambda: kafka.call(run.step), retry.CALL_RETRY_S)

        def drive(run: run_state.Run) -> None:
            run.start_ns = time.time_ns()  # the load started: its writes are read back whatever follows
            one_call(run)

        def final_read(conn, topic, run_id, ledger_dir, retrier=retry.DEFAULT, **kwargs) -> dict[int, int]:
            retrier.call("final read", "end offsets", lambda: kafka.call("final read"), retry.CALL_RETRY_S)
            return {0: 0}

        Timeline.kafka = kafka
        monkeypatch.setattr(runner_lib, "TimelineSampler", Timeline)
        monkeypatch.setattr(runner_lib, "_prepare", one_call)
        monkeypatch.setattr(runner_lib, "_warm_up", one_call)
        monkeypatch.setattr(runner_lib, "_drive", drive)
        monkeypatch.setattr(final_read_lib, "read", final_read)
        monkeypatch.setattr(run_end.topics, "delete_topic", lambda conn, topic: kafka.call("delete the topic") == "answer")
        return kafka, playbooks

    return install


def execute(tmp_path: Path, playbooks: PlaybookDouble) -> tuple[records.RunSummary, Path, list[dict[str, Any]]]:
    [planned] = sc.parse({"scenario": {"name": "isolated", "workload": {"rate": 100, "duration_s": 5},
                                       "faults": [{"kind": "broker-kill", "at_s": 1, "target": {"broker": 1}}]}})
    assert planned.scenario is not None
    inventory = inventory_lib.load(LOCAL_INVENTORY)
    summary = runner_lib.execute(planned.scenario, inventory, tmp_path / "inventory", playbooks, tmp_path / "results",
                                 seed=1, conn=Connection("127.0.0.1:1"))
    run_dir = tmp_path / "results" / os.path.basename(summary.run_dir)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert records.RunSummary.model_validate_json((run_dir / "summary.json").read_text()) == summary
    return summary, run_dir, events


def named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == name]


def test_a_run_without_errors_is_valid_and_makes_every_call_once(doubles, tmp_path):
    kafka, playbooks = doubles(None)
    summary, run_dir, events = execute(tmp_path, playbooks)
    assert summary.valid and summary.checked and summary.failed_steps == []
    assert kafka.calls == [*KAFKA_STEPS, "delete the topic"], "the run's topic is deleted last"
    [deleted] = named(events, "topic-deleted")
    assert (deleted["topic"], deleted["deleted"], deleted["error"]) == (summary.topic, True, None)
    # The heal after the load, then the logs (the heal before the run is _prepare's: a double here).
    assert playbooks.played == ["start.yml", "collect-logs.yml"]
    [healed] = named(events, "healed")
    assert healed["start_playbook"] and healed["not_up"] == ["broker 0: down"], "why start.yml ran is recorded"
    assert not named(events, "retry-waited") and not named(events, "run-failed")
    assert not (run_dir / "error.txt").exists()


def test_a_topic_that_cannot_be_deleted_leaves_the_run_valid_and_says_why(doubles, tmp_path):
    kafka, playbooks = doubles("delete the topic", KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
    summary, _, events = execute(tmp_path, playbooks)
    assert summary.valid and summary.checked and summary.failed_steps == [], summary.invalid_reasons
    [deleted] = named(events, "topic-deleted")
    assert deleted["deleted"] is False and "TOPIC_AUTHORIZATION_FAILED" in deleted["error"], deleted
    assert kafka.calls.count("delete the topic") == 1 and not named(events, "run-failed")


def test_a_not_yet_answer_to_the_topics_deletion_is_retried_and_the_topic_deleted(doubles, tmp_path):
    kafka, playbooks = doubles("delete the topic", KafkaException(KafkaError(KafkaError.NOT_CONTROLLER)))
    summary, _, events = execute(tmp_path, playbooks)
    assert summary.valid, summary.invalid_reasons
    assert kafka.calls.count("delete the topic") == 2
    [deleted] = named(events, "topic-deleted")
    assert (deleted["deleted"], deleted["error"]) == (True, None)
    [waited] = named(events, "retry-waited")
    assert (waited["step"], waited["errors"], waited["ok"]) == ("delete the topic", ["NOT_CONTROLLER"], True)


@pytest.mark.parametrize("code", RETRIABLE, ids=[KafkaError(c).name() for c in RETRIABLE])
@pytest.mark.parametrize("step", KAFKA_STEPS)
def test_a_not_yet_answer_at_any_step_is_retried_and_recorded(doubles, tmp_path, step, code):
    kafka, playbooks = doubles(step, KafkaException(KafkaError(code)))
    summary, _, events = execute(tmp_path, playbooks)
    assert summary.valid, summary.invalid_reasons
    assert summary.checked
    assert kafka.calls.count(step) == 2
    [waited] = named(events, "retry-waited")
    assert (waited["step"], waited["errors"], waited["attempts"], waited["ok"]) == (step, [KafkaError(code).name()], 2,
                                                                                    True)


@pytest.mark.parametrize("step", PLAYBOOK_STEPS)
def test_a_playbook_that_reached_no_host_at_any_step_is_run_again(doubles, tmp_path, step):
    _, playbooks = doubles(step, playbook_answer=playbook_result("any", ok=False, unreachable=True))
    summary, _, events = execute(tmp_path, playbooks)
    assert summary.valid, summary.invalid_reasons
    [waited] = named(events, "retry-waited")
    assert (waited["step"], waited["errors"], waited["ok"]) == (step, ["Unreachable"], True)
    assert playbooks.played.count(PlaybookDouble.PLAYBOOKS[step]) == 2


def fatal_errors() -> list[tuple[str, dict[str, Any]]]:
    """Each step with each error that is not "not yet": the client's at the steps that call Kafka,
    a failed playbook and a crashing playbook runner at the steps that run playbooks."""
    out = [(step, {"kafka_error": KafkaException(KafkaError(code))}) for step in KAFKA_STEPS for code in FATAL]
    out += [(step, {"kafka_error": RuntimeError("a bug in the harness")}) for step in KAFKA_STEPS]
    out += [("heal", {"playbook_answer": playbook_result("start.yml", ok=False)})]
    out += [(step, {"playbook_answer": OSError("ansible-runner could not start")}) for step in PLAYBOOK_STEPS]
    return out


@pytest.mark.parametrize(("step", "error"), fatal_errors(),
                         ids=[f"{step}-{type(next(iter(e.values()))).__name__}-{i}"
                              for i, (step, e) in enumerate(fatal_errors())])
def test_any_other_error_at_any_step_fails_that_run_only(doubles, tmp_path, step, error):
    kafka, playbooks = doubles(step, **error)
    summary, run_dir, events = execute(tmp_path, playbooks)  # it returns: the suite goes on
    assert not summary.valid
    assert summary.failed_steps == [step]
    [reason] = summary.invalid_reasons
    assert reason.startswith(f"{step} failed: ")
    [failed] = named(events, "run-failed")
    assert failed["step"] == step and failed["error"] in reason
    assert f"--- {step}\nTraceback" in (run_dir / "error.txt").read_text()
    # The steps after a failed one before the load are not taken; the heal always is.
    taken = STEPS.index(step)
    loaded = taken > STEPS.index("load") or step == "load"
    assert kafka.calls == [*(s for s in KAFKA_STEPS if STEPS.index(s) <= taken or (loaded and s == "final read")),
                           "delete the topic"], "a failed run's topic is deleted too"
    assert named(events, "heal-after-run"), "its faults were healed"
    assert playbooks.played[-1] == "collect-logs.yml"
    # What its load wrote was read back, unless the failure kept the final read from ending.
    assert summary.checked is (loaded and step != "final read")
    assert bool(named(events, "final-read-end")) is summary.checked


@pytest.mark.parametrize("retired", [False, True])
def test_the_heal_after_a_finalized_migration_neither_waits_for_zookeeper_nor_starts_it(monkeypatch, tmp_path, retired):
    """A migration that ended finalized stopped ZooKeeper for good (start.yml leaves it stopped):
    the heal looks at the brokers only, and a cluster whose brokers run is healed without start.yml.
    Before that, a stopped ZooKeeper is a node down: start.yml runs."""
    migration = inventory_lib.load(LOCAL_INVENTORY.parent / "local-migration")
    assert migration.zookeepers
    asked: list[tuple[str, ...]] = []

    def not_up(inventory, conn=None, process_probe=None):
        asked.append(tuple(z.name for z in inventory.zookeepers))
        return [f"ZooKeeper {z.name}: its process is stopped" for z in inventory.zookeepers]

    monkeypatch.setattr(cluster, "nodes_not_up", not_up)
    playbooks = PlaybookDouble(None, None)
    events = EventLog(tmp_path / "events.jsonl")
    run = SimpleNamespace(inventory=migration, inventory_path=migration.path, remote=None, conn=Connection("127.0.0.1:1"),
                          runner=playbooks, journal=faults.Journal(tmp_path / "journal.jsonl"), events=events,
                          steps=SimpleNamespace(zookeeper_retired=retired))
    run_end.heal(run)
    [healed] = [e for e in events.read() if isinstance(e, run_events.Healed)]
    if retired:
        assert asked == [()] and playbooks.played == [] and not healed.start_playbook
    else:
        assert asked == [tuple(z.name for z in migration.zookeepers)] and playbooks.played == ["start.yml"]
        assert healed.not_up == [f"ZooKeeper {z.name}: its process is stopped" for z in migration.zookeepers]
