"""Verdicts in plain language, compared within the runs of the same fault schedule."""

from __future__ import annotations

from benchmarks.report.verdict import verdict


def row(**over):
    base = {"run_id": "a", "scenario": "s", "acks": "all", "replication_factor": 3, "min_insync_replicas": 2,
            "unclean_leader_election": False, "fault": "none", "lost": 0, "unseen": 0, "failed": 0, "indeterminate": 0,
            "failed_delivered": 0, "indeterminate_delivered": 0, "duplicates": 0, "throughput_msgs_s": 1000.0,
            "latency_p99_ms": 10.0, "unavailable_in_fault_s": 0.0, "new_leader_s": None, "valid": True}
    return {**base, **over}


def test_throughput_is_compared_with_the_fastest_run_of_the_same_fault():
    fast = row(run_id="b", acks="1", throughput_msgs_s=1220.0)
    slow = row(throughput_msgs_s=1000.0)
    text, severity = verdict(slow, [slow, fast, row(run_id="c", fault="x", throughput_msgs_s=5000.0)])
    assert text == "0 lost; 18% less throughput than acks=1"
    assert severity == "good"


def test_latency_is_named_when_throughput_is_the_same():
    quick = row(run_id="b", acks="1", latency_p99_ms=4.0)
    text, _ = verdict(row(), [row(), quick])
    assert text == "0 lost; p99 latency 2.5x that of acks=1 (10 ms vs 4 ms)"


def test_loss_and_fault_figures():
    r = row(lost=4580, acks="1", failed=2, indeterminate=3, indeterminate_delivered=1,
            fault="broker-kill (leader of 0) at 6 s", unavailable_in_fault_s=9.83, new_leader_s=9.4)
    text, severity = verdict(r, [r])
    assert text == ("4,580 acknowledged messages LOST; 2 sends failed and 3 sends unconfirmed (1 of them written anyway); "
                    "9.8 s without acks on the worst partition during broker-kill (leader of 0); new leader after 9.4 s")
    assert severity == "bad"


def test_every_fault_of_a_schedule_is_named():
    r = row(fault="broker-kill (broker 1) at 5 s, healed at 25 s; host-partition (leader of 0; ports 9092) at 35 s, "
                  "healed at 75 s", unavailable_in_fault_s=58.04, new_leader_s=29.0)
    text, _ = verdict(r, [r])
    assert text == ("0 lost; 58.0 s without acks on the worst partition during broker-kill (broker 1) and "
                    "host-partition (leader of 0; ports 9092); new leader after 29.0 s")


def test_unseen_writes_are_missing_and_bad():
    text, severity = verdict(row(unseen=14247), [])
    assert text == "14,247 acknowledged messages MISSING past the end of the log (unseen)"
    assert severity == "bad"


def test_invalid_runs_warn():
    text, severity = verdict(row(valid=False), [])
    assert text == "INVALID run (effective config differs from the scenario); 0 lost"
    assert severity == "warn"
