"""Steady state before a run: recovery from what came before, a warm produce path; the one
polling helper. With fakes for the cluster and the clock: no cluster here."""

from __future__ import annotations

import pytest

from benchmarks.core.wait import WaitTimeout, wait_until
from benchmarks.harness import steady
from benchmarks.kafka import cluster


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


def test_an_election_that_times_out_is_asked_again_and_any_other_error_is_raised():
    from confluent_kafka import KafkaError, KafkaException

    clock = FakeClock()
    off = status(partitions=(("t", 0, 0, (1, 0, 2), (0, 2, 1)),))
    states = iter([off, off, status(partitions=(("t", 0, 1, (1, 0, 2), (0, 2, 1)),))])
    answers = iter([KafkaException(KafkaError(KafkaError._TIMED_OUT)), None])

    def elect(topic, parts):
        answer = next(answers)
        if answer is not None:
            raise answer

    assert steady.wait_recovered(None, describe=lambda: next(states), elect=elect, clock=clock, sleep=clock.sleep) == 2

    def refused(topic, parts):
        raise KafkaException(KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED))

    with pytest.raises(KafkaException):
        steady.wait_recovered(None, describe=lambda: off, elect=refused, clock=clock, sleep=clock.sleep)


def test_a_cluster_that_does_not_recover_is_named():
    clock = FakeClock()
    stuck = status(partitions=(("__consumer_offsets", 7, 1, (1, 2, 0), (1,)),))
    with pytest.raises(steady.NotSteady) as info:
        steady.wait_recovered(None, timeout_s=5, describe=lambda: stuck, elect=lambda t, p: None, clock=clock,
                              sleep=clock.sleep)
    assert str(info.value) == ("the cluster did not recover within 5 s: __consumer_offsets-7 is under-replicated: "
                               "ISR [1] of replicas [1, 2, 0]")


def windows(*rows: tuple[int, int, float]) -> list[steady.Window]:
    return [steady.Window(*row) for row in rows]


# (sent, acked, p99 ms) per second, measured after a broker restart (see steady.PACE_WINDOWS).
AFTER_RESTART = [(2000, 688, 866.3), (2000, 1435, 1704.1), (2000, 1544, 2524.9), (2000, 1875, 3147.8),
                 (2000, 1653, 3643.2), (2000, 1845, 3972.3), (2000, 1596, 4395.4), (2000, 1758, 4772.8),
                 (2000, 1822, 4986.4), (2000, 1920, 5223.8), (2000, 1847, 5329.0), (2000, 2622, 5323.2),
                 (2000, 2176, 4489.4), (2000, 2211, 4313.3), (2000, 2874, 4026.1), (2000, 2321, 2864.0),
                 (2000, 2891, 2449.9), (2000, 2846, 1159.2), (2000, 2063, 70.3), (2000, 2001, 35.7),
                 (2000, 1995, 28.0), (2000, 2005, 85.7), (2000, 1997, 13.3), (2000, 2007, 64.7),
                 (2000, 1999, 24.1), (2000, 1998, 19.9), (2000, 1999, 11.5), (2000, 1994, 14.5),
                 (2000, 2010, 73.8), (2000, 1994, 10.7), (2000, 2005, 15.6), (2000, 1996, 13.4),
                 (2000, 1998, 9.6), (2000, 2007, 32.8)]


def test_a_backlog_whose_p99_climbs_slowly_and_a_cold_broker_are_not_settled():
    """The old rule (two p99s within 25%) took seconds 5-6 (3.6 s, 4.0 s) for a settled path,
    and a rule of three paced seconds took 64.7, 24.1, 19.9 ms with the broker still cold."""
    seen = windows(*AFTER_RESTART)
    first = next(i for i in range(1, len(seen) + 1) if steady.settled(seen[:i]))
    assert first == len(AFTER_RESTART)  # five paced seconds under 50 ms: 10.7 ... 32.8 ms


OK = (2000, 2000, 12.0)  # a paced second at a low p99


@pytest.mark.parametrize("rows, expected", [
    ([], False),
    ([OK] * 4, False),                                                        # too few windows
    ([(2000, 1990, 14.0), (2000, 2010, 12.0), OK, OK, (2000, 2000, 13.0)], True),
    ([(2000, 2000, 300.0), OK, OK, OK, OK, (2000, 2000, 8.0)], True),          # the old window is past
    ([OK, OK, (2000, 2000, 40.0), (2000, 2000, 88.9), (2000, 2000, 44.8)], False),  # p99 not level, not low
    ([(2000, 2000, 120.0), (2000, 2000, 180.0), (2000, 2000, 140.0), (2000, 2000, 95.0), (2000, 2000, 110.0)],
     True),                                                                   # level at a higher latency
    ([(2000, 2000, 77.9), (2000, 1930, 149.2), (2000, 1990, 173.7), (2000, 2039, 196.3), (2000, 2037, 127.1)],
     True),                                                                   # ... on a slow machine (CI, 1.7x)
    ([(2000, 2000, 60.0), (2000, 2000, 70.0), (2000, 2000, 80.0), (2000, 2000, 95.0), (2000, 2000, 110.0)],
     False),                                                                  # within the spread, but climbing
    ([(2000, 2000, 20.0), (2000, 2000, 140.0), (2000, 2000, 25.0), (2000, 2000, 30.0), (2000, 2000, 22.0)],
     False),                                                                  # a cold broker's spike
    ([(2000, 1800, 905.0), (2000, 1850, 920.0), (2000, 1880, 866.0)] + [(2000, 1900, 900.0)] * 2, False),  # a backlog builds
    ([(2000, 2300, 905.0)] + [(2000, 2000, 900.0)] * 4, False),              # ... or drains
    ([OK, OK, (2000, 0, float("inf")), OK, OK], False),                       # a window without an ack
    ([(10, 10, 6.0), (10, 8, 7.0), (10, 12, 6.5), (10, 10, 6.0), (10, 9, 6.0)], True),  # low rates: 3 messages of slack
])
def test_the_produce_path_is_settled_when_acks_keep_pace_and_p99s_agree(rows, expected):
    assert steady.settled(windows(*rows)) is expected
