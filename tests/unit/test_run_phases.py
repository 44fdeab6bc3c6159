"""benchmarks.perf.run_phases: a suite's runs' time, per step, read from the events they wrote."""

from __future__ import annotations

import pytest

from benchmarks.perf import run_phases
from benchmarks.record import run_events
from benchmarks.record.event_log import EventLog


def write_run(run_dir, seconds):
    """A run whose events are written at `seconds`: a heal, a warm-up, the load and its final read."""
    run_dir.mkdir(parents=True)
    ticks = iter(int(s * 1e9) for s in seconds)
    log = EventLog(run_dir / "events.jsonl", run_dir.name, clock=lambda: next(ticks))
    log.write(run_events.HealBeforeRun())
    log.write(run_events.Healed())
    log.write(run_events.ProducePathWarm(seconds=1.0, sent=1, acked=1, window_sent=[1], window_acked=[1],
                                         window_p99_ms=[3.0], settled=True, p50_ms=3.0))
    log.write(run_events.FinalReadStart())


def test_each_step_is_named_by_the_event_that_ends_it_and_summed_over_the_runs(tmp_path, capsys):
    write_run(tmp_path / "suite" / "r1", [0, 2, 62, 82])
    write_run(tmp_path / "suite" / "r2", [100, 101, 111, 131])
    (tmp_path / "suite" / "report").mkdir()  # not a run: no events.jsonl

    assert [(s.ends_with, s.seconds) for s in run_phases.steps(tmp_path / "suite" / "r1")] == [
        ("healed", 2.0), ("produce-path-warm", 60.0), ("final-read-start", 20.0)]
    assert [d.name for d in run_phases.run_dirs([tmp_path / "suite"])] == ["r1", "r2"]
    assert run_phases.run_dirs([tmp_path / "suite" / "r2"]) == [tmp_path / "suite" / "r2"]

    assert run_phases.main([str(tmp_path / "suite")]) == 0
    out = capsys.readouterr().out
    assert "2 run(s): 113 s" in out
    by_step = out.split("by step")[1].split("by run")[0].splitlines()[1:4]
    assert [line.split()[:3] for line in by_step] == [["70.0", "s", "2x"], ["40.0", "s", "2x"], ["3.0", "s", "2x"]]
    assert "produce-path-warm" in by_step[0] and "61.9 %" in by_step[0]
    assert "82.0 s  r1  slowest: produce-path-warm 60.0 s" in out


def test_a_directory_without_runs_is_an_error_naming_it(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        run_phases.main([str(tmp_path)])
    assert info.value.code == 2
    assert f"no events.jsonl in or under {tmp_path}" in capsys.readouterr().err
