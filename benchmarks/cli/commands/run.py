"""`kafka-bench run SCENARIO_FILE`: execute every run of a scenario file (its sweep expanded)."""

from __future__ import annotations

import collections
import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

import click
from rich.live import Live
from rich.table import Table

from benchmarks.cli.commands.cluster import inventory_option, load_inventory_or_exit, playbook_runner
from benchmarks.cli.commands.report import analyse_and_report
from benchmarks.cli.console import console, stdout
from benchmarks.core import connection as connection_lib
from benchmarks.core import paths
from benchmarks.core.exit_codes import ExitCode
from benchmarks.harness import java_load
from benchmarks.harness import runner as runner_lib
from benchmarks.harness.run_state import Snapshot
from benchmarks.hosts import inventory as inventory_lib
from benchmarks.hosts import lab_spec
from benchmarks.kafka import cluster as cluster_lib
from benchmarks.record import records
from benchmarks.record import suite as suite_lib
from benchmarks.spec import scenario as scenario_lib

RESULTS = paths.PROJECT_ROOT / "benchmarks" / "results"


def _progress_line(snap: Snapshot, label: str) -> str:
    done = min(1.0, snap.elapsed_s / snap.total_s) if snap.total_s else 0.0
    bar = "█" * int(done * 20) + "░" * (20 - int(done * 20))
    rate = snap.acked / snap.elapsed_s if snap.elapsed_s > 0 else 0.0
    consumed = " ".join(f"{g}={n}" for g, n in snap.consumed.items())
    acting = f" | faults {snap.injections}" if snap.injections else ""
    acting += f" | fault: {', '.join(snap.active_faults)}" if snap.active_faults else ""
    acting += f" | procedure: {', '.join(snap.procedures)}" if snap.procedures else ""
    return (f"{label} {bar} {snap.elapsed_s:5.1f}/{snap.total_s:.0f}s {snap.phase:<18} sent {snap.sent} "
            f"acked {snap.acked} ({rate:,.0f}/s) failed {snap.failed} indeterminate {snap.indeterminate}"
            f"{' | consumed ' + consumed if consumed else ''}{acting}")


class ProgressLines:
    """Progress for a terminal (one live line) or for a log (a line when the phase changes, and
    at least every `every_s` seconds): a run in CI never stays silent for minutes."""

    def __init__(self, terminal: bool, update: Callable[[str], None], emit: Callable[[str], None],
                 every_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.terminal, self.update, self.emit, self.every_s, self.clock = terminal, update, emit, every_s, clock
        self._last_at: float | None = None
        self._last_phase = ""

    def __call__(self, line: str, phase: str) -> None:
        if self.terminal:
            self.update(line)
            return
        now = self.clock()
        if phase != self._last_phase or self._last_at is None or now - self._last_at >= self.every_s:
            self.emit(line)
            self._last_at, self._last_phase = now, phase


def _faults_cell(applied: list[records.AppliedFault], shown: int = 3) -> str:
    """The faults a run applied, each with its target; many (a recurring fault's) counted by kind."""
    if len(applied) <= shown:
        return "; ".join(f"{f.kind} ({f.target})" for f in applied) or "-"
    kinds = collections.Counter(f.kind for f in applied)
    return f"{len(applied)} injections: " + ", ".join(f"{kind} x{n}" for kind, n in kinds.items())


def summary_table(summaries: list[runner_lib.RunSummary], skipped: list[scenario_lib.Run]) -> Table:
    table = Table(title="Runs", title_justify="left")
    for col in ("scenario", "acks", "RF", "min ISR", "sent", "acked", "failed", "indet.", "lost (acked)",
                "acked/s", "faults", "valid"):
        table.add_column(col, justify="right" if col not in ("scenario", "faults") else "left")
    for s in summaries:
        name = s.scenario + (f" trial {s.trial}/{s.trials}" if s.trials > 1 else "")
        table.add_row(name, s.acks, str(s.replication_factor), str(s.min_insync_replicas), str(s.sent),
                      str(s.acked), str(s.failed), str(s.indeterminate),
                      f"[red]{s.acked_lost}[/]" if s.acked_lost else "0" if s.checked else "-",
                      f"{s.throughput_msgs_s:,.0f}",
                      _faults_cell(s.faults),
                      "yes" if s.valid else "[red]no[/]")
    for run in skipped:
        table.add_row(f"(point {run.index})" if run.point else "(scenario)", "", "", "", "", "", "", "", "", "",
                      f"skipped: {run.skipped}", "")
    return table


def _connections(inv: inventory_lib.ClusterInventory, scenarios: list[scenario_lib.Scenario],
                 ) -> dict[str | None, connection_lib.Connection]:
    """The connection of every client profile the scenarios ask for, each tried once (it connects and
    authenticates) before anything runs; bad settings exit with the reason and nothing started. The
    connection of a cluster given by --bootstrap was tried before it was read (_given_cluster)."""
    conns: dict[str | None, connection_lib.Connection] = {}
    try:
        for security in dict.fromkeys(s.client.security for s in scenarios):
            conns[security] = inv.connection(security)
        for conn in set(conns.values()) - {inv.given}:
            connection_lib.preflight(conn)
        for security in dict.fromkeys(s.client.security for s in scenarios if s.client.producer_library == "java"):
            java_load.connection_properties(conns[security])  # the Java client's settings exist
    except connection_lib.ConnectionSettingsError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT) from exc
    return conns


def _not_deployed(inv: inventory_lib.ClusterInventory) -> str:
    """Why procedures may not run on the inventory's hosts, if they may not (ClusterShape.not_deployed)."""
    if not inv.foreign_hosts:
        return ""
    return (f"{inv.path} says this project did not deploy {', '.join(inv.foreign_hosts)} "
            "(kafka_bench_service_control: systemd)")


def _given_cluster(ctx: click.Context, bootstrap: str, client_config: Path | None) -> inventory_lib.ClusterInventory:
    """The cluster behind --bootstrap (with --client-config's settings), as its brokers describe it;
    reached and authenticated once before anything runs. Bad options exit with the reason."""
    try:
        if ctx.get_parameter_source("inventory_path") is not click.core.ParameterSource.DEFAULT:
            raise connection_lib.ConnectionSettingsError(
                "--bootstrap and --inventory: give one (--inventory names the hosts, so faults can run; "
                "--bootstrap, a cluster nothing here deployed, for load only)")
        bootstrap = connection_lib.check_bootstrap(bootstrap, "--bootstrap")
        conn = (connection_lib.from_file(client_config, bootstrap) if client_config is not None
                else connection_lib.Connection(bootstrap, source="--bootstrap"))
        connection_lib.preflight(conn)
    except connection_lib.ConnectionSettingsError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT) from exc
    try:
        return cluster_lib.discover(conn)
    except cluster_lib.ClusterUnreachable as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.UNREACHABLE) from exc


def scenario_files(name: str) -> list[Path]:
    """A built-in suite's files by name, or the scenario file (or directory) given."""
    suite = paths.SUITES / name
    if "/" not in name and suite.is_dir():
        return sorted(suite.glob("*.yml"))
    path = Path(name)
    if path.is_dir():
        return sorted(path.glob("*.yml"))
    if not path.exists():
        suites = ", ".join(sorted(p.name for p in paths.SUITES.iterdir() if p.is_dir()))
        raise scenario_lib.ScenarioError(f"{name}: no such scenario file, and not a suite (suites: {suites})")
    return [path]


def _read_runs(suite_or_file: str, inv: inventory_lib.ClusterInventory, inventory_path: Path) -> list[scenario_lib.Run]:
    """Every run of the suite or file, each validated against the inventory's cluster (the points it
    cannot run skipped with their reason); bad input exits INVALID_INPUT naming file and field."""
    try:
        shape = scenario_lib.ClusterShape(
            broker_ids=tuple(b.broker_id for b in inv.brokers), hosts=len({b.host for b in inv.brokers}),
            metadata_mode=inv.metadata_mode, controller_ids=tuple(c.node_id for c in inv.controllers),
            migration_controllers=len(inv.migration_controllers), kafka_version=inv.kafka_version,
            no_netem="" if inv.given else lab_spec.netem_missing(inventory_path),
            no_data_disk=tuple(b.name for b in inv.brokers if not b.data_disk), client_profiles=inv.client_profiles(),
            no_hosts="this run names only --bootstrap" if inv.given else "", not_deployed=_not_deployed(inv))
        files = scenario_files(suite_or_file)
        runs = [run for path in files for run in scenario_lib.load(path, shape, in_suite=len(files) > 1)]
        if runs and all(r.scenario is None for r in runs):
            raise scenario_lib.ScenarioError(f"{suite_or_file}: nothing of it can run on {inventory_path}: "
                                             + "; ".join(dict.fromkeys(r.skipped or "" for r in runs)))
    except (scenario_lib.ScenarioError, connection_lib.ConnectionSettingsError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT) from exc
    return runs


def plan_table(runs: list[scenario_lib.Run], trials: int | None, quick: bool) -> Table:
    """What `run` would make (--dry-run): each run with its trials, seconds of load and faults, and
    each point skipped with its reason."""
    table = Table(title="Planned runs", title_justify="left")
    for col in ("scenario", "sweep point", "trials", "load s (warm-up + measured)", "faults and procedures"):
        table.add_column(col, justify="right" if col in ("trials", "load s (warm-up + measured)") else "left")
    count = load_s = 0.0
    for r in runs:
        point = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in r.point.items())
        if r.scenario is None:
            table.add_row("", point, "", "", f"skipped: {r.skipped}")
            continue
        sc, n = r.scenario, trials or r.scenario.trials
        warmup_s, duration_s, factor = runner_lib.scaled(sc, quick)
        count, load_s = count + n, load_s + n * (warmup_s + duration_s)
        steps = [f.label for f in sc.faults] + [f"{p.playbook} at {p.at_s:g} s" for p in sc.procedures]
        table.add_row(sc.name, point, str(n), f"{warmup_s:g} + {duration_s:g}",
                      "; ".join(steps) + (f" (times x{factor:.2g})" if steps and factor != 1 else "") or "-")
    skipped = sum(r.scenario is None for r in runs)
    table.caption = (f"{count:.0f} runs, {load_s / 60:.1f} min of load (each run also waits for a recovered cluster "
                     f"and a warm produce path, and heals, reads back and collects logs after)"
                     + (f"; {skipped} skipped" if skipped else ""))
    return table


def _install_java_producer(ctx: click.Context, inventory_path: Path) -> None:
    """Kafka's Java producer installed (and its program compiled) before the first run that uses it."""
    console.print(f"installing the Java producer ({java_load.describe()})")
    try:
        java_load.ensure_installed(playbook_runner(ctx), inventory_path, force=True)
    except java_load.JavaClientError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.PLAYBOOK_FAILED) from exc


def _resumed(resume: Path, plan: records.SuitePlan) -> dict[tuple[str, int], records.RunSummary]:
    """The runs of the stopped suite in `resume` that have a summary, by scenario and trial, once
    its plan is this one (another exits INVALID_INPUT, naming the option that differs)."""
    try:
        suite_lib.check_resumable(resume, plan)
    except suite_lib.SuiteError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT) from exc
    done = suite_lib.finished(resume)
    for left in suite_lib.unfinished(resume):
        console.print(f"left as it was (the run stopped before its summary): {left}")
    console.print(f"resuming {resume}: {len(done)} of {len(plan.runs)} runs done")
    return done


@click.command()
@click.argument("suite_or_file")
@inventory_option
@click.option("--quick", is_flag=True, help=f"Shorten every run to at most {runner_lib.QUICK_SECONDS:.0f} s of load.")
@click.option("--seed", type=int, default=None,
              help="Seed of random fault targets (recorded either way); trial N of a run uses SEED+N-1.")
@click.option("--trials", type=click.IntRange(1, scenario_lib.MAX_TRIALS), default=None,
              help="Repeat every run (every sweep point) this many times, each on a fresh topic; "
                   "overrides the scenarios' own `trials`.")
@click.option("--results", type=click.Path(path_type=Path), default=RESULTS, show_default=True,
              help="Directory that receives a directory per invocation, holding one directory per run.")
@click.option("--no-ledger", is_flag=True, help="Do not write the per-message ledger (for overhead measurements).")
@click.option("--no-report", is_flag=True, help="Do not analyse the runs with Spark at the end.")
@click.option("--keep-topics", is_flag=True, help="Keep each run's topic on the cluster (default: deleted once its "
                                                  "ledgers are read back: topics left behind slow later runs).")
@click.option("--client-config", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="librdkafka client settings (bootstrap.servers, security.protocol, ssl.*, sasl.*) every client "
                   "uses, for a cluster whose settings this project did not write; default: the inventory's for "
                   "each scenario's client.security.")
@click.option("--bootstrap", metavar="HOST:PORT[,...]", default=None,
              help="Run against any reachable cluster by its bootstrap address, deploying nothing: load, ledger, "
                   "timeline and report, without faults or procedures (those need --inventory naming the hosts). "
                   "Its security settings: --client-config.")
@click.option("--resume", type=click.Path(path_type=Path, file_okay=False, exists=True), default=None,
              metavar="DIR", help="Finish a suite that was stopped: make only the runs DIR (the directory it was "
                                  "writing) has no summary of, with the same suite and options, and report them all.")
@click.option("--dry-run", is_flag=True, help="Validate every file against the inventory and list the runs it would "
                                              "make (points it cannot run, with the reason), then stop: nothing is "
                                              "started, connected to or written.")
@click.pass_context
def run(ctx: click.Context, suite_or_file: str, inventory_path: Path, quick: bool, seed: int | None,
        trials: int | None, results: Path, no_ledger: bool, no_report: bool, keep_topics: bool, client_config: Path | None,
        bootstrap: str | None, resume: Path | None, dry_run: bool) -> None:
    """Run a built-in suite (seeds, durability, evidence, kraft, lab, operations, security-cost) or a
    scenario file: load, faults, ledger, timeline for every run of its sweep; then a summary per
    run, and the analysis of them all (report.html, summary.csv) in the directory of this
    invocation. Every file is validated before the first run starts. A run whose step fails is
    reported invalid with the reason, and the suite goes on (exit 8 at the end)."""
    if bootstrap is not None:
        inv = _given_cluster(ctx, bootstrap, client_config)
        inventory_path = inv.path
    else:
        inv = load_inventory_or_exit(inventory_path)
    if client_config is not None and bootstrap is None:
        inv = dataclasses.replace(inv, client_config=client_config)
    runs = _read_runs(suite_or_file, inv, inventory_path)
    if dry_run:
        stdout.print(plan_table(runs, trials, quick))
        return
    points = [(r, r.scenario if trials is None else r.scenario.model_copy(update={"trials": trials}))
              for r in runs if r.scenario is not None]
    scenarios = [scenario for _, scenario in points]
    conns = _connections(inv, scenarios)
    if any(s.client.producer_library == "java" for s in scenarios):
        _install_java_producer(ctx, inventory_path)
    todo = [(point, scenario, trial) for point, scenario in points for trial in range(1, scenario.trials + 1)]
    plan = records.SuitePlan(suite=suite_or_file, inventory=str(inventory_path), quick=quick, seed=seed, trials=trials,
                             ledger=not no_ledger, runs=[records.PlannedRun(number=n, scenario=sc.name, trial=trial,
                                                                            trials=sc.trials)
                                                         for n, (_, sc, trial) in enumerate(todo, 1)])
    done = _resumed(resume, plan) if resume is not None else {}
    skipped = [r for r in runs if not r.scenario]
    for r in skipped:
        console.print(f"skipping sweep point {r.point}: {r.skipped}" if r.point else f"skipping {r.skipped}")
    sweep_dir = resume or results / f"{time.strftime('%Y%m%dT%H%M%S')}-{Path(suite_or_file).stem}"
    suite_lib.write_plan(sweep_dir, plan)
    ended = dict(done)  # by scenario and trial: the runs of the suite that have a summary
    with Live(console=console, refresh_per_second=4, transient=not console.is_terminal) as live:
        for number, (point, scenario, trial) in enumerate(todo, 1):
            if suite_lib.key(scenario.name, trial) in ended:
                continue
            label = f"[{number}/{len(todo)}] {scenario.name}" + (f" trial {trial}/{scenario.trials}"
                                                                 if scenario.trials > 1 else "")
            shown = ProgressLines(console.is_terminal, live.update, console.print)

            def show(snap: Snapshot, label: str = label, shown: ProgressLines = shown) -> None:
                shown(_progress_line(snap, label), snap.phase)

            trial_seed = None if seed is None else seed + trial - 1  # each trial its own random targets
            summary = runner_lib.execute(scenario, inv, inventory_path, playbook_runner(ctx), sweep_dir, quick=quick,
                                         ledger_enabled=not no_ledger, seed=trial_seed, progress=show, trial=trial,
                                         conn=conns[scenario.client.security], sweep=point.sweep(),
                                         keep_topic=keep_topics)
            ended[suite_lib.key(scenario.name, trial)] = summary
            console.print(f"{label}: done, {summary.run_dir}" if summary.valid else
                          f"{label}: [red]INVALID[/] ({'; '.join(summary.invalid_reasons)}), {summary.run_dir}")
    summaries = [ended[key] for key in (suite_lib.key(sc.name, trial) for _, sc, trial in todo) if key in ended]
    stdout.print(summary_table(summaries, skipped))
    (results / "last-run.json").write_text(json.dumps([s.to_dict() for s in summaries], indent=2))
    if summaries and not no_report and not no_ledger:
        report = analyse_and_report(str(sweep_dir))
        if any(t.figures.blind for t in report.data.trials):
            raise click.exceptions.Exit(ExitCode.BLIND)
    if any(not s.valid for s in summaries):
        raise click.exceptions.Exit(ExitCode.INVALID_RUNS)
