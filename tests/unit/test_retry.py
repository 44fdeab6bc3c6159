"""The retry policy of a run's calls to Kafka and its playbooks, on a fake clock: "not yet" errors
retried and recorded, the rest raised at once, a bound that holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException

from benchmarks.core.wait import WaitTimeout
from benchmarks.harness import retry
from benchmarks.hosts.ansible import PlaybookResult, TaskFailure
from benchmarks.kafka import topics
from benchmarks.kafka.cluster import ClusterUnreachable
from benchmarks.record import run_events


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def kafka(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


class Flaky:
    """A call that raises each of `errors` once, in turn, then answers."""

    def __init__(self, *errors: BaseException, answer: object = "answer") -> None:
        self.errors, self.answer, self.calls = list(errors), answer, 0

    def __call__(self) -> object:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.answer


def retrier() -> tuple[retry.Retrier, list[run_events.Event], FakeClock]:
    events: list[run_events.Event] = []
    clock = FakeClock()
    return retry.Retrier(record=events.append, clock=clock, sleep=clock.sleep), events, clock


@pytest.mark.parametrize("code", [KafkaError.OFFSET_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
                                  KafkaError.LEADER_NOT_AVAILABLE, KafkaError.REQUEST_TIMED_OUT, KafkaError._TIMED_OUT,
                                  KafkaError._TRANSPORT, KafkaError.NOT_COORDINATOR, KafkaError.UNKNOWN_TOPIC_OR_PART])
def test_a_not_yet_error_is_retried_with_backoff_and_the_wait_recorded(code):
    policy, events, clock = retrier()
    call = Flaky(kafka(code), kafka(code))
    assert policy.call("final read", "end offset of t-0", call, within_s=60) == "answer"
    assert call.calls == 3
    assert clock.slept == [retry.FIRST_BACKOFF_S, retry.FIRST_BACKOFF_S * retry.BACKOFF_FACTOR]
    [event] = events
    assert isinstance(event, run_events.RetryWaited)
    assert (event.step, event.call, event.attempts, event.errors, event.ok) == (
        "final read", "end offset of t-0", 3, [KafkaError(code).name()], True)
    assert event.waited_s == pytest.approx(0.75)


def test_a_call_that_answers_at_once_records_nothing():
    policy, events, clock = retrier()
    assert policy.call("prepare", "create t", Flaky(), within_s=60) == "answer"
    assert events == [] and clock.slept == []


@pytest.mark.parametrize("error", [kafka(KafkaError.TOPIC_AUTHORIZATION_FAILED), kafka(KafkaError.INVALID_CONFIG),
                                   RuntimeError("a bug"), WaitTimeout("timed out after 60 s waiting for x", None)])
def test_any_other_error_is_raised_at_once(error):
    policy, events, clock = retrier()
    call = Flaky(error)
    with pytest.raises(type(error)):
        policy.call("prepare", "create t", call, within_s=60)
    assert call.calls == 1 and events == [] and clock.slept == []


def test_a_fatal_error_after_retries_is_raised_and_the_retries_recorded():
    policy, events, _ = retrier()
    call = Flaky(kafka(KafkaError.LEADER_NOT_AVAILABLE), kafka(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    with pytest.raises(KafkaException):
        policy.call("prepare", "create t", call, within_s=60)
    [event] = events
    assert (event.attempts, event.errors, event.ok) == (2, ["LEADER_NOT_AVAILABLE"], False)


def test_a_not_yet_error_past_the_bound_fails_naming_step_call_and_error():
    policy, events, clock = retrier()
    call = Flaky(*[kafka(KafkaError.OFFSET_NOT_AVAILABLE)] * 100)
    with pytest.raises(retry.RetriesExhausted, match=r"final read: end offset of t-0: still OFFSET_NOT_AVAILABLE"):
        policy.call("final read", "end offset of t-0", call, within_s=10)
    assert clock.now <= 10
    assert max(clock.slept) <= retry.MAX_BACKOFF_S
    [event] = events
    assert event.ok is False and event.attempts == call.calls


def test_an_error_raised_from_a_not_yet_error_is_judged_by_its_cause():
    """topics.ensure_topic raises TopicError from the client's exception."""
    policy, _, _ = retrier()
    wrapped = topics.TopicError("cannot create topic t")
    wrapped.__cause__ = kafka(KafkaError.NOT_CONTROLLER)
    assert retry.retriable(wrapped) == "NOT_CONTROLLER"
    assert policy.call("prepare", "create t", Flaky(wrapped), within_s=60) == "answer"


def test_no_broker_answering_is_retriable_and_a_harness_wait_is_not():
    assert retry.retriable(ClusterUnreachable("no broker answered")) == "ClusterUnreachable"
    assert retry.retriable(ConnectionRefusedError()) == "ConnectionRefusedError"
    assert retry.retriable(WaitTimeout("timed out", None)) is None
    assert retry.retriable(ValueError("no")) is None


class FakeRunner:
    """A playbook runner whose results are given in turn."""

    def __init__(self, *results: PlaybookResult) -> None:
        self.results, self.calls = list(results), 0

    def run(self, playbook, inventory, extravars=None, limit=None, check=False, progress=None) -> PlaybookResult:
        self.calls += 1
        return self.results.pop(0)


def result(ok: bool, unreachable: bool = False, changed: int = 0) -> PlaybookResult:
    failures = [] if ok else [TaskFailure("kafka1", "Gathering Facts", "ssh: connect refused", unreachable=unreachable)]
    return PlaybookResult("heal.yml", 0 if ok else 4, "successful" if ok else "failed",
                          {"changed": {"kafka1": changed}}, failures, 1.0)


def test_a_playbook_that_reached_no_host_is_run_again():
    policy, events, _ = retrier()
    inner = FakeRunner(result(False, unreachable=True), result(True))
    runner = retry.RetryingRunner(inner, policy, step=lambda: "heal")
    assert runner.run("heal.yml", Path("inv")).ok
    assert inner.calls == 2
    [event] = events
    assert (event.step, event.call, event.errors, event.ok) == ("heal", "playbook heal.yml", ["Unreachable"], True)


@pytest.mark.parametrize("first", [result(False), result(False, unreachable=True, changed=1)],
                         ids=["a task failed", "unreachable after changing something"])
def test_a_playbook_that_got_somewhere_is_returned_as_it_is(first):
    policy, events, _ = retrier()
    inner = FakeRunner(first)
    assert retry.RetryingRunner(inner, policy).run("heal.yml", Path("inv")) is first
    assert inner.calls == 1 and events == []


def test_a_playbook_unreachable_past_the_bound_returns_its_last_result():
    policy, events, _ = retrier()
    inner = FakeRunner(*[result(False, unreachable=True) for _ in range(50)])
    last = retry.RetryingRunner(inner, policy, within_s=5).run("heal.yml", Path("inv"))
    assert not last.ok and last.failures[0].unreachable
    assert events[-1].ok is False
