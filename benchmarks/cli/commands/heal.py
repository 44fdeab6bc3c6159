"""`kafka-bench heal`: revert every journaled fault and start what is down."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from benchmarks.cli.commands.cluster import inventory_option, load_inventory_or_exit, playbook_runner
from benchmarks.cli.console import PlaybookProgress, console
from benchmarks.core.exit_codes import ExitCode
from benchmarks.harness import faults
from benchmarks.hosts.ansible import PlaybookResult, PlaybookRunner, ProgressEvent


class _ProgressRunner:
    """Wraps a runner so every playbook heal runs shows progress."""

    def __init__(self, runner: PlaybookRunner) -> None:
        self.runner = runner

    def run(self, playbook: str, inventory: Path, extravars: Mapping[str, Any] | None = None, limit: str | None = None,
            check: bool = False, progress: Callable[[ProgressEvent], None] | None = None) -> PlaybookResult:
        with PlaybookProgress(f"{playbook} {limit or ''}".strip()) as shown:
            return self.runner.run(playbook, inventory, extravars=extravars, limit=limit, check=check, progress=shown)


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
