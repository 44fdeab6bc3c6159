"""`kafka-bench report RUN_OR_SWEEP_DIR`: analyse the ledgers with Spark and write the report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from benchmarks.analysis.contract import GAP_THRESHOLD_S, InputError, SchemaError
from benchmarks.analysis.session import parse_conf
from benchmarks.cli.console import console, stdout
from benchmarks.core.exit_codes import ExitCode

if TYPE_CHECKING:  # PySpark is loaded when a report is built, not by every command of the CLI
    from benchmarks.report import outputs


def _count(value: int | None) -> str:
    """A count, or "-" where it is not known (a run that could not be checked)."""
    return "-" if value is None else f"{value:,}"


def terminal_table(report: outputs.Report) -> Table:
    table = Table(title="Analysis", title_justify="left")
    for col in ("scenario", "acks", "RF", "min ISR", "fault", "sent", "acked", "lost", "unseen", "dup.", "acked/s",
                "p99 ms", "no-ack s", "verdict"):
        table.add_column(col, justify="left" if col in ("scenario", "fault", "verdict") else "right",
                         overflow="fold", max_width=60 if col == "verdict" else None)
    style = {"bad": "red", "warn": "yellow", "good": "green"}
    for run in report.data.runs:
        s = run.summary
        p99 = "-" if s.latency_p99_ms is None else f"{s.latency_p99_ms:,.1f}"
        table.add_row(s.scenario, s.acks, str(s.replication_factor), str(s.min_insync_replicas), s.fault,
                      f"{s.sent:,}", f"{s.acked:,}", f"[red]{s.lost:,}[/]" if s.lost else _count(s.lost),
                      _count(s.unseen), _count(s.duplicates), f"{s.throughput_msgs_s or 0:,.0f}", p99,
                      f"{s.unavailable_s or 0:.1f}", f"[{style[run.severity]}]{run.verdict}[/]")
    return table


def analyse_and_report(root: str, out: Path | None = None, master: str = "local[*]", conf: dict[str, str] | None = None,
                       gap_threshold_s: float = GAP_THRESHOLD_S) -> outputs.Report:
    """Build the report, print the table and where the files are; errors exit with INVALID_INPUT."""
    from benchmarks.report import outputs

    started = time.monotonic()
    console.print(f"analysing {root} with Spark ({master}) ...")
    try:
        report = outputs.build(root, out, master, conf, gap_threshold_s)
    except (InputError, SchemaError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT) from exc
    stdout.print(terminal_table(report))
    console.print(f"analysed {len(report.data.runs)} run(s) in {time.monotonic() - started:.0f} s")
    stdout.print(f"report: {report.html}")
    stdout.print(f"summary: {report.csv} (and {report.parquet.name})")
    if report.lost:
        stdout.print(f"lost messages: {report.lost}")
    if report.data.missing:
        console.print(f"[yellow]incomplete suite:[/] {len(report.data.missing)} planned run(s) never ended: "
                      f"{', '.join(report.data.missing)}; finish it with: kafka-bench run SUITE --resume {root}")
    for blind in (t for t in report.data.trials if t.figures.blind):
        console.print(f"[red]HARNESS BLIND:[/] {blind.figures.scenario}: {blind.verdict}")
    return report


@click.command()
@click.argument("run_or_sweep_dir")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for report.html and summary.csv/parquet (default: the analysed directory).")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--conf", "conf_pairs", multiple=True, metavar="KEY=VALUE", help="Spark configuration, repeatable.")
@click.option("--gap-threshold", type=click.FloatRange(min=0.1), default=GAP_THRESHOLD_S, show_default=True,
              help="Seconds without an ack to a partition that count as unavailability.")
def report(run_or_sweep_dir: str, out: Path | None, master: str, conf_pairs: tuple[str, ...], gap_threshold: float) -> None:
    """Analyse a run directory, or a directory of runs (what `kafka-bench run` writes), and
    write report.html, summary.csv and summary.parquet. RUN_OR_SWEEP_DIR may be any path
    Spark reads (local, hdfs://, s3a://); give --out for a remote one."""
    try:
        conf = parse_conf(conf_pairs)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--conf") from exc
    built = analyse_and_report(run_or_sweep_dir, out, master, conf, gap_threshold)
    if any(t.figures.blind for t in built.data.trials):
        raise click.exceptions.Exit(ExitCode.BLIND)
