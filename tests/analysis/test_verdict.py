"""Verdicts in plain language, compared within the runs of the same fault schedule."""

from __future__ import annotations

from benchmarks.analysis.rows import RunRow, TrialsRow
from benchmarks.report.verdict import trials_verdict, verdict


def entry(kind, target, at_s, heal_at_s=None):
    return {"kind": kind, "target": target, "at_s": float(at_s), "heal_at_s": heal_at_s}


def row(**over):
    base = {"run_id": "a", "scenario": "s", "acks": "all", "replication_factor": 3, "min_insync_replicas": 2,
            "unclean_leader_election": False, "fault": "none", "fault_schedule": [], "lost": 0, "unseen": 0, "failed": 0,
            "indeterminate": 0,
            "failed_delivered": 0, "indeterminate_delivered": 0, "duplicates": 0, "throughput_msgs_s": 1000.0,
            "latency_p99_ms": 10.0, "unavailable_in_fault_s": 0.0, "new_leader_s": None, "leaderless_s": None,
            "leaderless_partition": None, "valid": True,
            "steady": True, "steady_p99_first_ms": 9.0, "steady_p99_last_ms": 8.0, "steady_acked_share": 1.0,
            "steady_p50_ms": 5.0, "warm_p50_ms": 4.5, "causes": None, "invalid_reasons": []}
    return RunRow(**{**base, **over})


def test_throughput_is_compared_with_the_fastest_run_of_the_same_fault():
    fast = row(run_id="b", acks="1", throughput_msgs_s=1220.0)
    slow = row(throughput_msgs_s=1000.0)
    text, severity = verdict(slow, [slow, fast, row(run_id="c", fault="x", throughput_msgs_s=5000.0)])
    assert text == "0 lost; 18% less throughput than acks=1"
    assert severity == "good"


def test_the_broker_errors_behind_unconfirmed_sends_are_named():
    """librdkafka retries NOT_ENOUGH_REPLICAS until the delivery timeout and reports _MSG_TIMED_OUT:
    the verdict says what the brokers answered."""
    text, severity = verdict(row(indeterminate=3250, causes={"NOT_ENOUGH_REPLICAS": 3200, "_TRANSPORT": 20,
                                                             "NOT_LEADER_OR_FOLLOWER": 30}), [])
    assert text == ("0 lost; 3,250 sends unconfirmed; the brokers answered NOT_ENOUGH_REPLICAS (3,200), "
                    "NOT_LEADER_OR_FOLLOWER (30); the client saw _TRANSPORT (20)")
    assert severity == "warn"


def test_latency_is_named_when_throughput_is_the_same():
    quick = row(run_id="b", acks="1", latency_p99_ms=4.0)
    text, _ = verdict(row(), [row(), quick])
    assert text == "0 lost; p99 latency 2.5x that of acks=1 (10 ms vs 4 ms)"


def test_loss_and_fault_figures():
    r = row(lost=4580, acks="1", failed=2, indeterminate=3, indeterminate_delivered=1,
            fault="broker-kill (leader of 0) at 6 s", fault_schedule=[entry("broker-kill", "leader of 0", 6)],
            unavailable_in_fault_s=9.83, new_leader_s=9.4)
    text, severity = verdict(r, [r])
    assert text == ("4,580 acknowledged messages LOST; 2 sends failed and 3 sends unconfirmed (1 of them written anyway); "
                    "9.8 s without acks on the worst partition during broker-kill (leader of 0); new leader after 9.4 s")
    assert severity == "bad"


def test_every_fault_of_a_schedule_is_named():
    r = row(fault="broker-kill (broker 1) at 5 s, healed at 25 s; host-partition (leader of 0; ports 9092) at 35 s, "
                  "healed at 75 s", fault_schedule=[entry("broker-kill", "broker 1", 5, 25),
                                                    entry("host-partition", "leader of 0; ports 9092", 35, 75)],
            unavailable_in_fault_s=58.04, new_leader_s=29.0)
    text, _ = verdict(r, [r])
    assert text == ("0 lost; 58.0 s without acks on the worst partition during broker-kill (broker 1) and "
                    "host-partition (leader of 0; ports 9092); new leader after 29.0 s")


def test_unseen_writes_are_missing_and_bad():
    text, severity = verdict(row(unseen=14247), [])
    assert text == "14,247 acknowledged messages MISSING past the end of the log (unseen)"
    assert severity == "bad"


def test_invalid_runs_warn_with_their_recorded_reasons():
    text, severity = verdict(row(valid=False, invalid_reasons=["producer 1 exited with signal 9"]), [])
    assert text == "INVALID run (producer 1 exited with signal 9); 0 lost"
    assert severity == "warn"
    text, _ = verdict(row(valid=False, invalid_reasons=["topic min.insync.replicas is 1, scenario says 2",
                                                        "faults[0] (broker-kill) inject failed: no live broker to target"]), [])
    assert text.startswith("INVALID run (topic min.insync.replicas is 1, scenario says 2; faults[0] (broker-kill) "
                           "inject failed: no live broker to target)")


def test_a_leaderless_partition_is_named_and_no_failover_is_claimed():
    """python-two-brokers-down: both replicas of one partition stopped; no leader while the load ran."""
    r = row(fault="broker-stop (broker 2) at 4 s; broker-stop (broker 1) at 8 s",
            fault_schedule=[entry("broker-stop", "broker 2", 4), entry("broker-stop", "broker 1", 8)],
            unavailable_in_fault_s=22.0,
            leaderless_partition=2, leaderless_s=21.5, new_leader_s=None)
    text, _ = verdict(r, [r])
    assert text == ("0 lost; 22.0 s without acks on the worst partition during broker-stop (broker 2) and "
                    "broker-stop (broker 1); partition 2 had no leader (21.5 s without acks while leaderless)")


def test_a_run_whose_steady_phase_was_not_steady_is_flagged_never_good():
    text, severity = verdict(row(steady=False, steady_p99_first_ms=1044.0, steady_p99_last_ms=7.2,
                                 steady_p50_ms=6.1, steady_acked_share=1.0), [])
    assert text == ("NOT STEADY before any fault (p99 1,044 ms in its first third, 7 ms in its last; p50 6.1 ms "
                    "against 4.5 ms on the warmed path; 100.0% of its sends acknowledged); 0 lost")
    assert severity == "warn"
    backlog, _ = verdict(row(steady=False, steady_p99_first_ms=3231.0, steady_p99_last_ms=2360.0,
                             steady_p50_ms=1816.0, warm_p50_ms=5.2, steady_acked_share=1.0), [])
    assert backlog.startswith("NOT STEADY before any fault (p99 3,231 ms in its first third, 2,360 ms in its last; "
                              "p50 1,816.0 ms against 5.2 ms on the warmed path;")
    assert verdict(row(steady=None), [])[1] == "good"  # too short to judge: nothing claimed either way


def test_a_fault_of_every_server_is_named_by_its_kind_alone():
    r = row(fault="zookeeper-stop at 5 s, healed at 15 s", fault_schedule=[entry("zookeeper-stop", "", 5, 15)],
            unavailable_in_fault_s=0.0)
    assert verdict(r, [r])[0] == "0 lost; 0.0 s without acks on the worst partition during zookeeper-stop"


def test_what_eligible_leader_replicas_changed_is_said_from_what_was_measured():
    kill = {"fault": "broker-stop (a follower of 0) at 5 s", "fault_schedule": [entry("broker-stop", "a follower of 0", 5)],
            "unavailable_in_fault_s": 0.0}
    held = row(acks="1", eligible_leader_replicas=True, under_min_isr_s=9.5, hw_stall_s=9.0, acked_invisible=9120, **kill)
    text, _ = verdict(held, [held])
    assert text.endswith("9,120 writes acknowledged while the high watermark stood still (9.0 s with the ISR below "
                         "min ISR 2): no consumer could read them until the ISR grew back (the leader holds the "
                         "high watermark while the ISR is below min ISR)")
    off = row(run_id="b", acks="1", eligible_leader_replicas=False, under_min_isr_s=9.5, hw_stall_s=0.0,
              acked_invisible=0, **kill)
    text, _ = verdict(off, [held, off])
    assert text.endswith("the ISR stayed below min ISR 2 for 9.5 s with ELR off: replicas that left it could only come "
                         "back as leaders through an unclean election")
    elected = row(eligible_leader_replicas=True, new_leader_s=9.1, new_leader_from="elr", **kill)
    text, _ = verdict(elected, [elected])
    assert "new leader after 9.1 s (from the Eligible Leader Replicas); ELR made a replica that had left the ISR " \
           "leader cleanly" in text
    zookeeper = row(new_leader_s=2.0, new_leader_from="isr", under_min_isr_s=3.0, **kill)
    text, _ = verdict(zookeeper, [zookeeper])
    assert text.endswith("new leader after 2.0 s (from the ISR)")


def configuration(**over):
    base = {"scenario": "s", "trials": 10, "trials_invalid": 0, "trials_with_loss": 0, "loss_ci_low": 0.0, "loss_ci_high": 0.2775,
            "lost_median": 0.0, "lost_max": 0, "unavailable_median_s": 9.8, "unavailable_p90_s": 12.0,
            "unavailable_max_s": 14.1, "new_leader_median_s": 9.4, "new_leader_p90_s": 10.0, "new_leader_max_s": 11.0,
            "duplicates": 0, "faults_injected": 10, "injections_with_loss": 0, "injection_loss_ci_low": 0.0,
            "injection_loss_ci_high": 0.2775}
    return TrialsRow(**{**base, **over})


def test_trials_are_phrased_over_the_trials_with_their_interval():
    text, severity = trials_verdict(configuration())
    assert text == ("0 of 10 trials lost an acknowledged write (chance that a trial loses: below 27.8% at 95% "
                    "confidence); 10 faults injected; worst partition without acks: median 9.8 s, p90 12.0 s, max 14.1 s; "
                    "new leader after median 9.4 s, p90 10.0 s, max 11.0 s")
    assert severity == "good"
    text, severity = trials_verdict(configuration(trials_with_loss=9, loss_ci_low=0.5958, loss_ci_high=0.9821,
                                                  lost_median=3100.0, lost_max=5012, trials_invalid=1,
                                                  new_leader_max_s=None))
    assert text.startswith("lost acknowledged writes in 9 of 10 trials (median 3,100, max 5,012 a trial; 95% interval "
                           "of the share that loses: 60% to 98%)")
    assert text.endswith("; 1 invalid trial left out") and "new leader" not in text
    assert severity == "bad"
    assert trials_verdict(configuration(trials=0, trials_invalid=2)) == ("no valid trial (2 invalid trials)", "warn")
    text, _ = trials_verdict(configuration(trials=1, faults_injected=60, loss_ci_high=0.7935, injection_loss_ci_high=0.0602,
                                           recurring=True))
    assert text.startswith("0 of 60 fault injections lost an acknowledged write (95% interval of the share: 0.0% to "
                           "6.0%); worst partition")
    text, _ = trials_verdict(configuration(faults_injected=30, injections_with_loss=20))
    assert "; 30 faults injected;" in text and "injections lost" not in text  # one-off faults: counted, not judged



def test_a_negative_control_is_good_when_it_loses_and_flags_a_blind_harness_when_it_does_not():
    text, severity = verdict(row(expect_loss=True, lost=3), [])
    assert text.startswith("negative control: lost acknowledged writes, as it must; 3 acknowledged messages LOST")
    assert severity == "good"
    assert verdict(row(expect_loss=True, lost=3, indeterminate=50, causes={"_TRANSPORT": 50}), [])[1] == "good"
    text, severity = verdict(row(expect_loss=True), [])
    assert text.startswith("negative control LOST NOTHING: the harness may be blind") and severity == "bad"
    text, severity = trials_verdict(configuration(expect_loss=True, blind=True, trials_with_loss=8))
    assert text.startswith("HARNESS BLIND: this negative control lost acknowledged writes in 8 of 10 valid trials "
                           "(it must in at least 90% of them)") and severity == "bad"
    text, severity = trials_verdict(configuration(expect_loss=True, blind=False, trials_with_loss=10, lost_median=120.0,
                                                  lost_max=300, loss_ci_low=0.7225, loss_ci_high=1.0))
    assert text.startswith("negative control: lost acknowledged writes in 10 of 10 trials, as it must (median 120, "
                           "max 300 a trial): the harness sees loss") and severity == "good"


def txn_row(**over):
    return row(**{"txn_committed": 90, "txn_aborted": 10, "txn_unknown": 0, "lost_commits": 0, "aborted_reads": 0,
                  "torn": 0, "lso_stall_s": 0.0, "txn_failed_sends": 100, "txn_client": "librdkafka 2.16.0",
                  "failed": 100, **over})


def test_the_sends_an_abort_purges_are_said_and_do_not_warn():
    text, severity = verdict(txn_row(causes={}), [])
    assert text == ("0 lost; 100 sends failed (100 of them in transactions that did not commit); exactly-once "
                    "(librdkafka 2.16.0): 90 transactions committed, 10 aborted, 0 unconfirmed; no lost commit, "
                    "aborted read or torn transaction")
    assert severity == "good"
    assert verdict(txn_row(causes={}, indeterminate=5), [])[1] == "warn"  # a send of a committed one: a warning
    text, severity = verdict(txn_row(causes={}, torn=1, lso_stall_s=61.5), [])
    assert severity == "bad" and "1 transaction TORN (read in part)" in text and "held back up to 61.5 s" in text
