"""When the runner stops waiting for the consumer groups after the load (run_end.Drain)."""

from __future__ import annotations

from benchmarks.harness.run_end import DRAIN_QUIET_S, Drain


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_groups_are_drained_once_each_read_every_acked_message():
    clock = Clock()
    drain = Drain(1000, committed_only=False, clock=clock)
    assert not drain.done({"a": 1000, "b": 999})
    clock.now += 60  # standing still is no end for groups that see every acked message
    assert not drain.done({"a": 1000, "b": 999})
    assert drain.done({"a": 1000, "b": 1200})  # duplicates count: more than acked is done too


def test_read_committed_groups_are_drained_when_their_counts_stand_still():
    """The aborted transactions' 100 messages never reach them: waiting for 1000 would wait out the limit."""
    clock = Clock()
    drain = Drain(1000, committed_only=True, clock=clock)
    assert not drain.done({"a": 850})
    clock.now += DRAIN_QUIET_S - 1
    assert not drain.done({"a": 900})  # still moving: the quiet time starts again
    clock.now += DRAIN_QUIET_S - 0.5
    assert not drain.done({"a": 900})
    clock.now += 0.5
    assert drain.done({"a": 900})


def test_no_group_means_nothing_to_wait_for():
    assert Drain(1000, committed_only=False, clock=Clock()).done({})
