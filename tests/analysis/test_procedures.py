"""What each step of a procedure cost, checked on the hand-built run (tests/analysis/ledgers.py)
with a rolling restart in place of its fault: plays begin at 3.6, 4.0 (broker1), 5.5 (the same
play again, for broker2) and 7.0 s (another play of that name), the procedure ends at 8.5 s."""

from __future__ import annotations

import pytest

from benchmarks.analysis import metrics, schemas
from tests.analysis import ledgers
from tests.analysis.ledgers import event, ns

pytestmark = pytest.mark.spark

PROCEDURE_EVENTS = [
    event(ns(0), "run-start"),
    event(ns(3.5), "procedure-start", procedure_id="procedure-0", procedure="rolling-restart"),
    event(ns(3.6), "procedure-play", procedure_id="procedure-0", play="Sort the nodes", host="broker0", play_id="p1"),
    # A play with serial: 1 begins once per node (its batches share the play's id): a step each, named by its node.
    event(ns(4.0), "procedure-play", procedure_id="procedure-0", play="Restart the brokers", host="broker1", play_id="p2"),
    event(ns(5.5), "procedure-play", procedure_id="procedure-0", play="Restart the brokers", host="broker2", play_id="p2"),
    # Another play of the same name (a second phase's roll) is no batch of the first: no node.
    event(ns(7.0), "procedure-play", procedure_id="procedure-0", play="Restart the brokers", host="broker0", play_id="p3"),
    event(ns(8.5), "procedure-end", procedure_id="procedure-0", ok=True),
]


@pytest.fixture(scope="module")
def analysis(spark):
    runs, _, produce, consume, timeline = ledgers.frames(spark)
    events = spark.createDataFrame(PROCEDURE_EVENTS, schemas.EVENTS)
    return metrics.analyse(runs, events, produce, consume, timeline, gap_threshold_s=2.0, expected_acks=0)


def test_each_play_is_a_step_with_what_it_cost(analysis):
    rows = [r.asDict() for r in analysis.steps.collect()]
    # (step, play, node, sent, failed, unconfirmed, partitions without acks, leader changes)
    assert [(r["step"], r["play"], r["node"], r["sent"], r["failed"], r["indeterminate"], r["unavailable_partitions"],
             r["leader_changes"]) for r in rows] == [
        (1, "Sort the nodes", None, 0, 0, 0, 2, 0),         # both partitions already without acks (since 3.01 and 3.4 s)
        (2, "Restart the brokers", "broker1", 2, 1, 1, 2, 0),  # seqs 6 (failed) and 7 (timed out) intended in it
        (3, "Restart the brokers", "broker2", 2, 1, 0, 2, 1),  # seqs 8 and 9; partition 0 led by 2 from 6 s
        (4, "Restart the brokers", None, 1, 0, 0, 2, 0),       # seq 10 (8.0 s); 8.5 s is the procedure's end
    ]
    assert [r["duration_s"] for r in rows] == pytest.approx([0.4, 1.5, 1.5, 1.5])
    assert [r["unavailable_s"] for r in rows] == pytest.approx([0.4, 1.5, 1.5, 1.01])  # p1 without acks until 8.01 s
    assert [r["latency_p99_ms"] for r in rows] == [None, None, pytest.approx(1500.0), pytest.approx(10.0)]
    # Steady: acked, intended between the warm-up's end (1 s) and the first play: 20, 30, 100, 10 and 50 ms.
    assert [r["steady_p99_ms"] for r in rows] == pytest.approx([100.0] * 4)
    assert {(r["procedure"], r["ok"], r["procedure_id"]) for r in rows} == {("rolling-restart", True, "procedure-0")}
    assert [r["start_ns"] for r in rows] == [ns(3.6), ns(4.0), ns(5.5), ns(7.0)]
    assert [r["end_ns"] for r in rows] == [ns(4.0), ns(5.5), ns(7.0), ns(8.5)]


def test_the_procedure_is_the_fault_window_of_the_run(analysis):
    bounds = analysis.bounds.first()
    assert (bounds["fault_start_ns"], bounds["fault_end_ns"]) == (ns(3.5), ns(8.5))
