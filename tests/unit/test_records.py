"""The run directory's typed records: events round-trip through events.jsonl, typed by name."""

from __future__ import annotations

import json

import pydantic
import pytest

from benchmarks.record import run_events
from benchmarks.record.event_log import EventLog


def test_events_are_stamped_written_and_read_back_typed(tmp_path):
    ticks = iter([10, 20])
    log = EventLog(tmp_path / "events.jsonl", "r1", clock=lambda: next(ticks))
    log.write(run_events.FaultInjected(fault_id="f1", at_ns=5))
    log.write(run_events.ProducePathWarm(seconds=3.0, sent=10, acked=9, window_sent=[5, 5], window_acked=[5, 4],
                                            window_p99_ms=[4.5, float("inf")], settled=False, p50_ms=None))
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert lines[0] == {"t_ns": 10, "run_id": "r1", "event": "fault-injected", "fault_id": "f1", "at_ns": 5}
    assert lines[1]["window_p99_ms"] == [4.5, None]  # a window without an ack
    injected, warm = log.read()
    assert isinstance(injected, run_events.FaultInjected) and injected.at_ns == 5 and injected.t_ns == 10
    assert isinstance(warm, run_events.ProducePathWarm) and not warm.settled


def test_an_event_of_no_known_kind_or_with_a_stray_field_is_refused():
    with pytest.raises(pydantic.ValidationError, match="does not match any of the expected tags"):
        run_events.EVENT.validate_python({"event": "fault-injecetd", "fault_id": "f", "at_ns": 1})
    with pytest.raises(pydantic.ValidationError, match="Extra inputs are not permitted"):
        run_events.EVENT.validate_python({"event": "healed", "note": "x"})


def test_final_read_offsets_keep_their_partition_numbers():
    line = run_events.FinalReadEnd(end_offsets={0: 12, 2: 7}).model_dump_json()
    assert run_events.EVENT.validate_json(line).end_offsets == {0: 12, 2: 7}
