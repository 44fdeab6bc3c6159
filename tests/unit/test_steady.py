"""Steady state before a run: recovery from what came before, a warm produce path; the one
polling helper. With fakes for the cluster and the clock: no cluster here."""

from __future__ import annotations

import pytest

from benchmarks import cluster, steady
from benchmarks.wait import WaitTimeout, wait_until


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def status(brokers_alive=(True, True, True), partitions=(("t", 0, 0, (0, 1, 2), (0, 1, 2)),)):
    return cluster.ClusterStatus(
        "c", 0, tuple(cluster.BrokerState(i, "127.0.0.1", 9092 + i, f"broker{i}", alive, True, "running")
                      for i, alive in enumerate(brokers_alive)),
        tuple(cluster.PartitionState(t, p, leader, replicas, isr) for t, p, leader, replicas, isr in partitions), ())


def test_wait_until_returns_the_first_truthy_answer_and_times_out_with_the_last():
    clock = FakeClock()
    answers = iter([None, 0, "ready"])
    assert wait_until(lambda: next(answers), 10, interval_s=1, clock=clock, sleep=clock.sleep) == "ready"
    assert clock.now == 2
    with pytest.raises(WaitTimeout, match="timed out after 3 s waiting for nothing") as info:
        wait_until(lambda: [], 3, interval_s=1, what="nothing", clock=clock, sleep=clock.sleep)
    assert info.value.last == []


def test_a_run_waits_for_under_replicated_partitions_and_then_moves_the_preferred_leaders_back():
    clock = FakeClock()
    states = iter([
        status(brokers_alive=(True, False, True), partitions=(("t", 0, 0, (1, 0, 2), (0, 2)),)),
        status(partitions=(("t", 0, 0, (1, 0, 2), (0, 2)), ("__consumer_offsets", 3, 2, (2, 0, 1), (2, 0, 1)))),
        status(partitions=(("t", 0, 0, (1, 0, 2), (0, 2, 1)),)),   # caught up, not yet preferred
        status(partitions=(("t", 0, 1, (1, 0, 2), (0, 2, 1)),)),
    ])
    elected = []
    waited = steady.wait_recovered(None, describe=lambda: next(states), elect=lambda t, p: elected.append((t, p)),
                                   clock=clock, sleep=clock.sleep)
    assert waited == 3 and elected == [("t", [0])]


def test_a_cluster_that_does_not_recover_is_named():
    clock = FakeClock()
    stuck = status(partitions=(("__consumer_offsets", 7, 1, (1, 2, 0), (1,)),))
    with pytest.raises(steady.NotSteady) as info:
        steady.wait_recovered(None, timeout_s=5, describe=lambda: stuck, elect=lambda t, p: None, clock=clock,
                              sleep=clock.sleep)
    assert str(info.value) == ("the cluster did not recover within 5 s: __consumer_offsets-7 is under-replicated: "
                               "ISR [1] of replicas [1, 2, 0]")


@pytest.mark.parametrize("windows, expected", [
    ([], False), ([900.0], False), ([1044.0, 300.0], False), ([300.0, 12.0], False), ([88.9, 44.8], False),
    ([14.0, 12.0], True), ([4.0, 9.0], True), ([37.0, 40.0], True), ([float("inf"), 7.0], False),
])
def test_the_produce_path_is_settled_when_two_windows_agree(windows, expected):
    assert steady.settled(windows) is expected
