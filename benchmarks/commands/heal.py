"""`kafka-bench heal`: revert every journaled fault and start what is down."""

from __future__ import annotations

from pathlib import Path

import click

from benchmarks import faults
from benchmarks.commands.cluster import load_inventory_or_exit, playbook_runner, inventory_option
from benchmarks.console import PlaybookProgress, console
from benchmarks.exit_codes import ExitCode


class _ProgressRunner:
    """Wraps a runner so every playbook heal runs shows progress."""

    def __init__(self, runner) -> None:
        self.runner = runner

    def run(self, playbook, inventory, **kwargs):
        with PlaybookProgress(f"{playbook} {kwargs.get('limit') or ''}".strip()) as progress:
            return self.runner.run(playbook, inventory, progress=progress, **{k: v for k, v in kwargs.items() if k != "progress"})


@click.command()
@inventory_option
@click.pass_context
def heal(ctx: click.Context, inventory_path: Path) -> None:
    """Revert every fault in the journal that was not healed (also those of a runner that was
    killed), then start every service that is down. Safe to run any time; twice changes nothing."""
    load_inventory_or_exit(inventory_path)
    try:
        report = faults.heal(_ProgressRunner(playbook_runner(ctx)), inventory_path)
    except faults.FaultError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.PLAYBOOK_FAILED) from exc
    if report.reverted:
        for record in report.reverted:
            console.print(f"reverted {record.kind} on {', '.join(record.hosts)} ({record.reason})")
    else:
        console.print("no fault to revert in the journal")
    changed = report.start.count("changed") if report.start else 0
    console.print(f"start.yml: {changed} change(s); every service is up")
