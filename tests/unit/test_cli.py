"""The CLI over a recording fake playbook runner: no Ansible, no cluster."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.cli.app import cli
from benchmarks.cli.commands.cluster import VALIDATION_PLAYS
from benchmarks.core.exit_codes import ExitCode
from benchmarks.hosts.ansible import PlaybookResult, ProgressEvent, TaskFailure
from tests.conftest import LOCAL_INVENTORY, ROOT


class FakeRunner:
    def __init__(self, result: PlaybookResult):
        self.result = result
        self.calls = []

    def run(self, playbook, inventory, extravars=None, limit=None, check=False, progress=None):
        self.calls.append({"playbook": playbook, "inventory": str(inventory), "extravars": extravars,
                           "limit": limit, "check": check})
        if progress:
            progress(ProgressEvent("Deploy the Kafka brokers", "Write server.properties", "broker0", "changed"))
        return self.result


def result(rc=0, failures=(), changed=0):
    return PlaybookResult("site.yml", rc, "successful" if rc == 0 else "failed",
                          {"changed": {"broker0": changed}, "ok": {"broker0": 3}}, list(failures), 1.0)


def invoke(runner, *args):
    return CliRunner().invoke(cli, list(args), obj={"runner": runner})


def test_validation_failure_exits_invalid_input_and_names_the_problem():
    fake = FakeRunner(result(2, [TaskFailure("broker1", "Check this broker's settings",
                                             "kafka on broker1: min.insync.replicas too high", play=VALIDATION_PLAYS[0])]))
    out = invoke(fake, "cluster", "up", "--check", "-e", "kafka_heap_size=2g", "-e", "kafka_port=9999")
    assert out.exit_code == ExitCode.INVALID_INPUT, out.output
    assert "broker1: failed at 'Check this broker's settings'" in out.output
    assert "min.insync.replicas too high" in out.output
    assert fake.calls == [{"playbook": "site.yml", "inventory": str(LOCAL_INVENTORY),
                           "extravars": {"kafka_heap_size": "2g", "kafka_port": 9999}, "limit": None, "check": True}]


def test_host_failure_exits_playbook_failed():
    fake = FakeRunner(result(2, [TaskFailure("zk0", "Start ZooKeeper", "exited right after start", play="Deploy ZooKeeper")]))
    out = invoke(fake, "cluster", "up")
    assert out.exit_code == ExitCode.PLAYBOOK_FAILED
    assert "zk0: failed at 'Start ZooKeeper'" in out.output


def test_check_mode_shows_progress_and_does_not_query_the_cluster():
    fake = FakeRunner(result(0, changed=2))
    out = invoke(fake, "cluster", "up", "--check")
    assert out.exit_code == ExitCode.OK, out.output
    assert "Deploy the Kafka brokers › Write server.properties: 1 changed" in out.output
    assert "site.yml: successful" in out.output and "changed=2" in out.output


def test_down_stops_and_down_purge_tears_down():
    fake = FakeRunner(result())
    assert invoke(fake, "cluster", "down").exit_code == 0
    assert invoke(fake, "cluster", "down", "--purge", "--limit", "broker1").exit_code == 0
    assert [(c["playbook"], c["limit"]) for c in fake.calls] == [("stop.yml", None), ("teardown.yml", "broker1")]


def test_malformed_extra_var_is_a_usage_error():
    out = invoke(FakeRunner(result()), "cluster", "up", "-e", "novalue")
    assert out.exit_code == ExitCode.USAGE
    assert "is not KEY=VALUE" in out.output


def test_bad_inventory_path_exits_invalid_input(tmp_path):
    out = invoke(FakeRunner(result()), "cluster", "up", "--inventory", str(tmp_path / "missing"))
    assert out.exit_code == ExitCode.INVALID_INPUT
    assert "does not exist" in out.output


def test_lab_commands_refuse_an_inventory_that_is_not_a_lab_before_touching_anything():
    for command in ("up", "down", "status"):
        out = invoke(None, "lab", command, "--inventory", str(LOCAL_INVENTORY))
        assert out.exit_code == ExitCode.INVALID_INPUT, out.output
        assert f"{LOCAL_INVENTORY} (group_vars): not a lab inventory; missing kafka_bench_lab_network" in out.output


def test_lab_ssh_names_the_lab_hosts_when_the_host_is_unknown():
    out = invoke(None, "lab", "ssh", "lab9")
    assert out.exit_code == ExitCode.INVALID_INPUT
    assert "no lab host 'lab9'; hosts are lab1, lab2, lab3" in out.output


def test_a_scenario_that_cannot_run_exits_invalid_input_before_anything_runs(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "last-run.json").write_text('[{"scenario": "earlier"}]')
    bad = tmp_path / "rf5.yml"
    bad.write_text("scenario: {name: rf5, workload: {replication_factor: 5}}\n")
    fake = FakeRunner(result())
    out = invoke(fake, "run", str(bad), "--results", str(results))
    assert out.exit_code == ExitCode.INVALID_INPUT, out.output
    assert "rf5.yml: scenario.workload.replication_factor: replication factor 5 > 3 brokers in the inventory" \
        in " ".join(out.output.split())
    assert fake.calls == [] and (results / "last-run.json").read_text() == '[{"scenario": "earlier"}]'
    assert [p.name for p in results.iterdir()] == ["last-run.json"]


def test_a_dry_run_lists_the_runs_and_what_is_skipped_and_starts_nothing(tmp_path, monkeypatch):
    def no_connection(*_args, **_kwargs):
        raise AssertionError("a dry run connects to nothing")

    monkeypatch.setattr("benchmarks.core.connection.preflight", no_connection)
    results, fake = tmp_path / "results", FakeRunner(result())
    out = invoke(fake, "run", "durability", "--dry-run", "--quick", "--results", str(results))
    text = " ".join(out.output.split())
    assert out.exit_code == 0, out.output
    assert "leader-kill" in text and "negative-unclean-election-000" in text
    assert "skipped: Eligible Leader Replicas need a KRaft cluster" in text  # the ZooKeeper inventory
    assert "x0.67)" in text  # leader-kill's fault times: --quick shortens its 30 s to 20 s
    assert "44 skipped" in text
    assert fake.calls == [] and not results.exists()


def test_a_dry_run_refuses_bad_input_as_a_run_does(tmp_path):
    bad = tmp_path / "rf5.yml"
    bad.write_text("scenario: {name: rf5, workload: {replication_factor: 5}}\n")
    out = invoke(FakeRunner(result()), "run", str(bad), "--dry-run", "--results", str(tmp_path / "results"))
    assert out.exit_code == ExitCode.INVALID_INPUT
    assert "replication factor 5 > 3 brokers in the inventory" in " ".join(out.output.split())


def test_progress_in_a_log_is_a_line_per_phase_and_at_least_every_ten_seconds():
    from benchmarks.cli.commands.run import ProgressLines

    now = [0.0]
    printed, updated = [], []
    lines = ProgressLines(False, updated.append, printed.append, clock=lambda: now[0])
    for t, phase in [(0, "healing"), (1, "healing"), (2, "measuring"), (5, "measuring"), (11.9, "measuring"),
                     (12.0, "measuring"), (13, "flushing")]:
        now[0] = t
        lines(f"{t} {phase}", phase)
    assert printed == ["0 healing", "2 measuring", "12.0 measuring", "13 flushing"] and updated == []
    terminal = ProgressLines(True, updated.append, printed.append)
    terminal("live", "measuring")
    assert updated == ["live"]


def test_the_progress_line_shows_faults_and_procedures_apart():
    from benchmarks.cli.commands.run import _progress_line
    from benchmarks.harness.runner import Snapshot
    from benchmarks.harness.schedule import Tally

    snap = Snapshot("r", "measuring", 10.0, 40.0, 1000, 990, 0, 10, {"readers": 985}, ["broker-kill leader of 0"],
                    ["upgrade: Upgrade the controllers that follow, one at a time"])
    line = _progress_line(snap, "[1/1] upgrade")
    assert line.endswith("| consumed readers=985 | fault: broker-kill leader of 0 "
                         "| procedure: upgrade: Upgrade the controllers that follow, one at a time")
    assert "procedure" not in _progress_line(Snapshot("r", "measuring", 1.0, 40.0, 0, 0, 0, 0, {}, []), "x")
    nemesis = Snapshot("r", "measuring", 900.0, 1612.0, 1000, 990, 0, 10, {}, ["broker-kill leader of 0: broker 2"],
                       injections=Tally(acted=7, skipped=4, missed=1, to_come=58))
    assert _progress_line(nemesis, "x").endswith(
        "| faults 7 acted, 4 skipped, 1 missed, 58 to come | fault: broker-kill leader of 0: broker 2")
    assert "skipped" not in _progress_line(dataclasses.replace(nemesis, injections=Tally(acted=2, to_come=1)), "x")


def test_trials_repeat_every_run_with_its_number_and_seed(tmp_path, monkeypatch):
    """--trials 3 overrides the file's trials: 2: each run three times, numbered, trial N on SEED+N-1."""
    from benchmarks.cli.commands import run as run_command
    from benchmarks.record import records

    calls = []

    def execute(scenario, inventory, inventory_path, runner, results_root, quick, ledger_enabled, seed, progress, trial,
                conn, sweep, keep_topic):
        assert conn.security == "plaintext"
        assert keep_topic is False, "each run's topic is deleted after it unless --keep-topics"
        assert sweep == ("two", {"workload.partitions": int(scenario.name[-1]) + 1}), "each run knows its point"
        calls.append((scenario.name, scenario.trials, trial, seed))
        fields = {name: None for name in records.RunSummary.model_fields}
        return records.RunSummary.model_construct(**{
            **fields, "scenario": scenario.name, "acks": "all", "replication_factor": 3, "min_insync_replicas": 1,
            "sent": 1, "acked": 1, "failed": 0, "indeterminate": 0, "acked_lost": 0, "throughput_msgs_s": 1.0,
            "faults": [], "valid": True, "trial": trial, "trials": scenario.trials, "run_dir": str(results_root)})

    monkeypatch.setattr(run_command.runner_lib, "execute", execute)
    tried = []
    monkeypatch.setattr(run_command.connection_lib, "preflight", tried.append)  # no cluster here
    scenario = tmp_path / "two.yml"
    scenario.write_text("scenario: {name: two, trials: 2}\nsweep: {workload.partitions: [1, 2]}\n")
    results = tmp_path / "results"
    results.mkdir()
    out = invoke(FakeRunner(result()), "run", str(scenario), "--results", str(results), "--trials", "3", "--seed", "10",
                 "--no-report")
    assert out.exit_code == ExitCode.OK, out.output
    assert len(tried) == 1, "the one client profile is tried once, before the runs"
    assert calls == [(f"two-{p:03d}", 3, t, 9 + t) for p in (0, 1) for t in (1, 2, 3)]
    assert "two-001 trial 3/3" in out.output
    assert invoke(FakeRunner(result()), "run", str(scenario), "--trials", "0").exit_code == 2  # a usage error


def test_trials_are_validated_in_the_scenario_file():
    from benchmarks.spec import scenario as sc

    with pytest.raises(sc.ScenarioError, match=r"demo.yml: scenario.trials: Input should be greater than or equal to 1"):
        sc.parse({"scenario": {"name": "demo", "trials": 0}}, "demo.yml")


def test_network_delay_is_refused_on_the_lab_when_this_kernel_has_no_netem(tmp_path, monkeypatch):
    """The lab's hosts share this machine's kernel: without sch_netem the scenario is refused
    before anything runs, naming why and what the lab can do instead; on real hosts (any other
    inventory) the fault's playbook checks the hosts' own kernels."""
    from benchmarks.hosts import lab_spec
    from benchmarks.spec import scenario as sc
    from tests.conftest import ROOT

    monkeypatch.setattr(lab_spec, "kernel_netem_missing", lambda: "this machine's kernel has none")
    slow = tmp_path / "slow.yml"
    slow.write_text("scenario: {name: slow, faults: [{kind: network-delay, at_s: 1, delay_ms: 100, "
                    "target: {broker: 1}}]}\n")
    fake = FakeRunner(result())
    out = invoke(fake, "run", str(slow), "-i", str(ROOT / "inventories" / "lab"))
    assert out.exit_code == ExitCode.INVALID_INPUT, out.output
    said = " ".join(out.output.split())
    assert ("slow.yml: scenario.faults[0].kind: network-delay needs tc netem (the sch_netem kernel module), and the "
            "lab's hosts share this machine's kernel: this machine's kernel has none: run it on real hosts or Vagrant "
            "VMs; allowed here: broker-kill,") in said and "packet-loss" in said
    assert fake.calls == []
    real_hosts = sc.ClusterShape(broker_ids=(0, 1, 2), hosts=3)
    assert len(sc.load(slow, real_hosts)) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--bootstrap", "127.0.0.1:9092", "--inventory", str(LOCAL_INVENTORY)], "--bootstrap and --inventory: give one"),
    (["--bootstrap", "127.0.0.1"], "--bootstrap: '127.0.0.1' is not HOST:PORT (a port from 1 to 65535); "
                                   "allowed: HOST:PORT[,HOST:PORT...]"),
    (["--bootstrap", "a:9092,b:0"], "--bootstrap: 'b:0' is not HOST:PORT"),
])
def test_bad_bootstrap_options_exit_invalid_input_before_connecting(tmp_path, monkeypatch, args, message):
    from benchmarks.cli.commands import run as run_command

    tried = []
    monkeypatch.setattr(run_command.connection_lib, "preflight", tried.append)
    scenario = tmp_path / "plain.yml"
    scenario.write_text("scenario: {name: plain}\n")
    out = invoke(FakeRunner(result()), "run", str(scenario), *args, "--results", str(tmp_path))
    assert out.exit_code == ExitCode.INVALID_INPUT, out.output
    assert message in " ".join(out.output.split())
    assert tried == [], "nothing was tried"


def test_a_fault_on_a_cluster_given_by_bootstrap_is_refused_before_any_run(tmp_path, monkeypatch):
    """The cluster is read (discover), the scenario refused with the field and what is allowed, no run starts."""
    from benchmarks.cli.commands import run as run_command
    from benchmarks.core import connection
    from benchmarks.hosts import inventory

    given = connection.Connection("10.0.0.1:9092", source="--bootstrap")
    brokers = tuple(inventory.Broker(f"broker{i}", i, "10.0.0.1", 9092 + i, "") for i in range(3))
    monkeypatch.setattr(run_command.connection_lib, "preflight", lambda conn: None)
    monkeypatch.setattr(run_command.cluster_lib, "discover", lambda conn: inventory.ClusterInventory(
        Path(f"--bootstrap {conn.bootstrap}"), brokers, (), metadata_mode="kraft", security="plaintext",
        given=conn))
    monkeypatch.setattr(run_command.runner_lib, "execute", lambda *a, **k: pytest.fail("a run started"))
    kill = tmp_path / "kill.yml"
    kill.write_text("scenario:\n  name: kill\n  faults: [{kind: broker-kill, at_s: 5, heal_at_s: 10, target: {broker: 1}}]\n")
    out = invoke(FakeRunner(result()), "run", str(kill), "--bootstrap", given.bootstrap, "--results", str(tmp_path))
    assert out.exit_code == ExitCode.INVALID_INPUT, out.output
    assert ("kill.yml: scenario.faults[0].kind: broker-kill needs an inventory naming the cluster's hosts (--inventory), "
            "and this run names only --bootstrap; allowed here: no faults") in " ".join(out.output.split())


@pytest.mark.parametrize(("interrupted", "code"), [(True, ExitCode.INTERRUPTED), (False, ExitCode.FAILURE)])
def test_a_heal_that_fails_ends_with_its_reason_and_the_way_out_not_a_traceback(monkeypatch, capsys, interrupted, code):
    """Ctrl-C during a run heals; a heal cut short by it (or failing) says so, and how to finish it."""
    from benchmarks.cli import app as cli_module
    from benchmarks.spec.fault_targets import FaultError

    def main(standalone_mode):
        try:
            if interrupted:
                raise KeyboardInterrupt
            raise RuntimeError("not interrupted")
        except (KeyboardInterrupt, RuntimeError):
            raise FaultError("start.yml failed while healing:\nbroker1: exit 130") from None

    monkeypatch.setattr(cli_module.cli, "main", main)
    with pytest.raises(SystemExit) as exited:
        cli_module.main()
    assert exited.value.code == code
    err = capsys.readouterr().err
    assert err.startswith(("interrupted, then " if interrupted else "") + "error: start.yml failed while healing:"), err
    assert "kafka-bench heal --inventory INVENTORY" in err and "Traceback" not in err


@pytest.mark.parametrize(("text", "said"), [
    ("scenario:\n  name: twice\n  workload:\n    rate: 100\n    rate: 200\n",
     "twice.yml: line 5: key 'rate' written twice: at line 4 and at line 5"),
    ("scenario: {name: linger, client: {producer: {acks: all, linger.ms: -4}}}\n",
     "linger.yml: scenario.client.producer: linger.ms: librdkafka refuses -4: Configuration property "
     "\"queue.buffering.max.ms\" value -4 is outside allowed range 0..900000"),
    ("scenario: {name: ackz}\nsweep: {client.producer.ackz: [1, all]}\n",
     "ackz.yml (sweep point {'client.producer.ackz': 1}): scenario.client.producer: ackz: librdkafka refuses 1: "
     "No such configuration property: \"ackz\""),
    ("scenario: {name: fetch, client: {consumer: {fetch.max.bytes: 2000000, message.max.bytes: 3000000}}}\n",
     "fetch.yml: scenario.client.consumer: librdkafka refuses these settings together: Failed to create consumer: "
     "`fetch.max.bytes` must be >= `message.max.bytes`"),
], ids=["key-twice", "out-of-range", "unknown-property-in-a-sweep", "settings-together"])
def test_bad_input_exits_invalid_input_naming_file_and_field_with_nothing_written(tmp_path, text, said):
    name = said.split(".yml")[0]
    bad = tmp_path / f"{name}.yml"
    bad.write_text(text)
    results = tmp_path / "results"
    fake = FakeRunner(result())
    out = invoke(fake, "run", str(bad), "--results", str(results))
    assert out.exit_code == ExitCode.INVALID_INPUT, out.output
    assert said in " ".join(out.output.split())
    assert fake.calls == [] and not results.exists()


def summary_of(scenario, trial, results_root, run_id, valid=True):
    """A run's summary as the runner writes it, in a run directory of its own under `results_root`."""
    from benchmarks.record import records

    run_dir = results_root / f"{run_id}-{scenario.name}-trial{trial:03d}"
    run_dir.mkdir(parents=True)
    summary = records.RunSummary(
        run_id=run_id, scenario=scenario.name, description="", run_dir=str(run_dir), topic="t", metadata_mode=None,
        kafka_version=None, acks="all", replication_factor=3, min_insync_replicas=1, unclean_leader_election=False,
        partitions=3, message_size=100, fault="none", fault_schedule=[], load_start_ns=1, measured_from_ns=1,
        warm_p50_ms=None, load_end_ns=2, sent=1, acked=1, failed=0, indeterminate=0, acked_lost=0, acked_lost_ids=[],
        lost=0, unseen=0, duplicates=0, final_read=1, consumed={}, throughput_msgs_s=1.0, faults=[], valid=valid,
        invalid_reasons=[] if valid else ["load failed: RuntimeError: a bug"], live_counters=records.LiveCounters(
            sent=1, acked=1, failed=0, indeterminate=0), trial=trial, trials=scenario.trials)
    (run_dir / "events.jsonl").write_text("")
    (run_dir / "summary.json").write_text(summary.model_dump_json())
    return summary


def test_a_suite_stopped_in_its_fourth_run_is_resumed_from_it_with_the_same_options(tmp_path, monkeypatch):
    from benchmarks.cli.commands import run as run_command
    from benchmarks.record import suite

    calls = []

    def execute(scenario, inventory, inventory_path, runner, results_root, trial, **kwargs):
        calls.append(trial)
        if len(calls) == 4 and trial == 4:  # killed during its fourth run: no summary of it
            (results_root / "r4-six-trial004").mkdir()
            (results_root / "r4-six-trial004" / "events.jsonl").write_text("")
            raise KeyboardInterrupt
        return summary_of(scenario, trial, results_root, f"r{len(calls)}", valid=trial != 2)

    monkeypatch.setattr(run_command.runner_lib, "execute", execute)
    monkeypatch.setattr(run_command.connection_lib, "preflight", lambda conn: None)  # no cluster here
    scenario = tmp_path / "six.yml"
    scenario.write_text("scenario: {name: six, trials: 6}\n")
    results = tmp_path / "results"
    out = invoke(FakeRunner(result()), "run", str(scenario), "--results", str(results), "--seed", "3", "--no-report")
    assert out.exit_code != 0 and calls == [1, 2, 3, 4]
    [stopped] = [p for p in results.iterdir() if p.is_dir()]
    assert [(r.number, r.trial) for r in suite.missing(stopped)] == [(4, 4), (5, 5), (6, 6)]
    assert suite.unfinished(stopped) == [stopped / "r4-six-trial004"]

    # Other options than the suite began with are refused, naming the field, before anything runs.
    out = invoke(FakeRunner(result()), "run", str(scenario), "--results", str(results), "--seed", "4", "--no-report",
                 "--resume", str(stopped))
    assert out.exit_code == ExitCode.INVALID_INPUT
    assert f"{stopped / 'suite.json'}: seed was 3 when the suite began, this command says 4" in " ".join(out.output.split())
    assert calls == [1, 2, 3, 4]

    out = invoke(FakeRunner(result()), "run", str(scenario), "--results", str(results), "--seed", "3", "--no-report",
                 "--resume", str(stopped))
    assert calls == [1, 2, 3, 4, 4, 5, 6], "only the runs without a summary"
    assert "resuming" in out.output and "3 of 6 runs done" in out.output
    assert out.exit_code == ExitCode.INVALID_RUNS, "trial 2 was invalid: the suite says so at its end"
    assert suite.missing(stopped) == []
    assert [p.name for p in results.iterdir() if p.is_dir()] == [stopped.name], "resumed in place"
    assert "six trial 6/6" in out.output and "six trial 1/6" in out.output  # the table holds every run


def test_the_cli_loads_no_pyspark_until_a_report_is_built():
    """Every kafka-bench command pays for what `import benchmarks.cli.app` loads (PySpark was 87 modules
    of it): only the analysis loads it."""
    code = "import sys, benchmarks.cli.app; print(sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark'))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]", loaded.stdout
