"""The `kafka-bench` command line: a thin layer over the library modules."""

from __future__ import annotations

import sys

import click

from benchmarks import __version__
from benchmarks.cli.commands import cluster as cluster_commands
from benchmarks.cli.commands import compare as compare_commands
from benchmarks.cli.commands import heal as heal_commands
from benchmarks.cli.commands import lab as lab_commands
from benchmarks.cli.commands import report as report_commands
from benchmarks.cli.commands import run as run_commands
from benchmarks.core.exit_codes import ExitCode
from benchmarks.spec.fault_targets import FaultError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kafka-bench")
def cli() -> None:
    """Measure what Kafka durability settings cost, and what they save when nodes die."""


cli.add_command(cluster_commands.cluster)
cli.add_command(heal_commands.heal)
cli.add_command(lab_commands.lab)
cli.add_command(run_commands.run)
cli.add_command(report_commands.report)
cli.add_command(compare_commands.compare)


def main() -> None:
    try:
        # With standalone_mode=False click returns the code of a click.exceptions.Exit.
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitCode.USAGE if isinstance(exc, click.UsageError) else exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(ExitCode.INTERRUPTED)
    except FaultError as exc:  # a fault or its heal failed outside a run's schedule (a Ctrl-C while healing, ...)
        interrupted = isinstance(exc.__context__, KeyboardInterrupt)
        click.echo(f"{'interrupted, then ' if interrupted else ''}error: {exc}\n"
                   "faults the journal still holds are healed by: kafka-bench heal --inventory INVENTORY", err=True)
        sys.exit(ExitCode.INTERRUPTED if interrupted else ExitCode.FAILURE)
    sys.exit(code if isinstance(code, int) else ExitCode.OK)
